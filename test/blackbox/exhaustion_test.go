package blackbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"golang.org/x/sys/unix"
)

// Why a user namespace: the inotify watch limit is counted per user and per
// user namespace, and a namespace's own limit
// (/proc/sys/user/max_inotify_watches inside it) binds only the processes
// in it (and those below). Running the daemon as root of a fresh user
// namespace whose limit is a handful of watches exhausts them for that
// daemon alone; the machine's fs.inotify.max_user_watches, which other
// daemons on the machine rely on, is never touched.

// fourDirs declares one file in each of four directories of /etc: with a
// limit of five watches (two go to the inhibitor directory and its parent,
// which the inhibitor monitor watches for the directory's name, two to the
// root and /etc on the way to the four), one is watched and the others can
// only be polled.
const fourDirs = `{"ignition":{"version":"3.2.0"},"storage":{"files":[
 {"path":"/etc/d1/f","mode":420,"contents":{"source":"data:,one%0A"}},
 {"path":"/etc/d2/f","mode":420,"contents":{"source":"data:,two%0A"}},
 {"path":"/etc/d3/f","mode":420,"contents":{"source":"data:,three%0A"}},
 {"path":"/etc/d4/f","mode":420,"contents":{"source":"data:,four%0A"}}]}}`

var fourDirsContent = map[string]string{"/etc/d1": "one\n", "/etc/d2": "two\n", "/etc/d3": "three\n", "/etc/d4": "four\n"}

// watchLimitScript runs as: sh -c watchLimitScript sh LIMIT COMMAND ARG...
// inside the new user namespace: it sets the namespace's limit, then becomes
// the daemon (same pid).
const watchLimitScript = `echo "$1" >/proc/sys/user/max_inotify_watches || exit 125
shift
exec "$@"`

// startDaemonWithWatchLimit is startDaemon for a daemon that runs as root of
// a user namespace of its own whose inotify watch limit is limit. It skips
// the test where user namespaces cannot be created (fails with CI=true).
func startDaemonWithWatchLimit(t *testing.T, root string, limit int, args ...string) *daemonProc {
	t.Helper()
	requireUserNamespaces(t)
	return startDaemonWith(t, root, daemonOpts{
		args:   args,
		prefix: []string{"/bin/sh", "-c", watchLimitScript, "sh", strconv.Itoa(limit)},
		attr:   userNamespace(),
	})
}

// userNamespace makes the command root of a new user namespace, mapped to
// the test's own uid and gid.
func userNamespace() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
}

// requireUserNamespaces skips the test (fails it with CI=true) unless this
// process can create a user namespace and set its inotify limit there.
func requireUserNamespaces(t *testing.T) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", watchLimitScript, "sh", "7", "cat", "/proc/sys/user/max_inotify_watches")
	cmd.SysProcAttr = userNamespace()
	out, err := cmd.CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) == "7" {
		return
	}
	harness.Unavailable(t, "cannot set an inotify watch limit in a new user namespace: %v %s", err, out)
}

// inUserNamespace runs a shell script in the user namespace of pid.
func inUserNamespace(t *testing.T, pid int, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nsenter", "--user", "-t", strconv.Itoa(pid), "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter --user -t %d sh -c %q: %v\n%s", pid, script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// inotifyWatches returns the inode of every directory pid's inotify
// instances watch, one per watch, from /proc/PID/fdinfo.
func inotifyWatches(pid int) ([]uint64, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	var inos []uint64
	for _, fd := range fds {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l != "anon_inode:inotify" {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			return nil, err
		}
		// inotify wd:1 ino:1a2b sdev:800001 mask:... (ino in hex)
		for _, line := range strings.Split(string(info), "\n") {
			if !strings.HasPrefix(line, "inotify ") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "ino:"); ok {
					ino, err := strconv.ParseUint(v, 16, 64)
					if err != nil {
						return nil, fmt.Errorf("fdinfo line %q: %w", line, err)
					}
					inos = append(inos, ino)
				}
			}
		}
	}
	return inos, nil
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// watchedDirs splits the declared directories into those the daemon holds
// an inotify watch on and the others, and returns the total number of
// watches it holds.
func watchedDirs(t *testing.T, d *daemonProc, f *fixture, dirs []string) (watched, unwatched []string, total int) {
	t.Helper()
	inos, err := inotifyWatches(d.cmd.Process.Pid)
	if err != nil {
		t.Fatalf("reading the daemon's inotify watches: %v", err)
	}
	has := map[uint64]bool{}
	for _, i := range inos {
		has[i] = true
	}
	for _, dir := range dirs {
		if has[inode(t, f.host(dir))] {
			watched = append(watched, dir)
		} else {
			unwatched = append(unwatched, dir)
		}
	}
	return watched, unwatched, len(inos)
}

func readInt(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestInotifyExhaustionFallsBackToPolling proves that a daemon that runs out
// of inotify watches says so in its status line and journal, still detects
// drift in the directories it could not watch (by polling every
// --poll-interval; the periodic full check is off), and says so again when
// watches become available. The limit is that of the daemon's own user
// namespace: the test shows that it binds the daemon and nothing else.
func TestInotifyExhaustionFallsBackToPolling(t *testing.T) {
	const limit = 5
	f := newFixture(t, fourDirs)
	dirs := []string{"/etc/d1", "/etc/d2", "/etc/d3", "/etc/d4"}
	for _, dir := range dirs {
		f.write(dir+"/f", fourDirsContent[dir], 0o644)
	}
	hostWatches := readInt(t, "/proc/sys/fs/inotify/max_user_watches")
	hostNSWatches := readInt(t, "/proc/sys/user/max_inotify_watches")

	d := startDaemonWithWatchLimit(t, f.root, limit, "--poll-interval", "500ms", "--interval", "0", "--settle", "1s")
	pid := d.cmd.Process.Pid

	t.Run("the limit binds the daemon alone", func(t *testing.T) {
		if got := inUserNamespace(t, pid, "cat /proc/sys/user/max_inotify_watches"); got != strconv.Itoa(limit) {
			t.Errorf("max_inotify_watches in the daemon's user namespace = %s, want %d", got, limit)
		}
		own, _ := os.Readlink("/proc/self/ns/user")
		its, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
		if own == its {
			t.Errorf("the daemon runs in the test's user namespace %s", own)
		}
		_, _, total := watchedDirs(t, d, f, dirs)
		if total != limit {
			t.Errorf("the daemon holds %d inotify watches, want exactly the limit, %d", total, limit)
		}
		// This process, outside the namespace, watches more than the limit.
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		for i := 0; i < limit+2; i++ {
			dir := t.TempDir()
			if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE); err != nil {
				t.Fatalf("the test's own watch %d of %d: %v", i+1, limit+2, err)
			}
		}
	})

	watched, unwatched, _ := watchedDirs(t, d, f, dirs)
	if len(watched) == 0 || len(unwatched) == 0 {
		t.Fatalf("watched %v, unwatched %v: want some of each", watched, unwatched)
	}
	// The directories on the way are watched first (their moves would
	// otherwise go unseen), and counted.
	if _, un, _ := watchedDirs(t, d, f, []string{"/", "/etc"}); len(un) > 0 {
		t.Errorf("%v, on the way to the declared directories, have no watch", un)
	}
	t.Logf("watched: %v; polled: %v", watched, unwatched)
	polling := fmt.Sprintf("; polling %d directories: inotify watches exhausted", len(unwatched))
	if len(unwatched) == 1 {
		polling = "; polling 1 directory: inotify watches exhausted"
	}

	t.Run("status and journal say so", func(t *testing.T) {
		waitStatusPrefix(d, "No drift: watching 4 paths, 0 units"+polling)
		// The daemon's own watches took them all: the desired-state
		// directory has none either, and the status line says so.
		if s := d.status(); !strings.HasSuffix(s, "; desired-state files not watched (inotify watches exhausted): reload to apply changes") {
			t.Errorf("status %q does not say the desired-state files are not watched", s)
		}
		r, _ := d.waitRecord(0, harness.MsgWatchesExhausted, nil)
		if !strings.Contains(r["MESSAGE"], fmt.Sprintf("polling %d directories every 500ms", len(unwatched))) {
			t.Errorf("exhausted record does not say what is polled and how often: %q", r["MESSAGE"])
		}
		if r[harness.PlainLevel] != "WARN" {
			t.Errorf("exhausted record level %s, want WARN", r[harness.PlainLevel])
		}
	})

	// Drift in a directory that has no watch is found by polling.
	for _, dir := range []string{unwatched[len(unwatched)-1], watched[0]} {
		t.Run("drift in "+dir, func(t *testing.T) {
			p := dir + "/f"
			m := d.mark()
			start := time.Now()
			f.write(p, "drifted\n", 0o644)
			d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": p, "DRIFT_KIND": "content"})
			t.Logf("%s: drift seen after %v", p, time.Since(start).Round(time.Millisecond))
			waitStatusPrefix(d, fmt.Sprintf("Drift: 1 path differs (%s: content)%s", p, polling))
			m = d.mark()
			f.write(p, fourDirsContent[dir], 0o644)
			d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": p, "DRIFT_KIND": "content"})
			waitStatusPrefix(d, "No drift: watching 4 paths, 0 units"+polling)
		})
	}

	t.Run("watches restored when the limit is raised", func(t *testing.T) {
		m := d.mark()
		inUserNamespace(t, pid, "echo 64 >/proc/sys/user/max_inotify_watches")
		d.waitRecord(m, harness.MsgWatchesRestored, nil)
		d.waitStatus("No drift: watching 4 paths, 0 units")
		if _, un, _ := watchedDirs(t, d, f, dirs); len(un) > 0 {
			t.Errorf("after the restore, %v still have no watch", un)
		}
		p := unwatched[0] + "/f"
		m = d.mark()
		f.write(p, "drifted\n", 0o644)
		d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": p})
	})

	if got := readInt(t, "/proc/sys/fs/inotify/max_user_watches"); got != hostWatches {
		t.Errorf("fs.inotify.max_user_watches changed from %d to %d", hostWatches, got)
	}
	if got := readInt(t, "/proc/sys/user/max_inotify_watches"); got != hostNSWatches {
		t.Errorf("this namespace's user.max_inotify_watches changed from %d to %d", hostNSWatches, got)
	}
}

// TestWatchesRestoredByReload proves that when a reload drops the declared
// directories that could not be watched, the daemon journals that polling
// stopped, not only its status line; and that when a later reload runs out
// of watches again, it journals that again.
func TestWatchesRestoredByReload(t *testing.T) {
	f := newFixture(t, fourDirs)
	for dir, content := range fourDirsContent {
		f.write(dir+"/f", content, 0o644)
	}
	// Five: the inhibitor directory and its parent, the root and /etc on
	// the way, and one of the four declared directories.
	d := startDaemonWithWatchLimit(t, f.root, 5, "--poll-interval", "500ms", "--interval", "0")
	d.waitRecord(0, harness.MsgWatchesExhausted, nil)

	// The desired-state directory may have no watch either (the daemon's
	// own watches took them all): reload by signal.
	reload := func(config string) int {
		t.Helper()
		m := d.mark()
		f.write("/etc/drift-monitor/desired.d/50-test.ign", config, 0o644)
		d.cmd.Process.Signal(syscall.SIGHUP)
		d.waitRecord(m, harness.MsgReloaded, nil)
		return m
	}

	m := reload(`{"ignition":{"version":"3.2.0"},"storage":{"files":[
 {"path":"/etc/d1/f","mode":420,"contents":{"source":"data:,one%0A"}}]}}`)
	// With a limit of 5, the desired-state locations still lack a watch:
	// the line may say so after the restore.
	waitStatusPrefix(d, "No drift: watching 1 path, 0 units")
	d.waitRecord(m, harness.MsgWatchesRestored, nil)

	m = reload(fourDirs)
	// How many are polled depends on what the config watch took meanwhile.
	d.wait("a status line saying the watches ran out", 20*time.Second, func() bool {
		s := d.status()
		return strings.HasPrefix(s, "No drift: watching 4 paths, 0 units; polling ") && strings.Contains(s, ": inotify watches exhausted")
	})
	d.waitRecord(m, harness.MsgWatchesExhausted, nil)
}

// waitStatusPrefix waits for a status line that starts with want: the
// desired-state directory's own watch may be missing too when watches run
// out, which the line then adds.
func waitStatusPrefix(d *daemonProc, want string) {
	d.t.Helper()
	d.wait("STATUS="+want+"…", 20*time.Second, func() bool { return strings.HasPrefix(d.status(), want) })
}

// polledTargets declares a user that lives in /usr/lib/passwd (the image's
// users, through nss-altfiles) and a hard link in /etc/hl whose target is
// in /usr/lib: both are judged by a file of /usr/lib though their own
// paths lie elsewhere.
const polledTargets = `{"ignition":{"version":"3.4.0"},
 "storage":{"files":[{"path":"/usr/lib/hl-target","mode":420,"contents":{"source":"data:,target%0A"}}],
  "links":[{"path":"/etc/hl/link","target":"/usr/lib/hl-target","hard":true}]},
 "passwd":{"users":[{"name":"svc","shell":"/bin/sh"}]}}`

// TestPollingJudgesByFilesInPolledDir: with /usr/lib polled (no watch
// left for it), a declared user's shell changed in /usr/lib/passwd and a
// hard link's target replaced in /usr/lib are found by the poll, though
// neither entry's own path is in /usr/lib: polling checks every entry a
// file of the polled directory judges, not only those whose paths are in
// it.
func TestPollingJudgesByFilesInPolledDir(t *testing.T) {
	f := newFixture(t, polledTargets)
	f.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n", 0o644)
	f.write("/etc/group", "root:x:0:\n", 0o644)
	f.write("/usr/lib/passwd", "svc:x:900:900::/:/bin/sh\n", 0o644)
	f.write("/usr/lib/group", "svc:x:900:\n", 0o644)
	f.write("/usr/lib/hl-target", "target\n", 0o644)
	if err := os.MkdirAll(f.host("/etc/hl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(f.host("/usr/lib/hl-target"), f.host("/etc/hl/link")); err != nil {
		t.Fatal(err)
	}
	// Six: the inhibitor directory and its parent, then, depth first, /,
	// /etc (the account files), /etc/hl and /usr: /usr/lib is left to
	// polling.
	d := startDaemonWithWatchLimit(t, f.root, 6, "--poll-interval", "500ms", "--interval", "0", "--settle", "1s")
	waitStatusPrefix(d, "No drift: watching 3 paths, 0 units; polling 1 directory: inotify watches exhausted")
	if _, un, _ := watchedDirs(t, d, f, []string{"/etc", "/etc/hl", "/usr/lib"}); len(un) != 1 || un[0] != "/usr/lib" {
		t.Fatalf("unwatched %v, want [/usr/lib] alone", un)
	}

	t.Run("a user of /usr/lib/passwd", func(t *testing.T) {
		m := d.mark()
		f.replaceByRename("/usr/lib/passwd", "svc:x:900:900::/:/bin/bash\n")
		d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_USER": "svc", "DRIFT_KIND": "shell"})
		m = d.mark()
		f.replaceByRename("/usr/lib/passwd", "svc:x:900:900::/:/bin/sh\n")
		d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_USER": "svc", "DRIFT_KIND": "shell"})
	})
	t.Run("a hard link's target in /usr/lib", func(t *testing.T) {
		m := d.mark()
		// A new inode at the target's path: the link no longer shares it.
		f.replaceByRename("/usr/lib/hl-target", "target\n")
		d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/hl/link"})
		m = d.mark()
		if err := os.Remove(f.host("/etc/hl/link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(f.host("/usr/lib/hl-target"), f.host("/etc/hl/link")); err != nil {
			t.Fatal(err)
		}
		d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/hl/link"})
	})
}

// TestImageWatchesExhausted: the image's comparison watches every
// directory of /etc with an inotify instance of its own; when the watches
// run out there, its directories are polled like the declared ones: the
// status line, the exhausted record and the metrics count them, and an
// undeclared edit in one of them is found by the poll (the periodic full
// check is off). Raising the limit watches them again.
func TestImageWatchesExhausted(t *testing.T) {
	f := newFixture(t, `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/declared.conf","mode":420,"contents":{"source":"data:,declared%0A"}}]}}`)
	f.write("/run/ostree-booted", "", 0o644)
	var dirs []string
	for i := 1; i <= 6; i++ {
		dirs = append(dirs, fmt.Sprintf("/etc/d%d", i))
		for _, top := range []string{"/usr", ""} {
			f.write(fmt.Sprintf("%s/etc/d%d/f", top, i), "image\n", 0o644)
		}
	}
	f.write("/etc/declared.conf", "declared\n", 0o644)
	prom := filepath.Join(t.TempDir(), "drift-monitor.prom")
	// Six: the inhibitor directory and its parent, then the image's
	// watcher (it starts first), depth first: /, /etc, /etc/d1, /etc/d2.
	// The rest of /etc, and the declared paths' own, are polled.
	d := startDaemonWithWatchLimit(t, f.root, 6, "--poll-interval", "500ms", "--interval", "0", "--settle", "1s", "--metrics-textfile", prom)
	pid := d.cmd.Process.Pid
	d.waitRecord(0, harness.MsgImage, map[string]string{"MESSAGE": "Comparing /etc with the booted deployment's /usr/etc"})
	_, unwatched, _ := watchedDirs(t, d, f, dirs)
	if len(unwatched) < 2 {
		t.Fatalf("unwatched %v: want some of /etc's directories left to polling", unwatched)
	}
	d.wait("a status line polling the image's directories", 20*time.Second, func() bool {
		rest, ok := strings.CutPrefix(d.status(), "No drift: watching 1 path, 0 units; polling ")
		var n int
		_, err := fmt.Sscanf(rest, "%d directories", &n)
		return ok && err == nil && n > len(unwatched)
	})
	d.waitRecord(0, harness.MsgWatchesExhausted, nil)
	d.wait("the metrics saying so", 20*time.Second, func() bool {
		b, _ := os.ReadFile(prom)
		return strings.Contains(string(b), "\ndrift_monitor_inotify_watches_exhausted 1\n") &&
			!strings.Contains(string(b), "\ndrift_monitor_polled_directories 0\n") && !strings.Contains(string(b), "\ndrift_monitor_polled_directories 1\n")
	})

	p := unwatched[len(unwatched)-1] + "/f"
	m := d.mark()
	start := time.Now()
	f.write(p, "edited\n", 0o644)
	d.waitRecord(m, harness.MsgUndeclared, map[string]string{"DRIFT_PATH": p})
	t.Logf("%s, in a polled directory: noticed after %v", p, time.Since(start).Round(time.Millisecond))
	m = d.mark()
	f.write(p, "image\n", 0o644)
	d.waitRecord(m, harness.MsgUndeclaredGone, map[string]string{"DRIFT_PATH": p})

	m = d.mark()
	inUserNamespace(t, pid, "echo 128 >/proc/sys/user/max_inotify_watches")
	d.waitRecord(m, harness.MsgWatchesRestored, nil)
	d.waitStatus("No drift: watching 1 path, 0 units")
	if _, un, _ := watchedDirs(t, d, f, dirs); len(un) > 0 {
		t.Errorf("after the restore, %v still have no watch", un)
	}
	p = unwatched[0] + "/f"
	m = d.mark()
	f.write(p, "edited\n", 0o644)
	d.waitRecord(m, harness.MsgUndeclared, map[string]string{"DRIFT_PATH": p})
}
