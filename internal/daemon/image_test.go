package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/metrics"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// imageRoot is a root booted through ostree whose /etc is its /usr/etc
// but for a declared file, with a config declaring that file.
func imageRoot(t *testing.T) (root, cfg string) {
	t.Helper()
	root = t.TempDir()
	for _, d := range []string{"usr/etc", "etc"} {
		writeFile(t, filepath.Join(root, d, "motd"), []byte("image\n"))
		writeFile(t, filepath.Join(root, d, "ssh/sshd_config"), []byte("PermitRootLogin no\n"))
	}
	writeFile(t, filepath.Join(root, "run/ostree-booted"), nil)
	writeFile(t, filepath.Join(root, "etc/declared.conf"), []byte("declared\n"))
	cfg = filepath.Join(root, "c.ign")
	writeFile(t, cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/declared.conf","mode":420,"overwrite":true,"contents":{"source":"data:,declared%0A"}}]}}`))
	must(t, os.Chmod(filepath.Join(root, "etc/declared.conf"), 0o644))
	return root, cfg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// statusOf reads the daemon's status line on its loop.
func statusOf(t *testing.T, d *Daemon) string {
	t.Helper()
	var s string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.do(ctx, func(context.Context) error { s = d.status(); return nil }); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestImageNotices: in real time, through a real inotify on the whole
// /etc, an undeclared edit is a notice record of its own (the host stays
// clean), a directory made later is watched, a change to a declared file
// is not undeclared, and putting back the image's content ends it.
func TestImageNotices(t *testing.T) {
	root, cfg := imageRoot(t)
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(log)}, n)
	log.wait(t, 0, journal.MsgImage, map[string]string{"MESSAGE": "Comparing /etc with the booted deployment's /usr/etc"})

	from := log.mark()
	writeFile(t, filepath.Join(root, "etc/ssh/sshd_config"), []byte("PermitRootLogin yes\n"))
	// A notice, whose record is of its own type: never one a consumer
	// selecting drift (DRIFT_MONITOR_RECORD=drift-detected) counts.
	log.wait(t, from, journal.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/ssh/sshd_config", "DRIFT_KIND": "undeclared", "DRIFT_UNDECLARED": "content",
		journal.FieldRecord: "undeclared"})
	if s := statusOf(t, d); !strings.HasPrefix(s, "No drift:") || !strings.Contains(s, "1 undeclared change to the image's /etc") {
		t.Errorf("status %q: want clean, with the undeclared change counted", s)
	}
	var kinds map[drift.Kind]int
	var state string
	must(t, d.do(context.Background(), func(context.Context) error {
		ms := d.metricsSnapshot()
		kinds, state = ms.Drift, ms.State
		return nil
	}))
	if kinds[drift.Undeclared] != 1 || state != "clean" {
		t.Errorf("metrics: state %s, %d undeclared; want clean, 1", state, kinds[drift.Undeclared])
	}

	// A directory made after the start is watched: a file in it is seen.
	from = log.mark()
	must(t, os.Mkdir(filepath.Join(root, "etc/sudoers.d"), 0o750))
	log.wait(t, from, journal.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/sudoers.d", "DRIFT_UNDECLARED": "added"})
	writeFile(t, filepath.Join(root, "etc/sudoers.d/admin"), []byte("admin ALL=(ALL) ALL\n"))
	log.wait(t, from, journal.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/sudoers.d/admin", "DRIFT_UNDECLARED": "added"})

	// A declared file is its own entry's: drift, never undeclared.
	from = log.mark()
	writeFile(t, filepath.Join(root, "etc/declared.conf"), []byte("changed\n"))
	log.wait(t, from, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/declared.conf"})
	if rs := log.find(journal.MsgUndeclared, "/etc/declared.conf"); len(rs) > 0 {
		t.Errorf("a declared file reported undeclared: %v", rs)
	}

	// Back to the image's content: gone, once.
	from = log.mark()
	writeFile(t, filepath.Join(root, "etc/ssh/sshd_config"), []byte("PermitRootLogin no\n"))
	log.wait(t, from, journal.MsgUndeclaredGone, map[string]string{"DRIFT_PATH": "/etc/ssh/sshd_config"})
	if rs := log.find(journal.MsgUndeclared, "/etc/ssh/sshd_config"); len(rs) != 1 {
		t.Errorf("sshd_config reported %d times, want once", len(rs))
	}
}

// TestImageDrift: with --image=drift an undeclared change is drift: the
// drift records, the status line, and gone again when put back.
func TestImageDrift(t *testing.T) {
	root, cfg := imageRoot(t)
	writeFile(t, filepath.Join(root, "etc/motd"), []byte("edited before the start\n"))
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(log), Image: image.ModeDrift}, n)
	// The drift record of the undeclared kind (its row of model.Kinds).
	log.wait(t, 0, journal.DriftDetected(model.KindUndeclared), map[string]string{"DRIFT_PATH": "/etc/motd", "DRIFT_KIND": "undeclared",
		journal.FieldRecord: journal.RecordDriftDetected})
	if s := statusOf(t, d); !strings.HasPrefix(s, "Drift: 1 path differs (/etc/motd: undeclared)") {
		t.Errorf("status %q", s)
	}
	from := log.mark()
	writeFile(t, filepath.Join(root, "etc/motd"), []byte("image\n"))
	log.wait(t, from, journal.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/motd", "DRIFT_KIND": "undeclared"})
	if s := statusOf(t, d); !strings.HasPrefix(s, "No drift:") {
		t.Errorf("status %q after the repair", s)
	}
}

// TestImageSeries: while the daemon compares /etc with the image, the
// undeclared kind has its series of drift_monitor_drift_entries, 0 when
// nothing differs; with --image=off, none.
func TestImageSeries(t *testing.T) {
	for _, c := range []struct {
		mode image.Mode
		want bool
	}{{image.ModeNotice, true}, {image.ModeDrift, true}, {image.ModeOff, false}} {
		t.Run(string(c.mode), func(t *testing.T) {
			root, cfg := imageRoot(t)
			n := &fakeNotifier{ready: make(chan struct{}, 1)}
			d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(&records{}), Image: c.mode}, n)
			var series []drift.Kind
			var undeclared int
			must(t, d.do(context.Background(), func(context.Context) error {
				ms := d.metricsSnapshot()
				series, undeclared = metrics.Series(ms.Declared, ms.Drift), ms.Drift[drift.Undeclared]
				return nil
			}))
			if got := slices.Contains(series, drift.Undeclared); got != c.want || undeclared != 0 {
				t.Errorf("series of kind undeclared: %v (count %d), want %v (count 0); series %v", got, undeclared, c.want, series)
			}
		})
	}
}

// TestImageHeldByTransaction: while the sysroot's lock is held (an ostree
// or rpm-ostree transaction), undeclared changes are held, and compared
// once the lock is free.
func TestImageHeldByTransaction(t *testing.T) {
	root, cfg := imageRoot(t)
	writeFile(t, filepath.Join(root, "ostree/lock"), nil)
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(log)}, n)
	lock, err := os.OpenFile(filepath.Join(root, "ostree/lock"), os.O_RDWR, 0)
	must(t, err)
	defer lock.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	must(t, unix.FcntlFlock(lock.Fd(), unix.F_OFD_SETLK, &lk))

	from := log.mark()
	writeFile(t, filepath.Join(root, "etc/motd"), []byte("half-way through an update\n"))
	log.wait(t, from, journal.MsgImage, map[string]string{"MESSAGE": "Holding undeclared changes while an ostree transaction (/ostree/lock is locked) runs"})
	if s := statusOf(t, d); !strings.Contains(s, "undeclared changes held while an ostree transaction") {
		t.Errorf("status %q", s)
	}
	if rs := log.find(journal.MsgUndeclared, "/etc/motd"); len(rs) > 0 {
		t.Fatalf("reported while the transaction runs: %v", rs)
	}
	lk.Type = unix.F_UNLCK
	must(t, unix.FcntlFlock(lock.Fd(), unix.F_OFD_SETLK, &lk))
	log.wait(t, from, journal.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/motd"})
}

// TestImageStagedDeployment: a deployment staged for the next boot (the
// file that names it appearing, its directory made first) runs a full
// check at once, which predicts the staged /etc merge's losses.
func TestImageStagedDeployment(t *testing.T) {
	root, cfg := imageRoot(t)
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(log)}, n)
	from := log.mark()
	writeFile(t, filepath.Join(root, "run/ostree/staged-deployment"), []byte("not a deployment"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		found := false
		log.mu.Lock()
		for _, m := range log.got[from:] {
			if strings.HasPrefix(m["MESSAGE"], "full check (a deployment was staged)") {
				found = true
			}
		}
		log.mu.Unlock()
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no full check within 20s of a staged deployment")
		}
		time.Sleep(10 * time.Millisecond) // a poll interval inside a bounded wait
	}
}

// waitStatusOf waits (bounded) until the status line satisfies ok.
func waitStatusOf(t *testing.T, d *Daemon, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := statusOf(t, d)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %q: not %s within 20s", s, what)
		}
		time.Sleep(10 * time.Millisecond) // a poll interval inside a bounded wait
	}
}

// undeclaredMetric is what the metrics count of the undeclared kind.
func undeclaredMetric(t *testing.T, d *Daemon) int {
	t.Helper()
	var n int
	must(t, d.do(context.Background(), func(context.Context) error {
		n = d.metricsSnapshot().Drift[drift.Undeclared]
		return nil
	}))
	return n
}

// TestImageFollowsFirstBootRecord: drift-monitor-adopt-image.service runs
// after multi-user.target, once the daemon is up: the record it writes is
// followed, so that the first boot's leftovers stop being undeclared in
// the status line and the metrics (as check says) without a reload, and a
// later edit of a recorded path is undeclared again.
func TestImageFollowsFirstBootRecord(t *testing.T) {
	root, cfg := imageRoot(t)
	writeFile(t, filepath.Join(root, "etc/hostname"), []byte("node-1\n"))
	writeFile(t, filepath.Join(root, "etc/motd"), []byte("first boot\n"))
	keyBytes := []byte("0123456789abcdef0123456789abcdef")
	key := model.NewKey(keyBytes)
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(log), DigestKey: key,
		FirstBoot: firstboot.Use{Key: keyBytes}}, n)
	waitStatusOf(t, d, "counting the first boot's 2 changes", func(s string) bool { return strings.Contains(s, "2 undeclared changes to the image's /etc") })

	from := log.mark()
	r, err := ondisk.OpenRoot(root)
	must(t, err)
	defer r.Close()
	b, err := image.Find(context.Background(), r)
	must(t, err)
	defer b.Close()
	// hostname, motd, and declared.conf (the config's, Ignition's at the
	// first boot: recorded, though a declared path is classed declared).
	if added, err := image.RecordNow(context.Background(), r, b, &image.Recorder{Root: r, Key: key}, image.RecordPath); err != nil || added != 3 {
		t.Fatalf("RecordNow = %d, %v; want 3 paths", added, err)
	}
	log.wait(t, from, journal.MsgUndeclaredGone, map[string]string{"DRIFT_PATH": "/etc/hostname"})
	log.wait(t, from, journal.MsgUndeclaredGone, map[string]string{"DRIFT_PATH": "/etc/motd"})
	if s := statusOf(t, d); s != "No drift: watching 1 path, 0 units" {
		t.Errorf("status %q after the record, want no undeclared change", s)
	}
	if got := undeclaredMetric(t, d); got != 0 {
		t.Errorf("metrics count %d undeclared, want 0", got)
	}
	from = log.mark()
	writeFile(t, filepath.Join(root, "etc/motd"), []byte("edited later\n"))
	log.wait(t, from, journal.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/motd"})
}

// TestImageUnavailableSaid: an image host whose baseline cannot be read
// (an ostree host without /usr/etc here; bootc's composefs backend
// without CAP_SYS_ADMIN on a real one) is said as a not-checked notice and
// in the status line: the image's /etc is never clean for lack of a look.
func TestImageUnavailableSaid(t *testing.T) {
	root, cfg := imageRoot(t)
	must(t, os.RemoveAll(filepath.Join(root, "usr/etc")))
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(log)}, n)
	log.wait(t, 0, journal.MsgNotice, map[string]string{"DRIFT_PATH": "/etc", "DRIFT_KIND": "not-checked", "DRIFT_ENTRY": "undeclared"})
	if s := statusOf(t, d); !strings.Contains(s, "the image's /etc not compared") {
		t.Errorf("status %q does not say the image's /etc is not compared", s)
	}
}

// TestImageSettingsFile: the mode is the settings file's, which check and
// reconcile read too: drift there makes the daemon's undeclared changes
// drift without a flag, and a change of the file is followed.
func TestImageSettingsFile(t *testing.T) {
	root, cfg := imageRoot(t)
	writeFile(t, filepath.Join(root, "etc/motd"), []byte("edited\n"))
	writeFile(t, filepath.Join(root, "etc/drift-monitor/image.conf"), []byte("mode = drift\n"))
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(log)}, n)
	if s := statusOf(t, d); !strings.HasPrefix(s, "Drift: 1 path differs (/etc/motd: undeclared)") {
		t.Errorf("status %q, want the undeclared change as drift", s)
	}
	from := log.mark()
	writeFile(t, filepath.Join(root, "etc/drift-monitor/image.conf"), []byte("mode = notice\n"))
	log.wait(t, from, journal.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/motd", "DRIFT_KIND": "undeclared"})
	log.wait(t, from, journal.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/motd"})
	waitStatusOf(t, d, "clean with a notice", func(s string) bool {
		return s == "No drift: watching 1 path, 0 units; 1 undeclared change to the image's /etc"
	})
}
