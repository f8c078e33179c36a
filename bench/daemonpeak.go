package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

// cmdDaemonPeak is `drift-bench daemon-peak -peakprofile FILE -- daemon
// ARGS...`: runs the daemon in this process (cli.Run, as the binary runs
// it) until its READY=1, keeping the heap profile of its largest heap on
// the way (peakProfiler), then stops it and prints its VmHWM. Part 3
// measures the binary's start; this says what its peak holds. Run it with
// CACHE_DIRECTORY set to an empty directory for a cold start.
func cmdDaemonPeak(ctx context.Context, args []string) error {
	flags := newFlagSet("daemon-peak")
	peakprofile := flags.String("peakprofile", "", "write the heap profile of the start's largest heap to this file")
	timeout := flags.Duration("timeout", 10*time.Minute, "how long to wait for READY=1")
	if err := flags.Parse(args); err != nil {
		return err
	}
	argv := flags.Args()
	if len(argv) == 0 || argv[0] != "daemon" {
		return errors.New("usage: drift-bench daemon-peak [-peakprofile FILE] -- daemon ARG...; the daemon's command line, from \"daemon\" on")
	}
	sockDir, err := os.MkdirTemp("", "drift-bench-notify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	ready := make(chan struct{})
	go readReady(conn, func() { close(ready) })
	if err := os.Setenv("NOTIFY_SOCKET", sock); err != nil {
		return err
	}
	var peak *peakProfiler
	if *peakprofile != "" {
		runtime.MemProfileRate = 64 << 10
		peak = startPeakProfiler(10 * time.Millisecond)
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan int, 1)
	started := time.Now()
	go func() {
		exited <- cli.Run(dctx, argv, cli.Stdio{In: strings.NewReader(""), Out: io.Discard, Err: os.Stderr})
	}()
	deadline := time.NewTimer(*timeout)
	defer deadline.Stop()
	select {
	case <-ready:
	case code := <-exited:
		return fmt.Errorf("the daemon exited with status %d before READY=1", code)
	case <-deadline.C:
		return fmt.Errorf("no READY=1 within %s", *timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	took := time.Since(started)
	hwm := memOf(os.Getpid(), "VmHWM")
	if peak != nil {
		if err := peak.write(*peakprofile); err != nil {
			return err
		}
	}
	cancel()
	<-exited
	fmt.Printf("READY=1 after %s, VmHWM %s\n", took.Round(time.Millisecond), fmtBytes(hwm))
	return nil
}
