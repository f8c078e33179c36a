package inhibit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

func requireRoot(t *testing.T) {
	t.Helper()
	harness.RequireRoot(t, "the inhibitor tests (lock files are root's)")
}

func newMonitor(t *testing.T) (string, *Monitor) {
	t.Helper()
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "inhibit.d")
	m, err := Watch(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return dir, m
}

// next waits (bounded) for the next change and returns the held whos.
func next(t *testing.T, m *Monitor, within time.Duration) []string {
	t.Helper()
	select {
	case held := <-m.Changes():
		whos := []string{}
		for _, h := range held {
			whos = append(whos, h.Who)
		}
		return whos
	case <-time.After(within):
		t.Fatalf("no change in the held inhibitors within %s (held: %v)", within, m.Held())
		return nil
	}
}

func TestTakeAndRelease(t *testing.T) {
	dir, m := newMonitor(t)
	l, err := Take(dir, "my-updater", "applying config v42", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"my-updater"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("held after Take (-want +got):\n%s", diff)
	}
	h := m.Held()[0]
	if h.Why != "applying config v42" || h.PID != os.Getpid() {
		t.Errorf("held = %+v, want why and pid from the file", h)
	}
	if got, want := h.String(), "my-updater (pid "+strconv.Itoa(os.Getpid())+"): applying config v42"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	l2, err := Take(dir, "second", "also", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"my-updater", "second"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("two holders (-want +got):\n%s", diff)
	}
	l.Release()
	if diff := cmp.Diff([]string{"second"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("after one release (-want +got):\n%s", diff)
	}
	l2.Release()
	if diff := cmp.Diff([]string{}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("after both releases (-want +got):\n%s", diff)
	}
}

// One process taking two inhibitors under one who (a D-Bus client with two
// operations under way) holds two: releasing one leaves the other held, and
// a name whose inhibitor was released is reused.
func TestTakeTwiceUnderOneName(t *testing.T) {
	dir, m := newMonitor(t)
	pid := os.Getpid()
	a, err := Take(dir, "agent", "first", pid)
	if err != nil {
		t.Fatal(err)
	}
	next(t, m, 5*time.Second)
	b, err := Take(dir, "agent", "second", pid)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() == b.Path() {
		t.Fatalf("both inhibitors are %s", a.Path())
	}
	if diff := cmp.Diff([]string{"agent", "agent"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("held after two Takes (-want +got):\n%s", diff)
	}
	// Released the D-Bus way: the descriptor closes, the file stays.
	a.CloseKeepingFile()
	if diff := cmp.Diff([]string{"agent"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("after closing the first (-want +got):\n%s", diff)
	}
	if h := m.Held(); len(h) != 1 || h[0].Why != "second" {
		t.Fatalf("held = %+v, want the second", h)
	}
	c, err := Take(dir, "agent", "third", pid)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if c.Path() != a.Path() {
		t.Errorf("third inhibitor at %s, want the released name %s reused", c.Path(), a.Path())
	}
	if diff := cmp.Diff([]string{"agent", "agent"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("held after the third Take (-want +got):\n%s", diff)
	}
	b.Release()
	if diff := cmp.Diff([]string{"agent"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("after releasing the second (-want +got):\n%s", diff)
	}
	if h := m.Held(); len(h) != 1 || h[0].Why != "third" {
		t.Fatalf("held = %+v, want the third", h)
	}
}

// The shell protocol from the package documentation, and a holder killed
// with SIGKILL releasing its inhibitor within a second.
func TestShellProtocolAndSIGKILL(t *testing.T) {
	dir, m := newMonitor(t)
	cmd := exec.Command("sh", "-c", `exec 9>"$1/shell-updater.lock"; flock 9; printf 'who=shell-updater why=from a shell pid=%d\n' $$ >&9; exec sleep 60`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The holder locks the file before it writes who, why and pid: the
	// monitor may announce it first by its file name alone, then again
	// once the line is there. Wait for the line.
	deadline := time.After(5 * time.Second)
	for {
		var held []Inhibitor
		select {
		case held = <-m.Changes():
		case <-deadline:
			t.Fatalf("held = %+v, want shell-updater with why and pid %d from the file", m.Held(), cmd.Process.Pid)
		}
		if len(held) != 1 || held[0].Who != "shell-updater" {
			t.Fatalf("held = %+v, want shell-updater alone", held)
		}
		if held[0].Why == "from a shell" && held[0].PID == cmd.Process.Pid {
			break
		}
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	if diff := cmp.Diff([]string{}, next(t, m, time.Second)); diff != "" {
		t.Fatalf("after SIGKILL (-want +got):\n%s", diff)
	}
	cmd.Wait()
	t.Logf("released %s after SIGKILL", time.Since(start))
}

func TestFilesNotOwnedByRootAreIgnored(t *testing.T) {
	dir, m := newMonitor(t)
	p := filepath.Join(dir, "nobody.lock")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Chown(p, 65534, 65534)
	syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
	f.WriteString("who=nobody\n")
	// A root holder after it: the first change must name only root's.
	l, err := Take(dir, "root-holder", "", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if diff := cmp.Diff([]string{"root-holder"}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("held (-want +got):\n%s", diff)
	}
}

func TestEnsureDirRefusesAWritableDirectory(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "inhibit.d")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	if err := EnsureDir(dir); err == nil {
		t.Fatal("EnsureDir accepted a world-writable directory")
	}
}

func TestParse(t *testing.T) {
	cases := map[string]Inhibitor{
		"who=a\nwhy=b c\npid=12\n":           {Who: "a", Why: "b c", PID: 12, File: "/d/x.lock"},
		"who=shell why=from a shell pid=7\n": {Who: "shell", Why: "from a shell", PID: 7, File: "/d/x.lock"},
		"":                                   {Who: "x", File: "/d/x.lock"},
	}
	for content, want := range cases {
		if diff := cmp.Diff(want, parse("/d/x.lock", []byte(content))); diff != "" {
			t.Errorf("parse(%q) (-want +got):\n%s", content, diff)
		}
	}
}

// nextStatus waits (bounded) for the next DirStatus.
func nextStatus(t *testing.T, m *Monitor, within time.Duration) DirStatus {
	t.Helper()
	select {
	case st := <-m.DirStatus():
		return st
	case <-time.After(within):
		t.Fatalf("no change in how the directory is followed within %s", within)
		return DirStatus{}
	}
}

// holdFromShell runs the shell protocol's holder in dir (who sh-holder)
// and waits until the monitor names it with its pid.
func holdFromShell(t *testing.T, m *Monitor, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec 9>"$1/sh-holder.lock"; flock 9; printf 'who=sh-holder why=test pid=%d\n' $$ >&9; exec sleep 60`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.After(5 * time.Second)
	for {
		select {
		case held := <-m.Changes():
			if len(held) == 1 && held[0].Who == "sh-holder" && held[0].PID == cmd.Process.Pid {
				return cmd
			}
		case <-deadline:
			t.Fatalf("held = %+v, want sh-holder (pid %d) from the recreated directory", m.Held(), cmd.Process.Pid)
		}
	}
}

// The directory removed (rm -rf) under the monitor and made again by the
// next holder: the new one is followed (and said to be), its lock is seen
// without anyone calling Sync, and its holder's death releases within a
// second.
func TestDirectoryRemovedAndMadeAgain(t *testing.T) {
	dir, m := newMonitor(t)
	old, err := Take(dir, "before", "", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer old.CloseKeepingFile()
	next(t, m, 5*time.Second)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{}, next(t, m, 5*time.Second)); diff != "" {
		t.Fatalf("after the directory's removal (-want +got):\n%s", diff)
	}
	if st := nextStatus(t, m, 5*time.Second); st.Err != nil || st.Replaced != 1 || (st.Why != "removed" && st.Why != "removed and made again") {
		t.Fatalf("DirStatus = %+v, want the directory followed anew once, removed", st)
	}
	cmd := holdFromShell(t, m, dir)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	if diff := cmp.Diff([]string{}, next(t, m, time.Second)); diff != "" {
		t.Fatalf("after SIGKILL (-want +got):\n%s", diff)
	}
	t.Logf("released %s after SIGKILL", time.Since(start))
}

// The directory renamed away and another made in its place before the
// monitor looks: the one with the name counts, its locks are seen, those
// of the old one no longer are.
func TestDirectoryReplaced(t *testing.T) {
	dir, m := newMonitor(t)
	l, err := Take(dir, "in-the-old-one", "", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer l.CloseKeepingFile()
	next(t, m, 5*time.Second)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	st := nextStatus(t, m, 5*time.Second)
	if st.Err != nil || st.Replaced != 1 {
		t.Fatalf("DirStatus = %+v, want the directory followed anew once", st)
	}
	if got := m.Held(); len(got) != 0 {
		t.Errorf("held %+v, want none: the old directory's lock no longer counts", got)
	}
	holdFromShell(t, m, dir)
}

// A directory that cannot be followed (a regular file has its name) is
// said to be so, tried again, and followed once it can be.
func TestDirectoryUnfollowableThenBack(t *testing.T) {
	dir, m := newMonitor(t)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	// Between the removal and the monitor's look, a file takes the name
	// (or the monitor makes the directory first: then remove it again).
	for {
		if err := os.WriteFile(dir, nil, 0o600); err == nil {
			break
		}
		os.Remove(dir)
	}
	var st DirStatus
	for deadline := time.Now().Add(10 * time.Second); st.Err == nil; {
		if time.Now().After(deadline) {
			t.Fatal("no DirStatus with an error within 10s of a file taking the directory's name")
		}
		st = nextStatus(t, m, 10*time.Second)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	// A status of the file's time may still be waiting: the next without
	// an error, within a few retries.
	for deadline := time.Now().Add(5 * Retry); st.Err != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("DirStatus = %+v after the file went, want the directory followed again", st)
		}
		st = nextStatus(t, m, 5*Retry)
	}
	holdFromShell(t, m, dir)
}
