package systemd_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestImageUndeclaredLive: the daemon under the shipped unit, on a host
// booted through ostree (/run/ostree-booted, and a /usr/etc that is the
// image's /etc), reports an undeclared edit of /etc as a notice record of
// its own, with the latency of declared drift: one shell command makes
// both changes, and both records come within the tier's record timeout;
// their delays after the change are logged side by side. Putting the
// image's content back ends the notice. The host stays clean throughout.
func TestImageUndeclaredLive(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/declared.conf","mode":420,"overwrite":true,"contents":{"source":"data:,declared%0A"}}]}}`,
		files: []file{
			{"/etc/declared.conf", "declared\n", 0o644},
			{"/etc/motd.d/10-image", "from the image\n", 0o644},
		},
		// The container's /etc, as it is now, is the image's: its
		// /usr/etc twin (the /usr overlay is the container's own).
		commands: []string{"rm -rf /usr/etc && cp -a /etc /usr/etc && touch /run/ostree-booted"},
	})
	h.waitRecord(0, harness.MsgImage, map[string]string{"MESSAGE": "Comparing /etc with the booted deployment's /usr/etc"})
	h.waitStatus("No drift: watching 1 path, 0 units")

	from := h.mark()
	out := h.MustRun(t, "sh", "-c", "date +%s%6N; echo edited >>/etc/motd.d/10-image; echo changed >/etc/declared.conf")
	changed, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("date: %q", out)
	}
	undeclared, _ := h.waitRecord(from, harness.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/motd.d/10-image", "DRIFT_KIND": "undeclared", "DRIFT_UNDECLARED": "content"})
	declared, _ := h.waitRecord(from, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/declared.conf"})
	delay := func(r harness.Record) int64 {
		us, err := strconv.ParseInt(r["__REALTIME_TIMESTAMP"], 10, 64)
		if err != nil {
			t.Fatalf("record without a time: %v", r)
		}
		return us - changed
	}
	t.Logf("after the change: the undeclared notice in %d µs, the declared drift in %d µs", delay(undeclared), delay(declared))
	if got := h.between(from, 1<<30, harness.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/declared.conf"}); len(got) > 0 {
		t.Errorf("a declared file reported as undeclared: %v", got)
	}
	h.waitStatus("Drift: 1 path differs (/etc/declared.conf: content); 1 undeclared change to the image's /etc")

	from = h.mark()
	h.MustRun(t, "sh", "-c", "echo 'from the image' >/etc/motd.d/10-image; echo declared >/etc/declared.conf")
	h.waitRecord(from, harness.MsgUndeclaredGone, map[string]string{"DRIFT_PATH": "/etc/motd.d/10-image"})
	h.waitStatus("No drift: watching 1 path, 0 units")
}
