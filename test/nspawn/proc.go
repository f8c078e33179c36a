package nspawn

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// children returns the pids of the children of pid, from
// /proc/PID/task/*/children.
func children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the task ended between Glob and ReadFile
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// isPIDNamespaceInit reports whether a /proc/PID/status text belongs to a
// process that is PID 1 in a PID namespace below ours: its NSpid line lists
// more than one pid and the innermost one is 1.
func isPIDNamespaceInit(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		return len(f) > 1 && f[len(f)-1] == "1"
	}
	return false
}

// findInit returns the container's init as seen from the host, or 0 and what
// it saw instead.
//
// systemd-nspawn forks an "outer child" that sets up the mounts and exits,
// and the container's PID 1 shows up as a second child of systemd-nspawn, so
// the first child found is not necessarily init (observed: polling the outer
// child's namespaces until it vanished): the one that is PID 1 in its own PID
// namespace is. Until it has exec'd init it still runs
// systemd-nspawn's code in a half-built mount namespace, where a host's own
// /run/systemd could still answer systemctl; hence it only counts once its
// executable is no longer systemd-nspawn's.
func findInit(nspawnPID int) (int, string) {
	kids := children(nspawnPID)
	if len(kids) == 0 {
		return 0, "systemd-nspawn has no child process yet"
	}
	self, err := os.Stat(fmt.Sprintf("/proc/%d/exe", nspawnPID))
	if err != nil {
		return 0, fmt.Sprintf("cannot stat systemd-nspawn's executable: %v", err)
	}
	for _, k := range kids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", k))
		if err != nil || !isPIDNamespaceInit(string(status)) {
			continue
		}
		exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", k))
		if err != nil {
			return 0, fmt.Sprintf("container PID 1 is host pid %d, its executable cannot be read yet: %v", k, err)
		}
		if os.SameFile(self, exe) {
			return 0, fmt.Sprintf("container PID 1 is host pid %d but has not exec'd init yet", k)
		}
		return k, ""
	}
	return 0, fmt.Sprintf("no child of systemd-nspawn (%v) is PID 1 of a PID namespace yet", kids)
}

// namespaceInits returns the children of pid that are PID 1 of a PID
// namespace, whether or not they have exec'd init yet: what to SIGKILL to
// take a whole container down.
func namespaceInits(pid int) []int {
	var inits []int
	for _, k := range children(pid) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", k))
		if err == nil && isPIDNamespaceInit(string(status)) {
			inits = append(inits, k)
		}
	}
	return inits
}
