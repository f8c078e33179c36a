package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/drift-monitor/drift-monitor/internal/adopt"
	"github.com/drift-monitor/drift-monitor/internal/digestkey"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/memlimit"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// runAdopt is `drift-monitor adopt`, which drift-monitor-adopt.service runs
// once, on the first boot.
func runAdopt(_ context.Context, args []string, std Stdio) int {
	fs := newFlags("adopt", std.Err)
	root := fs.String("root", "/", "adopt into the tree mounted at `DIR`, reading its /run")
	from := fs.String("from", adopt.DefaultSource, "Ignition's config cache: host `PATH`, under the root")
	to := fs.String("to", adopt.DefaultDest, "the desired config to create: host `PATH`, under the root")
	record := fs.String("record", firstboot.DefaultPath, "the first-boot record to create: host `PATH`, under the root")
	img := fs.Bool("image", false, "record what /etc differs in from the OS image now (after the first boot is up), adding to the record of that and never replacing it; nothing else")
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor adopt [--root DIR] [--from PATH] [--to PATH] [--record PATH]\n"+
			"       drift-monitor adopt --image [--root DIR]\n\n"+
			"Saves the Ignition config that provisioned this host, as Ignition cached it,\n"+
			"as a desired config readable by root only, and records what that config leaves\n"+
			"to the node (modes and owners it does not declare, the base of append-only\n"+
			"files); never over an existing file.\n"+
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
	if *img {
		return adoptImage(r, std)
	}
	// Everything is checked before anything is written.
	if err := adopt.CheckRecord(r, *to, *record); err != nil {
		fmt.Fprintf(std.Err, "drift-monitor adopt: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
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
	if res == adopt.Kept && !cachePresent(r, *from) {
		// Ignition's cache lives in /run until the first reboot: without
		// it this is a later boot, and the nodes as they are now are no
		// longer what Ignition left (a mode changed since would become
		// the record's, and its drift the baseline).
		fmt.Fprintf(std.Err, "drift-monitor adopt: warning: %s is gone, so this is not the boot Ignition ran in: what %s leaves to the node is not recorded\n",
			escape.Text(src), escape.Text(dst))
		return 0
	}
	return adoptRecord(r, *to, *record, std)
}

// cachePresent reports whether Ignition's config cache is at host path
// from (inside r): the mark of the boot Ignition ran in. An error other
// than its absence counts as present: adopt goes on as before, and the
// record says what it cannot.
func cachePresent(r *ondisk.Root, from string) bool {
	f, err := r.Open(from)
	if err == nil {
		f.Close()
	}
	return !errors.Is(err, fs.ErrNotExist)
}

// adoptRecord writes the first-boot record of the adopted config: now,
// right after Ignition, is the one time the nodes are as it left them.
func adoptRecord(r *ondisk.Root, cfg, record string, std Stdio) int {
	var key []byte
	if dir := digestkey.Dir(); dir != "" {
		var err error
		if key, err = digestkey.Load(dir); err != nil {
			fmt.Fprintf(std.Err, "drift-monitor adopt: warning: %s: the bases of append-only files are not recorded\n", escape.Text(err.Error()))
		}
	}
	res, problems, err := adopt.Record(r, cfg, record, key, memlimit.ConfigLoad)
	for _, p := range problems {
		fmt.Fprintf(std.Err, "drift-monitor adopt: warning: %s\n", escape.Text(p))
	}
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor adopt: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	switch res {
	case adopt.Adopted:
		fmt.Fprintf(std.Out, "recorded what %s leaves to the node in %s\n", escape.Text(r.Join(cfg)), escape.Text(r.Join(record)))
	case adopt.Kept:
		fmt.Fprintf(std.Out, "%s exists: left as it is\n", escape.Text(r.Join(record)))
	}
	return 0
}
