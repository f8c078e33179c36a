package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

// cmdProfile is `drift-bench profile [-cpuprofile F] [-memprofile F] [-n N]
// -- COMMAND ARGS...`: drift-monitor's own command line (cli.Run, the code
// bin/drift-monitor runs) run N times in this process under pprof, each
// run timed on stderr. For a profile of what `drift-monitor check` does
// beside its floor: the process is the command's, but for start-up, and N
// runs give a profile enough samples. The first run may fill a cache (this
// executable's entries are its own), so -n 1 profiles a cold run.
func cmdProfile(args []string) error {
	flags := newFlagSet("profile")
	cpu := flags.String("cpuprofile", "", "write a CPU profile of the runs to this file")
	mem := flags.String("memprofile", "", "write an allocation profile of the runs to this file")
	n := flags.Int("n", 5, "runs")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() == 0 {
		return fmt.Errorf("usage: drift-bench profile [-cpuprofile F] [-memprofile F] [-n N] -- COMMAND ARGS")
	}
	if *mem != "" {
		runtime.MemProfileRate = 64 << 10
	}
	if *cpu != "" {
		out, err := os.Create(*cpu)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
	}
	for i := 0; i < *n; i++ {
		start := time.Now()
		code := cli.Run(context.Background(), flags.Args(), cli.Stdio{In: strings.NewReader(""), Out: io.Discard, Err: os.Stderr})
		fmt.Fprintf(os.Stderr, "run %d: exit %d in %s\n", i+1, code, time.Since(start).Round(time.Microsecond))
	}
	pprof.StopCPUProfile()
	if *mem != "" {
		runtime.GC() // the profile is as of the last collection
		return writeHeapProfile(*mem)
	}
	return nil
}
