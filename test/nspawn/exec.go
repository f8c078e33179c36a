package nspawn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commandTimeout bounds a MustRun, a WriteFile and a Journal.
const commandTimeout = 2 * time.Minute

// ErrNotRunning is returned (wrapped) by Run when the container has stopped.
var ErrNotRunning = errors.New("container is not running")

// commandEnv is the whole environment of a command run inside: the test's
// own environment (NOTIFY_SOCKET, DBUS_*, a Go toolchain's PATH...) would
// describe the host, not the container.
var commandEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"LANG=C.UTF-8",
	"TERM=dumb",
	"SYSTEMD_PAGER=cat",
	"SYSTEMD_COLORS=0",
}

// Run runs args inside the container, in all its namespaces (`nsenter -t
// INIT -a`), as root, with a minimal environment (PATH, HOME, LANG) and no
// standard input, and returns what it printed. A ctx without a deadline
// bounds it by commandTimeout, as MustRun is: a context that only ends with
// its test lets each command take what it needs, and no command hangs.
//
// The error is nil when the command exits 0. Otherwise it names the machine
// and the command and wraps: *exec.ExitError for a non-zero exit (use
// errors.As for the code), context.DeadlineExceeded or context.Canceled (and
// the kill) when ctx ended first, ErrNotRunning when the container has
// stopped, or the error starting nsenter.
func (m *Machine) Run(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	return m.RunInput(ctx, nil, args...)
}

// RunInput is Run with stdin as the command's standard input; nil means none.
func (m *Machine) RunInput(ctx context.Context, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	if len(args) == 0 {
		return "", "", fmt.Errorf("%s: Run needs a command", m.Name)
	}
	select {
	case <-m.exited:
		return "", "", fmt.Errorf("%s: %s: %w", m.Name, quote(args), ErrNotRunning)
	default:
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, commandTimeout)
		defer cancel()
	}
	nsArgs := append([]string{"-t", strconv.Itoa(m.InitPID), "-a", "--"}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", nsArgs...)
	cmd.Env = commandEnv
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// nsenter forks the command into the container's PID namespace and
	// waits for it; killing nsenter alone would leave the command running.
	cmd.Cancel = func() error {
		for _, c := range children(cmd.Process.Pid) {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		return cmd.Process.Kill()
	}
	// A process the command left behind holding its stdout (a daemon
	// started by hand) must not keep Run waiting forever.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	switch {
	case err == nil:
	case ctx.Err() != nil:
		err = fmt.Errorf("%s: %s: %w (%w)", m.Name, quote(args), ctx.Err(), err)
	default:
		select {
		case <-m.exited:
			err = fmt.Errorf("%s: %s: %w (%w)", m.Name, quote(args), ErrNotRunning, err)
		default:
			err = fmt.Errorf("%s: %s: %w", m.Name, quote(args), err)
		}
	}
	return out.String(), errOut.String(), err
}

// runBounded is Run with commandTimeout.
func (m *Machine) runBounded(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return m.Run(ctx, args...)
}

// MustRun runs args inside the container like Run, for at most two minutes,
// and returns its standard output. It fails the test, showing both outputs,
// unless the command exits 0.
func (m *Machine) MustRun(t testing.TB, args ...string) string {
	t.Helper()
	return m.mustRunInput(t, nil, args...)
}

func (m *Machine) mustRunInput(t testing.TB, stdin io.Reader, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return m.mustRunContext(t, ctx, stdin, args...)
}

// MustRunContext is MustRun bounded by ctx instead of commandTimeout: for a
// command whose time is the work it waits for (a daemon's start on a large
// config), which a loaded machine stretches past any fixed bound.
func (m *Machine) MustRunContext(t testing.TB, ctx context.Context, args ...string) string {
	t.Helper()
	return m.mustRunContext(t, ctx, nil, args...)
}

func (m *Machine) mustRunContext(t testing.TB, ctx context.Context, stdin io.Reader, args ...string) string {
	t.Helper()
	out, errOut, err := m.RunInput(ctx, stdin, args...)
	if err != nil {
		t.Fatalf("%v\n--- stdout ---\n%s--- stderr ---\n%s", err, out, errOut)
	}
	return out
}

// writeScript runs as: sh -c writeScript sh PATH MODE, with the content on
// standard input. A new file is created readable by root only, and every
// file gets its mode before its content arrives, so the content is never
// readable under a more open mode than asked for. Missing parent directories
// get the default 0755.
const writeScript = `set -e
mkdir -p -- "$(dirname -- "$1")"
(umask 077; : >"$1")
chmod -- "$2" "$1"
cat >"$1"`

// WriteFile writes content to the absolute path inside the container, as
// root, creating missing parent directories, and sets the file's mode
// (permission bits, plus setuid, setgid and sticky if set in mode). Like
// os.WriteFile it truncates an existing file and writes in place, following
// a symbolic link; it is not atomic: a watcher can see the empty file first.
//
// The write happens inside the container rather than through
// /proc/INIT/root/PATH on the host: there, an absolute symbolic link in the
// container (/etc/resolv.conf -> /run/...) is resolved against the host's
// root, so a write meant for the container could land on the host.
func (m *Machine) WriteFile(t testing.TB, path string, content []byte, mode fs.FileMode) {
	t.Helper()
	if !filepath.IsAbs(path) {
		t.Fatalf("%s: WriteFile: path %q is not absolute", m.Name, path)
	}
	m.mustRunInput(t, bytes.NewReader(content), "sh", "-c", writeScript, "sh", path, octalMode(mode))
}

// octalMode renders mode as chmod's octal operand.
func octalMode(mode fs.FileMode) string {
	bits := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return fmt.Sprintf("%04o", bits)
}

// quote renders a command line for messages, quoting the arguments a shell
// would split or expand.
func quote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~") {
			q[i] = strconv.Quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}
