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
// Ignition's newest, experimental, spec ("3.6.0-experimental" for Ignition
// 2.24, "3.4.0-experimental" for Debian's 2.14). The base configs
// (/usr/lib/ignition/base.d, base.platform.d) are not in it: Engine.Run
// merges them at every stage, after reading the cache.
// So the saved fragment declares what the host's owner asked for, not what
// the image adds.
//
// What it promises: the fragment is written once, never over an existing
// file of that name (whatever it is: a config, a symlink, a directory), with
// mode 0600 in a directory it creates 0700 (the config holds secrets), and
// atomically: a reader sees no fragment or the whole one, and after a crash
// at most a temporary file (not a fragment name) is left behind. The bytes
// are the cache's, unchanged. The fragment's name ends in
// desired.CacheSuffix, which has the loader read it as Ignition's cache:
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
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/errpath"
)

// Default host paths.
const (
	// DefaultSource is Ignition's config cache (see the package doc).
	DefaultSource = "/run/ignition.json"
	// DefaultDest is the fragment it becomes, in the admin's desired-state
	// directory. "10-" sorts it before the configs an admin adds, which
	// therefore override it; the suffix says it is Ignition's cache (see
	// desired.CacheSuffix).
	DefaultDest = desired.AdminDir + "/10-firstboot" + desired.CacheSuffix
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

// Adopt copies the file src to dst, both host paths: see the package doc.
func Adopt(src, dst string) (Result, error) {
	dir := filepath.Dir(dst)
	if err := mkdirs(dir, 0o700); err != nil {
		return 0, err
	}
	if _, err := os.Lstat(dst); err == nil {
		return Kept, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, &Error{"checking", dst, unwrap(err)}
	}
	raw, err := readSource(src)
	if err != nil {
		return 0, err
	}
	// Parsed as dst's name will have the daemon parse it (as a cache, or
	// as a JSON config); named src in messages, the file that exists.
	parse := desired.Parse
	if desired.IsCacheName(dst) {
		parse = desired.ParseCache
	}
	if _, err := parse(src, raw); err != nil {
		return 0, &Error{"adopting", src, fmt.Errorf("%w: %v", ErrNotLoadable, err)}
	}
	return install(raw, dst)
}

func readSource(src string) ([]byte, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, &Error{"reading", src, unwrap(err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &Error{"reading", src, unwrap(err)}
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{"reading", src, fmt.Errorf("not a regular file (%s)", st.Mode().Type())}
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, &Error{"reading", src, unwrap(err)}
	}
	if len(raw) > maxSize {
		return nil, &Error{"reading", src, fmt.Errorf("larger than %d bytes", maxSize)}
	}
	return raw, nil
}

// install writes raw to a temporary file beside dst, makes it durable, and
// gives it dst's name only if that name is free.
func install(raw []byte, dst string) (Result, error) {
	dir := filepath.Dir(dst)
	// The temporary name ends in .tmp, which is no fragment name: the
	// daemon, watching the directory, does not load it half-written.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return 0, &Error{"creating", dir, unwrap(err)}
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes it 0600 already, before umask; say so anyway, since
	// the mode is the promise.
	if err := tmp.Chmod(0o600); err != nil {
		return 0, &Error{"creating", tmp.Name(), unwrap(err)}
	}
	if _, err := tmp.Write(raw); err != nil {
		return 0, &Error{"writing", tmp.Name(), unwrap(err)}
	}
	if err := tmp.Sync(); err != nil {
		return 0, &Error{"writing", tmp.Name(), unwrap(err)}
	}
	if err := tmp.Close(); err != nil {
		return 0, &Error{"writing", tmp.Name(), unwrap(err)}
	}
	res, err := renameNoReplace(tmp.Name(), dst)
	if err != nil {
		return 0, err
	}
	done = res == Adopted
	if !done {
		return res, nil // the deferred func removes the temporary file
	}
	if err := syncDir(dir); err != nil {
		return 0, err
	}
	return Adopted, nil
}

// renameNoReplace renames tmp to dst unless dst exists, atomically:
// rename(2) would replace a file that appeared since Adopt looked.
// RENAME_NOREPLACE is in Linux 3.15 for the usual file systems; where a file
// system lacks it, link(2) is just as atomic and fails just as well on an
// existing name.
func renameNoReplace(tmp, dst string) (Result, error) {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if err = os.Link(tmp, dst); err == nil {
			if rerr := os.Remove(tmp); rerr != nil {
				return 0, &Error{"removing", tmp, unwrap(rerr)}
			}
		}
		err = unwrap(err)
	}
	switch {
	case err == nil:
		return Adopted, nil
	case errors.Is(err, unix.EEXIST):
		return Kept, nil
	}
	return 0, &Error{"renaming", dst, err}
}

// mkdirs creates dir and its missing parents: dir with mode 0700 (it holds
// secrets), the parents 0755, whatever the umask. A directory that exists
// keeps its mode: the package (or the admin) decided it.
func mkdirs(dir string, mode fs.FileMode) error {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return &Error{"creating", dir, errors.New("not a directory")}
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirs(parent, 0o755); err != nil {
			return err
		}
	}
	return mkdir(dir, mode)
}

func mkdir(dir string, mode fs.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return &Error{"creating", dir, unwrap(err)}
	}
	if err := os.Chmod(dir, mode); err != nil {
		return &Error{"creating", dir, unwrap(err)}
	}
	return syncDir(filepath.Dir(dir))
}

// syncDir makes a directory's entries durable: a renamed file's new name
// survives a power cut only once its directory is synced.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return &Error{"syncing", dir, unwrap(err)}
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return &Error{"syncing", dir, unwrap(err)}
	}
	return nil
}

func unwrap(err error) error { return errpath.Strip(err) }
