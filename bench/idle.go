package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// idleResult is part 3 for one N: what the daemon costs while nothing
// happens, over consecutive windows (the Go runtime forces a GC every two
// minutes and returns freed memory to the kernel in the background: one
// window may hold a GC and the next none).
type idleResult struct {
	Files int
	// Start is "cold" (empty state cache: the config parsed), "warm" (a
	// restart) or "cold, desired.d" (cold, the config read from the
	// default locations inside the root, as a host's daemon reads it).
	Start    string
	CfgBytes int64         // the config's size
	Binary   string        // "" for the binary measured, "before" for -before's
	Ready    time.Duration // start → READY=1: load + first full check
	HWMReady int64         // VmHWM right after READY=1
	Windows  []idleWindow
	HWM      int64 // VmHWM: peak resident memory since start (the load)
	// CheckRSS is the peak resident memory of the one-shot `check
	// --no-cache` of the same config, run just before a cold start (0 for
	// a warm one); CheckCmd is its command.
	CheckRSS int64
	CheckCmd string
	Watches  int // inotify watches (inotify wd: lines in fdinfo)
	Cmd      string
}

type idleWindow struct {
	Window   time.Duration
	CPU      time.Duration // utime+stime over the window (/proc/PID/stat)
	SchedCPU time.Duration // on-CPU time over the window (sum of /proc/PID/task/*/schedstat)
	Switches int64         // context switches over the window, all threads (voluntary + involuntary)
	Threads  int
	RSS      int64 // VmRSS at the end of the window
}

// label names the start in the report: its kind, and the binary if not the
// one measured.
func (r *idleResult) label() string {
	if r.Binary != "" {
		return r.Start + " (" + r.Binary + ")"
	}
	return r.Start
}

// worst is the window with the most CPU.
func (r *idleResult) worst() idleWindow {
	var w idleWindow
	for _, x := range r.Windows {
		if x.CPU >= w.CPU {
			w = x
		}
	}
	return w
}

func (r *idleResult) lastRSS() int64 {
	if len(r.Windows) == 0 {
		return 0
	}
	return r.Windows[len(r.Windows)-1].RSS
}

// procSample is what /proc says of a process at one moment.
type procSample struct {
	at       time.Time
	ticks    int64 // utime + stime, in clock ticks
	schedNS  int64
	switches int64
	threads  int
}

const clockTicks = 100 // USER_HZ on Linux

func sampleProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
	f := strings.Fields(rest)
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	s.ticks = ut + st
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return s, err
	}
	s.threads = len(tasks)
	for _, t := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s", pid, t.Name())
		if b, err := os.ReadFile(dir + "/schedstat"); err == nil {
			if fs := strings.Fields(string(b)); len(fs) > 0 {
				n, _ := strconv.ParseInt(fs[0], 10, 64)
				s.schedNS += n
			}
		}
		if b, err := os.ReadFile(dir + "/status"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					s.switches += n
				} else if v, ok := strings.CutPrefix(l, "nonvoluntary_ctxt_switches:"); ok {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					s.switches += n
				}
			}
		}
	}
	return s, nil
}

// memKB reads a Vm* line of /proc/PID/status, in bytes.
func memOf(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}

// inotifyWatches counts the watches a process holds, over all its inotify
// descriptors.
func inotifyWatches(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

// freshCacheDir empties and returns a state cache directory for the
// daemons started on fixture f.
func freshCacheDir(f *fixture) (string, error) {
	dir := filepath.Join(f.Dir, "daemon-cache")
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// idle starts the daemon with its default options (but --root and
// --config) and a state cache directory, lets it settle after READY=1, then
// measures quiet windows. start "cold" empties the cache first (the config
// is parsed: a first boot, a new config); "warm" keeps what the cold start
// stored (any restart).
func (b *bench) idle(ctx context.Context, f *fixture, start string, window, settle time.Duration, windows int) (*idleResult, error) {
	return b.idleOf(ctx, b.bin, "", f, start, window, settle, windows)
}

// idleOf is idle of the daemon of binary bin, whose results are labelled
// with label ("" for the binary measured, "before" for -before's).
func (b *bench) idleOf(ctx context.Context, bin, label string, f *fixture, start string, window, settle time.Duration, windows int) (*idleResult, error) {
	dir := filepath.Join(f.Dir, "daemon-cache")
	if start != "warm" {
		var err error
		if dir, err = freshCacheDir(f); err != nil {
			return nil, err
		}
	}
	argv := []string{"env", "CACHE_DIRECTORY=" + dir, bin, "daemon", "--root", f.Root, "--config", f.Cfg}
	check := []string{bin, "check", "--no-cache", "--root", f.Root, "--config", f.Cfg}
	if start == startDesiredD {
		remove, err := linkDesiredD(f)
		if err != nil {
			return nil, err
		}
		defer remove()
		argv, check = argv[:len(argv)-2], check[:len(check)-2]
	}
	var checkRSS int64
	if start != "warm" {
		// The one-shot cold check of the same config, just before: the
		// bound a cold start is held to is the check's.
		r, err := timeCmd(ctx, []int{0, 1}, check[0], check[1:]...)
		if err != nil {
			return nil, err
		}
		checkRSS = r.MaxRSS
	}
	m, err := startMonitor(ctx, 10*time.Minute, argv...)
	if err != nil {
		return nil, err
	}
	defer m.stop()
	pid := m.pid()
	res := &idleResult{Files: len(f.Paths), Start: start, Binary: label, Ready: m.readyAt.Sub(m.started), Cmd: shellQuote(argv),
		HWMReady: memOf(pid, "VmHWM"), CheckRSS: checkRSS}
	if checkRSS > 0 {
		res.CheckCmd = shellQuote(check)
	}
	if fi, err := os.Stat(f.Cfg); err == nil {
		res.CfgBytes = fi.Size()
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s0, err := sampleProc(pid)
	if err != nil {
		return nil, err
	}
	for k := 0; k < windows; k++ {
		select {
		case <-time.After(window):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s1, err := sampleProc(pid)
		if err != nil {
			return nil, err
		}
		res.Windows = append(res.Windows, idleWindow{
			Window:   s1.at.Sub(s0.at),
			CPU:      time.Duration(s1.ticks-s0.ticks) * (time.Second / clockTicks),
			SchedCPU: time.Duration(s1.schedNS - s0.schedNS),
			Switches: s1.switches - s0.switches,
			Threads:  s1.threads,
			RSS:      memOf(pid, "VmRSS"),
		})
		s0 = s1
	}
	res.HWM = memOf(pid, "VmHWM")
	res.Watches = inotifyWatches(pid)
	m.drain()
	return res, nil
}

// startDesiredD is the cold start from the default locations.
const startDesiredD = "cold, desired.d"

// linkDesiredD puts the fixture's config where a host's daemon finds it,
// /etc/drift-monitor/desired.d inside the root (a hard link: the same
// bytes), until remove is called: the other parts' floors read every file
// of the root.
func linkDesiredD(f *fixture) (remove func(), err error) {
	dir := filepath.Join(f.Root, "etc/drift-monitor/desired.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	link := filepath.Join(dir, "50-bench.ign")
	os.Remove(link)
	if err := os.Link(f.Cfg, link); err != nil {
		return nil, err
	}
	return func() { os.RemoveAll(filepath.Join(f.Root, "etc/drift-monitor")) }, nil
}
