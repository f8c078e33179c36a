package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

const (
	alicePasswd = "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/bash\n"
	aliceGroup  = "root:x:0:\nalice:x:1000:\n"
	aliceConfig = `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"alice","shell":"/bin/bash"}]}}`
)

// accountsDaemon is a daemon on a root whose account files declare alice
// (in passwd, or in /usr/lib's with altfiles), her shell as declared, its
// events from src (nil: a fakeSource); loaded and checked once.
func accountsDaemon(t *testing.T, passwd string, src eventSource) (*Daemon, *records) {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, passwd), []byte(alicePasswd))
	writeFile(t, filepath.Join(root, "etc/group"), []byte(aliceGroup))
	if passwd != "etc/passwd" {
		writeFile(t, filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"))
	}
	cfg := filepath.Join(root, "c.ign")
	writeFile(t, cfg, []byte(aliceConfig))
	if src == nil {
		src = newFakeSource()
	}
	log := &records{}
	d, err := newDaemon(Options{Root: root, Configs: []string{cfg}, Log: slog.New(log)}, func(*ondisk.Root) (eventSource, error) { return src, nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.fullCheck(context.Background(), "first check")
	d.ready = true
	if got := d.status(); !strings.HasPrefix(got, "No drift: watching 1 path, 0 units") {
		t.Fatalf("status after the first check: %q", got)
	}
	return d, log
}

// TestAccountLockHonouredThenStale: a lock on the account files as
// shadow-utils writes it (vipw's "138\0": read as garbage, it was ignored,
// and an edit reported half-way) keeps the user and group entries unknown:
// the state is checking and the status line names the lock, never clean
// (a live pid such as 1 kept a real change unreported, the status clean,
// for ever); once the lock is stale (or its writer gone), the next re-check
// reports the change.
func TestAccountLockHonouredThenStale(t *testing.T) {
	ctx := context.Background()
	d, log := accountsDaemon(t, "etc/passwd", nil)
	root := d.o.Root
	lock := filepath.Join(root, "etc/passwd.lock")
	writeFile(t, lock, []byte(strconv.Itoa(os.Getpid())+"\x00"))
	writeFile(t, filepath.Join(root, "etc/passwd"), []byte(strings.Replace(alicePasswd, "/bin/bash", "/bin/sh", 1)))
	d.checkEntries(ctx, d.accountEntries())
	if got := log.find(journal.RecordDriftDetected, "/etc/passwd"); len(got) != 0 {
		t.Errorf("reported while the lock is held: %v", got)
	}
	want := "Checking: watching 1 path, 0 units; users and groups wait for their writer's lock /etc/passwd.lock (PID " + strconv.Itoa(os.Getpid()) + ")"
	if got := d.status(); got != want {
		t.Errorf("status while locked:\nwant %q\ngot  %q", want, got)
	}
	if got := d.snapshotState(); got != dbusapi.StateChecking {
		t.Errorf("state while locked: %q, want checking", got)
	}
	if d.acct.C() == nil {
		t.Error("nothing re-checks the accounts while the lock is held")
	}
	d.fullCheck(ctx, "periodic check")
	if got := d.status(); got != want {
		t.Errorf("status after a full check while locked:\nwant %q\ngot  %q", want, got)
	}

	old := time.Now().Add(-2 * ondisk.StaleAccountLock)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	d.recheckAccounts(ctx) // the poll's tick
	log.wait(t, 0, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/passwd", "DRIFT_KIND": "shell"})
	if got, want := d.status(), "Drift: 1 path differs (user alice: shell)"; got != want {
		t.Errorf("status once the lock is stale:\nwant %q\ngot  %q", want, got)
	}
	if d.acct.C() != nil {
		t.Error("the accounts are still re-checked with no lock held")
	}
}

// TestAccountFileReadWhenClosed: an account file rewritten in place (cat
// passwd.copy >/etc/passwd) is read when its writer closes it and it stays
// quiet a moment: its truncation and its writes check nothing (the users
// read half-way did not exist), nor does its close while it is written
// again; once quiet, the accounts are checked. A file renamed into place is
// checked at once.
func TestAccountFileReadWhenClosed(t *testing.T) {
	ctx := context.Background()
	d, log := accountsDaemon(t, "etc/passwd", nil)
	for _, c := range []struct {
		op   watch.Op
		want int
	}{
		{watch.Modify, 0}, // truncated, being written
		{watch.Modify, 0},
		{watch.Write, 0}, // closed: a moment's quiet first
		{watch.MovedTo, 1},
	} {
		is, _ := d.affectedBy([]watch.Event{{Path: "/etc/passwd", Op: c.op}})
		if len(is) != c.want {
			t.Errorf("%v on /etc/passwd: %d entries to check, want %d", c.op, len(is), c.want)
		}
	}
	// Rewritten, the same bytes, in a loop: checked once quiet.
	p := filepath.Join(d.o.Root, "etc/passwd")
	for range 3 {
		writeFile(t, p, nil)
		d.handle(ctx, []watch.Event{{Path: "/etc/passwd", Op: watch.Modify}})
		writeFile(t, p, []byte(alicePasswd))
		d.handle(ctx, []watch.Event{{Path: "/etc/passwd", Op: watch.Modify | watch.Write}})
	}
	select {
	case q := <-d.writes.settled:
		if q != "/etc/passwd" {
			t.Fatalf("settled %s, want /etc/passwd", q)
		}
		d.settle(ctx, q)
	case <-time.After(20 * time.Second):
		t.Fatal("/etc/passwd was not checked within 20s of its last write")
	}
	if got := log.find(journal.RecordDriftDetected, "/etc/passwd"); len(got) != 0 {
		t.Errorf("drift reported for rewrites of the same bytes: %v", got)
	}
	writeFile(t, p, []byte(strings.Replace(alicePasswd, "/bin/bash", "/bin/sh", 1)))
	d.handle(ctx, []watch.Event{{Path: "/etc/passwd", Op: watch.Modify | watch.Write}})
	select {
	case q := <-d.writes.settled:
		d.settle(ctx, q)
	case <-time.After(20 * time.Second):
		t.Fatal("/etc/passwd was not checked within 20s of its last write")
	}
	log.wait(t, 0, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/passwd", "DRIFT_KIND": "shell"})
}

// polledSource is a fakeSource whose directories are polled.
type polledSource struct {
	*fakeSource
	dirs []string
}

func (p polledSource) Polled() []string { return p.dirs }

// TestPollingChecksAccountsInUsrLib: a daemon polling /usr/lib (its watch
// could not be placed) checks the users and groups whose lines are there
// (nss-altfiles), though their entries' paths are /etc's.
func TestPollingChecksAccountsInUsrLib(t *testing.T) {
	d, log := accountsDaemon(t, "usr/lib/passwd", polledSource{newFakeSource(), []string{"/usr/lib"}})
	p := filepath.Join(d.o.Root, "usr/lib/passwd")
	writeFile(t, p, []byte(strings.Replace(alicePasswd, "/bin/bash", "/bin/sh", 1)))
	old := time.Now().Add(-2 * d.o.Settle)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	d.pollUnwatched(context.Background())
	log.wait(t, 0, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/usr/lib/passwd", "DRIFT_KIND": "shell"})
}
