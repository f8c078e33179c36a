// Package image finds what the OS image says the host's /etc should be —
// the baseline — and compares the live /etc with it, by the rules of the
// tool that owns that baseline:
//
//   - on an ostree host (Fedora CoreOS, RHEL CoreOS, OpenShift nodes,
//     bootc's ostree backend; /run/ostree-booted exists) the booted
//     deployment's /usr/etc, compared by `ostree admin config-diff`'s rules
//     (Tree); with a transient /etc (etc.transient) the same /usr/etc, the
//     lower layer of the overlay whose upper directory holds the boot's
//     changes, compared with the merged /etc: what the upper directory's
//     whiteouts and opaque directories hide of /usr/etc is missing there
//     (overlayfs.rst, "whiteouts and opaque directories"), so the upper
//     directory, whose trusted.overlay.* xattrs need CAP_SYS_ADMIN, need not
//     be read;
//   - on bootc's composefs-native backend (a composefs= kernel argument,
//     no /usr/etc) the image's own /etc, under the bind mount of the
//     deployment's state onto /etc: read from a copy of the root mount
//     without its submounts where this process may make one (as root),
//     else "baseline unavailable", said so;
//   - on an rpm host (an rpm database in the root, no ostree) the rpm
//     database, verified as `rpm -V` verifies (RPM), for the packaged files
//     under /etc.
//
// Files a merged systemd-confext provides belong to that extension
// (Extensions). Everything is read through the root (ondisk.Root): `check
// --root` reads the tree mounted there, paths are host paths.
//
// It promises to read only: the rpm database through `rpm -qa` (which
// opens it read-only), the trees through descriptors, never following a
// link under /etc. It does not promise a consistent view: an rpm
// transaction or a new deployment may change the baseline while it is read
// (Baseline.Stamp tells versions apart, and the daemon holds its reports
// while a transaction runs). It does not decide what is worth reporting:
// Classify does, with the desired state.
package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// Host paths.
const (
	// EtcDir is the live /etc; UsrEtcDir an ostree deployment's pristine
	// copy of its image's /etc (ostree-sysroot-deploy.c,
	// prepare_deployment_etc: the tree's /etc moves there, and the new
	// /etc starts as a copy of it).
	EtcDir    = "/etc"
	UsrEtcDir = "/usr/etc"
	cmdline   = "/proc/cmdline"
)

// HostKind is what kind of host the baseline was found on.
type HostKind string

const (
	KindOstree       HostKind = "ostree"
	KindTransientEtc HostKind = "ostree-transient-etc"
	KindComposefs    HostKind = "bootc-composefs"
	KindRPM          HostKind = "rpm"
	// KindNone: no OS image to compare with (no ostree, no bootc, no rpm
	// database).
	KindNone HostKind = "none"
)

// Baseline is the image's /etc of one host, found by Find.
type Baseline struct {
	Kind HostKind
	// Source says in words what the baseline is ("the booted deployment's
	// /usr/etc"), for reports.
	Source string
	// Tree compares a pristine /etc with the live one (ostree, a
	// transient /etc, a readable composefs image); RPM verifies the
	// packaged files (rpm hosts). At most one is set.
	Tree *Tree
	RPM  *RPM
	// Unavailable says why nothing can be compared on a host of Kind
	// (neither Tree nor RPM is set); "" otherwise.
	Unavailable string
	// Upper is the transient /etc's overlay upper directory (host path).
	Upper string
	// Extensions are the merged confexts' files.
	Extensions *Extensions
	// Stamp names this version of the baseline: a new deployment, an rpm
	// transaction or a confext refresh changes it.
	Stamp string

	closers []func()
}

// Close releases what the baseline holds open (a copy of the root mount).
func (b *Baseline) Close() {
	for _, c := range b.closers {
		c()
	}
	b.closers = nil
}

// Available reports whether there is anything to compare.
func (b *Baseline) Available() bool { return b.Tree != nil || b.RPM != nil }

// Diff compares the whole live /etc with the baseline.
func (b *Baseline) Diff(ctx context.Context, r *ondisk.Root) ([]Change, error) {
	switch {
	case b.Tree != nil:
		return b.Tree.Diff(ctx)
	case b.RPM != nil:
		return b.RPM.Verify(ctx, r)
	}
	return nil, nil
}

// DiffAt compares what a change at host path p can have affected, as
// Tree.DiffAt says (on rpm hosts the scope is p itself).
func (b *Baseline) DiffAt(ctx context.Context, r *ondisk.Root, p string) (string, []Change, error) {
	switch {
	case b.Tree != nil:
		return b.Tree.DiffAt(ctx, p)
	case b.RPM != nil:
		cs, err := b.RPM.VerifyAt(ctx, r, p)
		return p, cs, err
	}
	return p, nil, nil
}

// Find finds the baseline of the root, without configuration. An error is
// a baseline that exists and could not be read (an rpm database rpm
// refuses); a host without one is KindNone, and one whose baseline cannot
// be reached says why in Unavailable.
func Find(ctx context.Context, r *ondisk.Root) (*Baseline, error) {
	b, _, err := findDiff(ctx, r, false)
	return b, err
}

// FindDiff is Find, then the baseline's Diff of the whole /etc (none
// where the baseline is not available). On an rpm host each file is
// verified as the rpm query reads its record: the verification runs beside
// the query instead of after it.
func FindDiff(ctx context.Context, r *ondisk.Root) (*Baseline, []Change, error) {
	return findDiff(ctx, r, true)
}

func findDiff(ctx context.Context, r *ondisk.Root, diff bool) (*Baseline, []Change, error) {
	var ahead *verifyAhead
	b, err := find(ctx, r, func() (*verifyAhead, error) {
		if !diff {
			return nil, nil
		}
		a, err := startVerifyAhead(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("comparing %s with the image: %w", EtcDir, err)
		}
		ahead = a
		return a, nil
	})
	if ahead != nil {
		ahead.finish()
	}
	if err != nil {
		return nil, nil, err
	}
	if b.Available() {
		x, err := ReadExtensions(r)
		if err != nil {
			b.Close()
			return nil, nil, err
		}
		b.Extensions = x
		b.Stamp += x.stamp()
	}
	if !diff || !b.Available() {
		return b, nil, nil
	}
	var cs []Change
	if ahead != nil && b.RPM != nil {
		cs, err = ahead.changes(b.RPM)
	} else {
		cs, err = b.Diff(ctx, r)
	}
	if err != nil {
		b.Close()
		return nil, nil, fmt.Errorf("comparing %s with the image: %w", EtcDir, err)
	}
	return b, cs, nil
}

// find finds the baseline; on an rpm host it calls ahead first, for what
// to hand the query's records to (nil: nothing).
func find(ctx context.Context, r *ondisk.Root, ahead func() (*verifyAhead, error)) (*Baseline, error) {
	booted, ostree, err := osstate.ReadBooted(r)
	if err != nil {
		return nil, err
	}
	if ostree {
		return findOstree(r, booted)
	}
	if arg, ok := composefsArg(r); ok {
		return findComposefs(r, arg)
	}
	dbdir, dbfile := osstate.RPMDB(r)
	if dbdir == "" {
		return &Baseline{Kind: KindNone, Unavailable: "no OS image to compare /etc with: not booted through ostree or bootc, and no rpm database"}, nil
	}
	a, err := ahead()
	if err != nil {
		return nil, err
	}
	rpm, err := queryRPM(ctx, r, dbdir, a)
	if errors.Is(err, osstate.ErrNoRPM) {
		return &Baseline{Kind: KindRPM, Unavailable: "the rpm database " + dbfile + " cannot be read: " + err.Error()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the image's baseline: %w", err)
	}
	return &Baseline{Kind: KindRPM, Source: "the rpm database " + dbfile, RPM: rpm, Stamp: "rpm:" + identity(r, dbfile)}, nil
}

// findOstree: the booted deployment's /usr/etc, as the root has it.
// ostree-prepare-root makes the deployment (or, with composefs, its
// composefs image) the root, with /etc the deployment's own
// (otcore-prepare-root.c, otcore_mount_etc: a bind mount of the
// deployment's etc, or with etc.transient an overlay of usr/etc).
func findOstree(r *ondisk.Root, booted osstate.Booted) (*Baseline, error) {
	b := &Baseline{Kind: KindOstree, Source: "the booted deployment's " + UsrEtcDir}
	if booted.TransientEtc != "" {
		b.Kind = KindTransientEtc
		b.Upper = path.Join(booted.TransientEtc, "upper")
		b.Source = "the booted deployment's " + UsrEtcDir + " (under the transient /etc's overlay, whose upper directory is " + b.Upper + ")"
	}
	if !isDir(r, UsrEtcDir) {
		b.Unavailable = "the booted deployment has no " + UsrEtcDir
		return b, nil
	}
	b.Tree = &Tree{Root: r, Base: UsrEtcDir, Live: EtcDir}
	b.Stamp = "ostree:" + identity(r, UsrEtcDir)
	return b, nil
}

// composefsArg is bootc's composefs= kernel argument (bootc-dev/bootc
// crates/lib/src/composefs_consts.rs, COMPOSEFS_CMDLINE), which the
// composefs-native backend boots with instead of ostree=.
func composefsArg(r *ondisk.Root) (string, bool) {
	b, err := r.ReadFile(cmdline)
	if err != nil {
		return "", false
	}
	for _, a := range model.SplitKernelArguments(strings.TrimSpace(string(b))) {
		if v, ok := strings.CutPrefix(a, "composefs="); ok {
			return v, true
		}
	}
	return "", false
}

// findComposefs: bootc's composefs-native backend keeps no /usr/etc; the
// image's /etc is the composefs mount's own, which the deployment's
// state (/sysroot/state/deploy/ID/etc) is bind-mounted over (bootc-dev/bootc
// docs/src/experimental-composefs.md; crates/lib/src/bootc_composefs/
// finalize.rs mounts the image by its digest to read it). A copy of the
// root mount without its submounts (open_tree(2), OPEN_TREE_CLONE without
// AT_RECURSIVE) shows that /etc; making one needs CAP_SYS_ADMIN in the
// mount's namespace.
func findComposefs(r *ondisk.Root, digest string) (*Baseline, error) {
	short := digest
	if len(short) > 12 {
		short = short[:12]
	}
	b := &Baseline{Kind: KindComposefs, Source: "the composefs image " + short + "…'s own /etc"}
	if isDir(r, UsrEtcDir) {
		// A composefs image of the ostree layout: its /usr/etc is the
		// baseline, as on any ostree host.
		b.Source = "the composefs image's " + UsrEtcDir
		b.Tree = &Tree{Root: r, Base: UsrEtcDir, Live: EtcDir}
		b.Stamp = "composefs:" + digest
		return b, nil
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, r.Dir(), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		b.Unavailable = "baseline unavailable: bootc's composefs backend keeps the image's /etc only under the mount of the deployment's own /etc, and a copy of the root mount without it cannot be made (open_tree: " + errText(err) + "; it needs CAP_SYS_ADMIN)"
		return b, nil
	}
	image, err := ondisk.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		unix.Close(fd)
		b.Unavailable = "baseline unavailable: " + err.Error()
		return b, nil
	}
	b.closers = append(b.closers, func() { image.Close(); unix.Close(fd) })
	if !isDir(image, EtcDir) {
		b.Close()
		b.Unavailable = "baseline unavailable: the composefs image has no /etc"
		return b, nil
	}
	b.Tree = &Tree{Root: r, BaseRoot: image, Base: EtcDir, Live: EtcDir}
	b.Stamp = "composefs:" + digest
	return b, nil
}

func isDir(r *ondisk.Root, p string) bool {
	fd, err := r.OpenDir(p)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// identity names a version of a host path: device, inode, size, change
// time. An rpm transaction rewrites the database; a new deployment is
// another directory.
func identity(r *ondisk.Root, p string) string {
	dir, name := path.Split(p)
	fd, err := r.OpenDir(path.Clean(dir))
	if err != nil {
		return "?"
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, 0); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "-"
		}
		return "?"
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d", st.Dev, st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec)
}
