package osstate

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"time"
)

// Journal runs journalctl with args and returns its output.
type Journal func(ctx context.Context, args ...string) (string, error)

// Journalctl is the live host's journal.
func Journalctl(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "journalctl", args...).Output()
	return string(out), err
}

// maxFinalizationText bounds the failure's text as the machine-config
// daemon bounds its node annotation (pkg/daemon/daemon.go,
// syncFinalizationFailureAnnotation: 2000 characters).
const maxFinalizationText = 2000

// FinalizationFailure returns the error of the previous boot's ostree
// finalization ("" when it did not fail), from the journal.
//
// When ostree-finalize-staged.service fails at shutdown, ostree leaves
// /boot/ostree/finalize-failure.stamp; at the next boot
// ostree-boot-complete.service (ConditionPathExists= on the stamp)
// removes it and fails with "error: ostree-finalize-staged.service failed
// on previous boot: …" (ostree src/boot/ostree-boot-complete.service,
// src/libostree/ostree-sysroot-deploy.c, _ostree_sysroot_boot_complete,
// 46204655). So this boot's journal of that unit has the line. Older
// ostree has no such unit: then the machine-config daemon's own query
// (rpmostree-client-go QueryPreviousDeploymentError, vendored in the MCO
// at 7ff337a4) is asked, the previous boot's journal of
// ostree-finalize-staged.service. Either way the first line that starts
// with "error:" is the failure, as parseDeploymentError takes it. A
// journal that cannot be read is an error.
func FinalizationFailure(ctx context.Context, j Journal) (string, error) {
	queries := [][]string{
		{"-b", "0", "-o", "cat", "_UID=0", "-u", "ostree-boot-complete.service", "--no-pager"},
		{"-b", "-1", "-o", "cat", "_UID=0", "-u", "ostree-finalize-staged.service", "--no-pager"},
	}
	var firstErr error
	answered := false
	for _, q := range queries {
		out, err := j(ctx, q...)
		if err != nil {
			// No previous boot in the journal (a volatile one) fails the
			// second query: the first one's answer stands.
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		answered = true
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "error:") {
				if len(line) > maxFinalizationText {
					line = line[:maxFinalizationText]
				}
				return line, nil
			}
		}
	}
	if answered {
		return "", nil
	}
	return "", firstErr
}
