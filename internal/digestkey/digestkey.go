// Package digestkey keeps the host's digest key: the secret that keys the
// digests reports give for content that must not be shown (model.Key), so
// that the daemon's records and a `check` run by root name the same content
// with the same digest, and nobody without the key can tell what it is.
//
// It promises: the key is made on first use, at once (a reader never sees a
// partial key; two first users end up with one key, never each their own),
// in a file readable by its owner only (0600, in a directory made 0700), and
// is never replaced; a key file that is not a regular file of the caller's,
// that others may read or write, or that does not hold a key, is refused,
// not used. It does not promise secrecy from root, nor that the key
// outlives its directory: a new key makes new digests, which no longer
// compare with older records.
package digestkey

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/fsx"
)

// FileName is the key's file in its directory.
const FileName = "digest.key"

// DefaultDir is root's state directory, the service's StateDirectory=.
const DefaultDir = "/var/lib/drift-monitor"

// Size is the key's length in bytes (HMAC-SHA256's block is 64; its output,
// and the strength asked of the key, 32).
const Size = 32

// Dir is where this process's key lives: the state directory systemd gives
// the service ($STATE_DIRECTORY, from StateDirectory=) or, for root,
// DefaultDir; "" for anyone else, who has no key.
func Dir() string {
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		d, _, _ = strings.Cut(d, ":")
		return d
	}
	if os.Geteuid() == 0 {
		return DefaultDir
	}
	return ""
}

// Load returns the key in dir, making it first if there is none (and dir
// itself, 0700, if its parent exists).
func Load(dir string) ([]byte, error) {
	p := filepath.Join(dir, FileName)
	k, err := read(p)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := create(dir, p); err != nil {
		return nil, err
	}
	return read(p)
}

// create writes a new key beside p and links it to p: a link never
// replaces a key another process made meanwhile (EEXIST: that one is
// everybody's key), and p never names a partial file.
func create(dir, p string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making the digest key's directory %s: %w", dir, err)
	}
	raw := make([]byte, Size)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("making the digest key %s: %w", p, err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("making the digest key %s: %w", p, err)
	}
	defer unix.Close(dfd)
	err = fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{
		Name: FileName, Pattern: "." + FileName + ".*", Mode: 0o600, How: fsx.LinkOnce,
	}, fsx.Bytes([]byte(hex.EncodeToString(raw)+"\n")))
	var fe *fsx.Error
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		// EEXIST: another process made the key first; that one is
		// everybody's key.
		return nil
	case errors.As(err, &fe) && fe.Op == "writing":
		return fmt.Errorf("writing the digest key %s: %w", filepath.Join(dir, fe.Name), fe.Err)
	case errors.As(err, &fe) && fe.Op == "syncing":
		// The key is linked and will be read; a power cut before the
		// directory reaches the disk only makes a new key, which the
		// package does not promise against.
		return nil
	}
	return fmt.Errorf("making the digest key %s: %w", p, err)
}

// read reads a key file, refusing one that may not be the caller's secret.
func read(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the digest key %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the digest key %s: %w", p, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("digest key %s: not a regular file", p)
	case st != nil && int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("digest key %s: owned by uid %d, not by this process's %d", p, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("digest key %s: mode %04o lets others at it: refused (remove it to make a new key)", p, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 2*Size+2))
	if err != nil {
		return nil, fmt.Errorf("reading the digest key %s: %w", p, err)
	}
	k, err := hex.DecodeString(strings.TrimSuffix(string(b), "\n"))
	if err != nil || len(k) != Size {
		return nil, fmt.Errorf("digest key %s: not %d hex-encoded bytes", p, Size)
	}
	return k, nil
}
