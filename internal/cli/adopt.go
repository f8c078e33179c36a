package cli

import (
	"context"
	"fmt"

	"github.com/drift-monitor/drift-monitor/internal/adopt"
	"github.com/drift-monitor/drift-monitor/internal/escape"
)

// runAdopt is `drift-monitor adopt`, which drift-monitor-adopt.service runs
// once, on the first boot.
func runAdopt(_ context.Context, args []string, std Stdio) int {
	fs := newFlags("adopt", std.Err)
	root := fs.String("root", "/", "adopt into the tree mounted at `DIR`, reading its /run")
	from := fs.String("from", adopt.DefaultSource, "Ignition's config cache: host `PATH`, under the root")
	to := fs.String("to", adopt.DefaultDest, "the desired config to create: host `PATH`, under the root")
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor adopt [--root DIR] [--from PATH] [--to PATH]\n\n"+
			"Saves the Ignition config that provisioned this host, as Ignition cached it,\n"+
			"as a desired config readable by root only; never over an existing file.\n"+
			"Exit status: 0 saved or already there, 2 it could not be saved.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "drift-monitor adopt: unexpected argument %q\n", fs.Arg(0))
		return ExitFailed
	}
	r, err := openRoot(*root)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor adopt: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	defer r.Close()
	// Host paths, resolved inside the root: a link in it (an /etc that
	// points to /sysroot/etc, say) never leads to the running host's files.
	res, err := adopt.Adopt(r, *from, *to)
	src, dst := r.Join(*from), r.Join(*to)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor adopt: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	switch res {
	case adopt.Adopted:
		fmt.Fprintf(std.Out, "adopted %s as %s\n", escape.Text(src), escape.Text(dst))
	case adopt.Kept:
		fmt.Fprintf(std.Out, "%s exists: left as it is, %s not adopted\n", escape.Text(dst), escape.Text(src))
	}
	return 0
}
