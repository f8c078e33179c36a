// Command drift-monitor detects configuration drift on Ignition-provisioned
// hosts. See drift-monitor(8) and the README.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
