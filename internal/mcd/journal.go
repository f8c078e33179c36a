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

// cmd is journalctl reading records as JSON.
func (j Journal) cmd(ctx context.Context, args ...string) *exec.Cmd {
	return j.raw(ctx, append([]string{"--quiet", "--output=json", "--all"}, args...)...)
}

func (j Journal) raw(ctx context.Context, args ...string) *exec.Cmd {
	bin := j.Journalctl
	if bin == "" {
		bin = "journalctl"
	}
	c := exec.CommandContext(ctx, bin, args...)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	c.WaitDelay = 2 * time.Second
	return c
}

// ErrNoJournal says the journal of this boot cannot be read.
var ErrNoJournal = errors.New("the journal of this boot cannot be read")

// Boots returns this boot's id and the previous boot's ("" : none) as the
// journal names them. This boot is the kernel's boot id (kernelBoot, from
// /proc/sys/kernel/random/boot_id) when the journal has it, and otherwise
// the journal's newest: in a container whose manager was given a boot id
// of its own (systemd-nspawn mounts one over the kernel's), a sandbox with
// a /proc of its own (ProtectProc=) reads the kernel's, which the journal
// does not know. journalctl --boot=0 would use that one. A reader without
// access to the journal sees no boot at all (journalctl says so in a hint
// only): ErrNoJournal.
func (j Journal) Boots(ctx context.Context, kernelBoot string) (this, prev string, err error) {
	var stderr bytes.Buffer
	// Neither --quiet (which hides the list) nor --output (systemd 252's
	// list has no JSON form).
	c := j.raw(ctx, "--list-boots")
	c.Stderr = &stderr
	out, err := c.Output()
	why := strings.TrimSpace(stderr.String())
	if err != nil {
		return "", "", fmt.Errorf("%w: journalctl --list-boots: %v %s", ErrNoJournal, err, why)
	}
	// " -1 0123…cdef Thu 2026-12-03 13:20:53 UTC—Thu …", oldest first,
	// after a header line (systemd 251 and later).
	var boots []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && isBootID(f[1]) {
			boots = append(boots, f[1])
		}
	}
	if len(boots) == 0 {
		if why == "" {
			why = "no boot is visible"
		}
		return "", "", fmt.Errorf("%w: %s", ErrNoJournal, why)
	}
	kernelBoot = strings.ReplaceAll(strings.TrimSpace(kernelBoot), "-", "")
	at := len(boots) - 1
	for i, b := range boots {
		if b == kernelBoot {
			at = i
		}
	}
	if at > 0 {
		prev = boots[at-1]
	}
	return boots[at], prev, nil
}

func isBootID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// Read returns the MCD's records of one boot (its id, from Boots), and the
// cursor of the last record read (of any kind), to follow from.
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
		return recs, cursor, fmt.Errorf("journalctl --boot=%s: %v %s", boot, err, strings.TrimSpace(stderr.String()))
	}
	return recs, cursor, nil
}

// Follow delivers the MCD's records that come after cursor ("" : from the
// start of the boot this, as Boots names it) until ctx ends or journalctl exits, and returns the
// cursor of the last record read.
func (j Journal) Follow(ctx context.Context, this, cursor string, out chan<- Record) (string, error) {
	// --boot always: without it --follow follows the boot /proc names,
	// which need not be the journal's (Boots).
	args := []string{"--follow", "--boot=" + this}
	if cursor != "" {
		args = append(args, "--after-cursor="+cursor)
	} else {
		args = append(args, "--no-tail")
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
