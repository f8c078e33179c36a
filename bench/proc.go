package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// record is one plain line of a monitor's stderr (LEVEL message
// MESSAGE_ID=... DRIFT_MONITOR_RECORD=... DRIFT_PATH=...), stamped when the
// benchmark read it. Type is the record's type (journal.FieldRecord): the
// drift of every kind of entry has its own MESSAGE_ID, and the same type.
type record struct {
	At   time.Time
	Type string
	Path string
	Line string
}

// monitor is a running monitor process (the real daemon, or the naive
// baseline) with its stderr and sd_notify socket read by the benchmark.
type monitor struct {
	cmd     *exec.Cmd
	recs    chan record
	ready   chan struct{}
	exited  chan error
	sockDir string
	started time.Time
	readyAt time.Time
	tail    []string // last lines, for errors
}

// startMonitor runs argv with NOTIFY_SOCKET set and waits for READY=1.
func startMonitor(ctx context.Context, timeout time.Duration, argv ...string) (*monitor, error) {
	sockDir, err := os.MkdirTemp("", "drift-bench-notify-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(sockDir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, err
	}
	m := &monitor{recs: make(chan record, 1<<16), ready: make(chan struct{}), exited: make(chan error, 1), sockDir: sockDir}
	m.cmd = exec.Command(argv[0], argv[1:]...)
	m.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		conn.Close()
		return nil, err
	}
	m.started = time.Now()
	if err := m.cmd.Start(); err != nil {
		conn.Close()
		os.RemoveAll(sockDir)
		return nil, err
	}
	// DRIFT_BENCH_LOG=FILE keeps every line the monitors write, stamped
	// (for investigations: e.g. with GODEBUG=gctrace=1).
	var logw *os.File
	if p := os.Getenv("DRIFT_BENCH_LOG"); p != "" {
		if logw, err = os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			return nil, err
		}
	}
	go m.readStderr(stderr, logw, conn)
	go m.readNotify(conn)
	if err := m.waitReady(ctx, timeout, argv); err != nil {
		return nil, err
	}
	return m, nil
}

// readStderr turns the monitor's stderr into records on m.recs (and lines of
// logw, if not nil) until it ends; then it reaps the monitor and closes conn.
func (m *monitor) readStderr(stderr io.Reader, logw *os.File, conn *net.UnixConn) {
	if logw != nil {
		defer logw.Close()
	}
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		r := parseRecord(sc.Text())
		r.At = time.Now()
		if logw != nil {
			fmt.Fprintf(logw, "%s %d %s\n", r.At.Format("15:04:05.000000"), m.cmd.Process.Pid, r.Line)
		}
		m.recs <- r
	}
	m.exited <- m.cmd.Wait()
	conn.Close()
}

// readNotify closes m.ready at the first READY=1 on the notify socket.
func (m *monitor) readNotify(conn *net.UnixConn) {
	readReady(conn, func() {
		m.readyAt = time.Now()
		close(m.ready)
	})
}

// readReady calls ready at the first READY=1 on the notify socket conn,
// reading until it fails (is closed).
func readReady(conn *net.UnixConn, ready func()) {
	buf := make([]byte, 64<<10)
	once := false
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(buf[:n]), "\n") {
			if l == "READY=1" && !once {
				once = true
				ready()
			}
		}
	}
}

// waitReady waits for READY=1, keeping the lines written meanwhile for the
// error that says why it never came.
func (m *monitor) waitReady(ctx context.Context, timeout time.Duration, argv []string) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case <-m.ready:
			return nil
		case r := <-m.recs:
			m.keep(r.Line)
		case err := <-m.exited:
			return fmt.Errorf("%v exited before READY=1 (%v):\n%s", argv, err, strings.Join(m.tail, "\n"))
		case <-deadline.C:
			m.stop()
			return fmt.Errorf("%v: no READY=1 after %s:\n%s", argv, timeout, strings.Join(m.tail, "\n"))
		case <-ctx.Done():
			m.stop()
			return ctx.Err()
		}
	}
}

func (m *monitor) keep(line string) {
	if len(m.tail) >= 20 {
		m.tail = m.tail[1:]
	}
	m.tail = append(m.tail, line)
}

func (m *monitor) pid() int { return m.cmd.Process.Pid }

// waitRecord consumes records until one of the type naming path
// arrives and returns when it was read.
func (m *monitor) waitRecord(id, path string, timeout time.Duration) (time.Time, error) {
	r, err := m.waitFor(func(r record) bool { return r.Type == id && r.Path == path }, fmt.Sprintf("record %s for %s", id, path), timeout)
	return r.At, err
}

// waitFor consumes records until one that want is true of arrives (what,
// for the error that says it never did).
func (m *monitor) waitFor(want func(record) bool, what string, timeout time.Duration) (record, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case r := <-m.recs:
			m.keep(r.Line)
			if want(r) {
				return r, nil
			}
		case err := <-m.exited:
			m.exited <- err
			return record{}, fmt.Errorf("monitor exited (%v) waiting for %s:\n%s", err, what, strings.Join(m.tail, "\n"))
		case <-deadline.C:
			return record{}, fmt.Errorf("no %s after %s:\n%s", what, timeout, strings.Join(m.tail, "\n"))
		}
	}
}

// drain discards the records read so far.
func (m *monitor) drain() {
	for {
		select {
		case r := <-m.recs:
			m.keep(r.Line)
		default:
			return
		}
	}
}

// stop ends the monitor with SIGTERM (SIGKILL after 10 s).
func (m *monitor) stop() {
	defer os.RemoveAll(m.sockDir)
	if m.cmd.Process == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case r := <-m.recs:
			m.keep(r.Line)
		case <-m.exited:
			return
		case <-t.C:
			m.cmd.Process.Kill()
			<-m.exited
			return
		}
	}
}

// parseRecord reads the fields the benchmark needs from a plain record line
// (the daemon's stderr format, read back by the journal package).
func parseRecord(line string) record {
	p := journal.ParsePlain(line)
	return record{Line: line, Type: p.Fields[journal.FieldRecord], Path: p.Fields[journal.FieldDriftPath]}
}

// sdNotify sends one datagram to NOTIFY_SOCKET (for the naive baseline).
func sdNotify(state string) error {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return errors.New("NOTIFY_SOCKET not set")
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}

var (
	msgDrift    = journal.RecordDriftDetected
	msgResolved = journal.RecordDriftResolved
)
