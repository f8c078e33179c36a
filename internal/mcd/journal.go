package mcd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Record is one journal record of the MCD, as journalctl -o json gives it.
type Record struct {
	Line   Line
	At     time.Time
	Boot   string
	Cursor string
}

// Journal reads the host journal through journalctl: sd-journal's file
// format, rotation, compression and access rules stay systemd's, and the
// daemon needs no cgo.
type Journal struct {
	// Journalctl is the binary ("" : journalctl on $PATH).
	Journalctl string
}

// The matches: the MCD's lines come from logger(1) run by root
// (logSystem: exec.Command("logger") with the message on stdin), so
// _TRANSPORT=syslog and the trusted _UID=0. SYSLOG_IDENTIFIER ("root",
// logger's default tag) is not matched: anyone may set it (logger -t).
var matches = []string{"_UID=0", "_TRANSPORT=syslog"}

func (j Journal) cmd(ctx context.Context, args ...string) *exec.Cmd {
	bin := j.Journalctl
	if bin == "" {
		bin = "journalctl"
	}
	c := exec.CommandContext(ctx, bin, append([]string{"--quiet", "--output=json", "--all"}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	c.WaitDelay = 2 * time.Second
	return c
}

// ErrNoJournal says the journal of this boot cannot be read.
var ErrNoJournal = errors.New("the journal of this boot cannot be read")

// Probe checks that this boot's journal can be read: some record of it
// (there are always systemd's) must be visible. journalctl lets a reader
// without access see nothing and say so only in a hint.
func (j Journal) Probe(ctx context.Context, boot string) error {
	var stderr bytes.Buffer
	c := j.cmd(ctx, "--boot=0", "--lines=1", "--output-fields=_BOOT_ID")
	c.Stderr = &stderr
	out, err := c.Output()
	why := strings.TrimSpace(stderr.String())
	if err != nil {
		return fmt.Errorf("%w: journalctl: %v %s", ErrNoJournal, err, why)
	}
	// The kernel's boot_id has dashes, the journal's _BOOT_ID none.
	if boot = strings.ReplaceAll(strings.TrimSpace(boot), "-", ""); boot == "" || !bytes.Contains(out, []byte(boot)) {
		if why == "" {
			why = "no record of this boot is visible"
		}
		return fmt.Errorf("%w: %s", ErrNoJournal, why)
	}
	return nil
}

// Read returns the MCD's records of one boot ("0" this one, "-1" the
// previous one), and the cursor of the last record read (of any kind),
// to follow from. A boot the journal does not have gives none.
func (j Journal) Read(ctx context.Context, boot string) ([]Record, string, error) {
	var stderr bytes.Buffer
	c := j.cmd(ctx, append([]string{"--boot=" + boot}, matches...)...)
	c.Stderr = &stderr
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := c.Start(); err != nil {
		return nil, "", fmt.Errorf("journalctl: %w", err)
	}
	var recs []Record
	cursor, perr := scan(out, func(r Record) { recs = append(recs, r) })
	err = c.Wait()
	if perr != nil {
		return recs, cursor, perr
	}
	if err != nil {
		if e := stderr.String(); boot != "0" && (strings.Contains(e, "not available") || strings.Contains(e, "No journal boot entry")) {
			return nil, "", nil // no previous boot in the journal
		}
		return recs, cursor, fmt.Errorf("journalctl --boot=%s: %v %s", boot, err, strings.TrimSpace(stderr.String()))
	}
	return recs, cursor, nil
}

// Follow delivers the MCD's records that come after cursor ("" : from the
// start of this boot) until ctx ends or journalctl exits, and returns the
// cursor of the last record read.
func (j Journal) Follow(ctx context.Context, cursor string, out chan<- Record) (string, error) {
	args := []string{"--follow"}
	if cursor != "" {
		args = append(args, "--after-cursor="+cursor)
	} else {
		args = append(args, "--boot=0", "--no-tail")
	}
	var stderr bytes.Buffer
	c := j.cmd(ctx, append(args, matches...)...)
	c.Stderr = &stderr
	pipe, err := c.StdoutPipe()
	if err != nil {
		return cursor, err
	}
	if err := c.Start(); err != nil {
		return cursor, fmt.Errorf("journalctl: %w", err)
	}
	last, perr := scan(pipe, func(r Record) {
		select {
		case out <- r:
		case <-ctx.Done():
		}
	})
	if last != "" {
		cursor = last
	}
	err = c.Wait()
	if ctx.Err() != nil {
		return cursor, ctx.Err()
	}
	if perr != nil {
		return cursor, perr
	}
	return cursor, fmt.Errorf("journalctl --follow exited: %v %s", err, strings.TrimSpace(stderr.String()))
}

// scan reads journalctl's JSON lines, handing on the MCD's, and returns
// the last cursor seen.
func scan(r io.Reader, each func(Record)) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var cursor string
	for sc.Scan() {
		rec, cur, ok, err := ParseRecord(sc.Bytes())
		if err != nil {
			return cursor, err
		}
		if cur != "" {
			cursor = cur
		}
		if ok {
			each(rec)
		}
	}
	return cursor, sc.Err()
}

// ParseRecord reads one journalctl -o json line; ok is true for an MCD
// line from _UID=0 that the machine follows. cursor is the record's.
func ParseRecord(b []byte) (rec Record, cursor string, ok bool, err error) {
	var raw struct {
		Cursor   string          `json:"__CURSOR"`
		Realtime string          `json:"__REALTIME_TIMESTAMP"`
		Boot     string          `json:"_BOOT_ID"`
		UID      json.RawMessage `json:"_UID"`
		Message  json.RawMessage `json:"MESSAGE"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return rec, "", false, fmt.Errorf("reading journalctl's output: %w", err)
	}
	// A field journald keeps as binary (not UTF-8, or with control
	// characters) comes as an array of byte values; a field repeated in
	// one record as an array of values: either way not a line of the
	// MCD's, whose _UID is the kernel's and MESSAGE text.
	var uid, msg string
	if json.Unmarshal(raw.UID, &uid) != nil || uid != "0" || json.Unmarshal(raw.Message, &msg) != nil {
		return rec, raw.Cursor, false, nil
	}
	l, ok := Parse(msg)
	if !ok {
		return rec, raw.Cursor, false, nil
	}
	us, err := strconv.ParseInt(raw.Realtime, 10, 64)
	if err != nil {
		return rec, raw.Cursor, false, fmt.Errorf("journal record %s: bad __REALTIME_TIMESTAMP %q", raw.Cursor, raw.Realtime)
	}
	return Record{Line: l, At: time.UnixMicro(us), Boot: raw.Boot, Cursor: raw.Cursor}, raw.Cursor, true, nil
}
