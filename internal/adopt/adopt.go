// Package adopt saves the Ignition config that provisioned a host as one of
// drift-monitor's desired configs, so that a host whose image contains
// drift-monitor watches its own provisioning config from its first boot.
//
// What it saves: Ignition's config cache, /run/ignition.json (ignition's
// internal/main.go, flag -config-cache). The fetch stages write it in the
// initramfs (internal/exec/engine.go, acquireProviderConfig:
// renameio.WriteFile(e.ConfigCache, b, 0640)) and every later stage reads
// it back instead of fetching again; /run survives the switch to the real
// root, and nothing removes the file on a normal first boot (Fedora CoreOS
// does only in its emergency shell on Secure Execution hosts,
// fedora-coreos-config: overlay.d/05core/usr/lib/dracut/modules.d/
// 99emergency-shell-setup/emergency-shell.sh). It holds the user config as
// Ignition rendered it (internal/exec/config_fetcher.go, RenderConfig): the
// children of ignition.config.replace and ignition.config.merge already
// fetched and merged in (the merge list itself kept), re-encoded as JSON of
// Ignition's newest, experimental, spec ("3.7.0-experimental" for Ignition
// 2.26 and 2.27, "3.6.0-experimental" for 2.22 to 2.25, "3.4.0-experimental"
// for Debian's 2.14). The base configs
// (/usr/lib/ignition/base.d, base.platform.d) are not in it: Engine.Run
// merges them at every stage, after reading the cache.
// So the saved fragment declares what the host's owner asked for, not what
// the image adds.
//
// What it promises: both paths are host paths resolved inside a root
// (ondisk.Root), so that a link in a tree mounted elsewhere never leads to
// the running host's files; the fragment is written once, never over an existing
// file of that name (whatever it is: a config, a symlink, a directory), with
// mode 0600 in a directory it creates 0700 (the config holds secrets), and
// atomically: a reader sees no fragment or the whole one, and after a crash
// at most a temporary file (not a fragment name) is left behind. The bytes
// are the cache's, unchanged. The fragment's name ends in
// discover.CacheSuffix, which has the loader read it as Ignition's cache:
// its experimental spec taken as the stable spec with the same fields, and
// the children it lists not resolved again (they are merged in). It refuses
// a cache that the loader refuses under the fragment's name (a field the
// stable spec lacks, for one): a fragment the daemon refuses would stop it
// from checking anything; the unit then fails, naming the file and the
// field, rather than blind the daemon.
//
// What it does not: it does not decide whether this is a first boot (the
// unit's ConditionFirstBoot= does), fetch anything, or look at children of
// ignition.config.merge.
package adopt

import (
	"errors"
	"fmt"
	"io"
	"path"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/fsx"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Default host paths.
const (
	// DefaultSource is Ignition's config cache (see the package doc).
	DefaultSource = "/run/ignition.json"
	// DefaultDest is the fragment it becomes, in the admin's desired-state
	// directory. "10-" sorts it before the configs an admin adds, which
	// therefore override it; the suffix says it is Ignition's cache (see
	// discover.CacheSuffix).
	DefaultDest = model.AdminDir + "/10-firstboot" + discover.CacheSuffix
)

// maxSize bounds what is read from the cache: an Ignition config is
// kilobytes, at most a few megabytes of inline files.
const maxSize = 64 << 20

// Result says what Adopt did.
type Result int

const (
	// Adopted: the fragment was written.
	Adopted Result = iota
	// Kept: a file of the fragment's name was there already and is left
	// as it is.
	Kept
)

// Error is a step of Adopt that failed, with the file it concerns.
type Error struct {
	Op   string // "reading", "creating", ...
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// ErrNotLoadable is wrapped by the Error of a cache that the loader refuses.
var ErrNotLoadable = errors.New("drift-monitor cannot load it as a desired config")

// Adopt copies the file at host path src to host path dst, both resolved
// inside root (a symbolic link in either leads where it would if root were
// /, never out of it): see the package doc. Errors name the paths inside
// root (root.Join).
func Adopt(root *ondisk.Root, src, dst string) (Result, error) {
	if !path.IsAbs(src) || !path.IsAbs(dst) {
		return 0, &Error{"adopting", src + " as " + dst, errors.New("want absolute host paths")}
	}
	dst = path.Clean(dst)
	if !discover.IsConfigName(dst) {
		// Written, it would be ignored (or taken for a child's copy):
		// the host would look adopted and be watched against nothing.
		return 0, &Error{"adopting as", root.Join(dst), errors.New("not a name the daemon loads a config from (.ign, .json, .yaml or .yml, not hidden)")}
	}
	// Everything is checked before anything is written: a fragment
	// already there, then the cache (who could have written it, whether
	// the daemon can load it); only then is the directory made.
	switch kept, err := present(root, dst); {
	case err != nil:
		return 0, err
	case kept:
		return Kept, nil
	}
	raw, err := readSource(root, src)
	if err != nil {
		return 0, err
	}
	// Parsed under dst's name, as the daemon will parse it: its name says
	// JSON or YAML, a cache or not. The error is src's, the file that
	// exists; the position in it is the same in both.
	parse := desired.Parse
	if discover.IsCacheName(dst) {
		parse = desired.ParseCache
	}
	if _, err := parse(root.Join(dst), raw); err != nil {
		return 0, &Error{"adopting", root.Join(src), fmt.Errorf("%w: %v", ErrNotLoadable, err)}
	}
	dirfd, err := mkdirs(root, path.Dir(dst), 0o700)
	if err != nil {
		return 0, err
	}
	defer unix.Close(dirfd)
	return install(root, dirfd, raw, dst)
}

// present reports whether something stands at host path dst inside root
// (whatever it is: a config, a link, a directory), without making
// anything: a missing directory on the way holds nothing, and one that
// cannot be opened is left to mkdirs to name.
func present(root *ondisk.Root, dst string) (bool, error) {
	dirfd, err := root.OpenDir(path.Dir(dst))
	if err != nil {
		return false, nil
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, path.Base(dst), &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return true, nil
	} else if !errors.Is(err, unix.ENOENT) {
		return false, &Error{"checking", root.Join(dst), err}
	}
	return false, nil
}

func readSource(root *ondisk.Root, src string) ([]byte, error) {
	name := root.Join(src)
	f, err := root.Open(src) // a regular file only
	if err != nil {
		return nil, &Error{"reading", name, unwrap(err)}
	}
	defer f.Close()
	// Ignition writes its cache 0640, root's, in /run: one another user
	// could have written is no config of Ignition's.
	if err := discover.CheckWriters(root, src, f); err != nil {
		var le *configerr.LoadError
		if errors.As(err, &le) {
			return nil, &Error{"adopting", le.File, le.Err}
		}
		return nil, &Error{"adopting", name, err}
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, &Error{"reading", name, unwrap(err)}
	}
	if len(raw) > maxSize {
		return nil, &Error{"reading", name, fmt.Errorf("larger than %d bytes", maxSize)}
	}
	return raw, nil
}

// install writes raw to a temporary file in dirfd (dst's directory), makes
// it durable, and gives it dst's name only if that name is free.
func install(root *ondisk.Root, dirfd int, raw []byte, dst string) (Result, error) {
	dir, base := path.Split(dst)
	dirName := root.Join(path.Clean(dir))
	// The temporary name ends in .tmp, which is no fragment name: the
	// daemon, watching the directory, does not load it half-written. Mode
	// 0600 is set through the descriptor, whatever the umask: the mode is
	// the promise.
	err := fsx.WriteFile(fsx.Sys{}, dirfd, fsx.File{
		Name: base, Pattern: "." + base + ".*.tmp", Mode: 0o600, How: fsx.NoReplace,
	}, fsx.Bytes(raw))
	var fe *fsx.Error
	switch {
	case err == nil:
		return Adopted, nil
	case !errors.As(err, &fe):
		return 0, &Error{"writing", root.Join(dst), err}
	case fe.Op == "renaming" && errors.Is(err, unix.EEXIST):
		return Kept, nil
	case fe.Op == "renaming":
		return 0, &Error{"renaming", root.Join(dst), fe.Err}
	case fe.Name == ".":
		return 0, &Error{fe.Op, dirName, fe.Err}
	}
	return 0, &Error{fe.Op, path.Join(dirName, fe.Name), fe.Err}
}

// mkdirs opens the host directory dir inside root, creating it and its
// missing parents: dir with mode (0700: it holds secrets), the parents
// 0755, whatever the umask (fsx.MkdirAll). The descriptor is O_PATH; the
// caller closes it.
func mkdirs(root *ondisk.Root, dir string, mode uint32) (int, error) {
	fd, err := fsx.MkdirAll(root.OpenDir, dir, mode, 0o755)
	var fe *fsx.Error
	if errors.As(err, &fe) {
		return -1, &Error{fe.Op, root.Join(fe.Name), unwrap(fe.Err)}
	}
	return fd, err
}

func unwrap(err error) error { return errpath.Strip(err) }
