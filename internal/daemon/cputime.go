package daemon

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the CPU time the process has used so far, user and
// system, over all its threads; zero when the kernel does not say.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
