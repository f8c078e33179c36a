package osstate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Commands runs a program of the live host (systemctl, journalctl) and
// returns its standard output.
type Commands func(ctx context.Context, prog string, args ...string) (string, error)

// Run is the live host's Commands.
func Run(ctx context.Context, prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, args...).Output()
	if ee := (*exec.ExitError)(nil); err != nil && errors.As(err, &ee) && len(ee.Stderr) > 0 {
		err = fmt.Errorf("%s: %w: %s", prog, err, strings.TrimSpace(string(ee.Stderr)))
	}
	return string(out), err
}

// maxFinalizationText bounds the failure's text as the machine-config
// daemon bounds its node annotation (pkg/daemon/daemon.go,
// syncFinalizationFailureAnnotation: 2000 characters).
const maxFinalizationText = 2000

// bootComplete is ostree's unit that fails, in the boot after it, when the
// finalization of a staged deployment failed.
const bootComplete = "ostree-boot-complete.service"

// FinalizationFailure returns the error of the previous boot's ostree
// finalization ("" when it did not fail).
//
// When ostree-finalize-staged.service fails at shutdown, ostree leaves
// /boot/ostree/finalize-failure.stamp; at the next boot
// ostree-boot-complete.service (ConditionPathExists= on the stamp) removes
// it and fails with "error: ostree-finalize-staged.service failed on
// previous boot: …" (ostree src/boot/ostree-boot-complete.service,
// src/libostree/ostree-sysroot-deploy.c, _ostree_sysroot_boot_complete,
// 46204655). So: systemd says whether that unit failed in this boot
// (`systemctl show`: ActiveState, and its InvocationID), and the journal
// of that invocation has ostree's error line. The invocation, not `-b 0`,
// names this boot's run: a sandbox with its own /proc (ProtectProc=,
// ProtectKernelTunables=) can read another boot ID than the journal's
// inside a container.
//
// Where the unit does not exist (ostree before 2022.3), the
// machine-config daemon's own query is asked (rpmostree-client-go
// QueryPreviousDeploymentError, vendored in the MCO at 7ff337a4): the
// previous boot's journal of ostree-finalize-staged.service. Either way
// the first line that starts with "error:" is the failure, as its
// parseDeploymentError takes it. A command that fails is an error.
func FinalizationFailure(ctx context.Context, run Commands) (string, error) {
	out, err := run(ctx, "systemctl", "show", "--property=LoadState,ActiveState,InvocationID", "--", bootComplete)
	if err != nil {
		return "", err
	}
	props := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			props[k] = v
		}
	}
	switch {
	case props["LoadState"] == "not-found":
		out, err := run(ctx, "journalctl", "-b", "-1", "-o", "cat", "_UID=0", "-u", "ostree-finalize-staged.service", "--no-pager")
		if err != nil {
			// A host without the previous boot's journal (a volatile one)
			// cannot say.
			return "", err
		}
		return errorLine(out), nil
	case props["ActiveState"] != "failed":
		return "", nil
	case props["InvocationID"] == "":
		return bootComplete + " failed", nil
	}
	out, err = run(ctx, "journalctl", "-o", "json", "--no-pager", "-n", "1000", "-u", bootComplete)
	if err != nil {
		return "", err
	}
	if line := invocationError(out, props["InvocationID"]); line != "" {
		return line, nil
	}
	return bootComplete + " failed (its journal has no error line)", nil
}

// invocationError is the first "error:" line of the unit's journal (json
// records, one a line) in the boot of the invocation id: the boot of the
// records that carry it (systemd's own, INVOCATION_ID=; the unit's,
// _SYSTEMD_INVOCATION_ID=, where journald could read it from the
// cgroup). The unit runs once a boot, so that boot's lines are this run's.
func invocationError(out, id string) string {
	type record struct {
		Message    any    `json:"MESSAGE"` // a string, or bytes that are not UTF-8
		Boot       string `json:"_BOOT_ID"`
		Invocation string `json:"INVOCATION_ID"`
		Unit       string `json:"_SYSTEMD_INVOCATION_ID"`
	}
	var recs []record
	boot := ""
	for _, l := range strings.Split(out, "\n") {
		var r record
		if json.Unmarshal([]byte(l), &r) != nil {
			continue
		}
		recs = append(recs, r)
		if r.Invocation == id || r.Unit == id {
			boot = r.Boot
		}
	}
	if boot == "" {
		return ""
	}
	for _, r := range recs {
		if msg, ok := r.Message.(string); ok && r.Boot == boot {
			if line := errorLine(msg); line != "" {
				return line
			}
		}
	}
	return ""
}

// errorLine is the first line starting with "error:", bounded.
func errorLine(out string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "error:") {
			if len(line) > maxFinalizationText {
				line = line[:maxFinalizationText]
			}
			return line
		}
	}
	return ""
}
