package image

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/fsx"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/writers"
)

// The first boot's record of /etc: what the host's /etc differed in from
// its image once the first boot was up (`drift-monitor adopt --image`, run
// by drift-monitor-adopt-image.service after multi-user.target on the
// first boot): the machine's own machine ID and host keys, the accounts
// its first boot added, the units its presets enabled. Each path is kept
// with the node it was then (type, mode, owner, group, link target, size,
// and a content digest keyed with the host's digest key, so that the
// record names contents without holding them, as the first-boot record
// of package firstboot does). A path found as it was recorded is
// "first-boot", not undeclared; one that changed since is undeclared
// again. A later adopt --image extends the record with paths it lacks and
// never replaces one it has: a change made after the first boot cannot be
// recorded away.

// RecordPath is the record's host path: in the daemon's state directory
// (the digest key's), not in /etc, where the record would itself be a
// difference from the image.
const RecordPath = "/var/lib/drift-monitor/image-firstboot.json"

// RecordVersion is the record's format.
const RecordVersion = 1

// maxRecord bounds what is read of a record.
const maxRecord = 64 << 20

// Record is the first boot's record of /etc.
type Record struct {
	Version int `json:"version"`
	// KeyID names the digest key the digests are keyed with
	// (firstboot.KeyIDOf); "" when there was none (no content is
	// recorded).
	KeyID    string     `json:"key_id,omitempty"`
	Baseline HostKind   `json:"baseline"`
	Paths    []Recorded `json:"paths"`

	index map[string]*Recorded
}

// Recorded is one path of the record.
type Recorded struct {
	Path string `json:"path"`
	// Change is "added", "modified" or "removed".
	Change string `json:"change"`
	// The node then, unless removed.
	Type   string `json:"type,omitempty"`
	Mode   string `json:"mode,omitempty"`
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	Target string `json:"target,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Digest is the content's keyed digest (model.Key.Digest, as text
	// "hmac-sha256:HEX"); none for anything but a regular file, or
	// without a key.
	Digest model.Digest `json:"digest,omitzero"`
	// Lines are an account file's lines by account name (accountLines),
	// keyed with the same key: the other lines than a declared account's
	// are then compared with the first boot's whatever the declared ones
	// became (useradd appends a user put back at the file's end).
	Lines map[string]AccountLine `json:"lines,omitempty"`
}

func typeName(t ondisk.FileType) string {
	switch t {
	case ondisk.Regular:
		return "regular"
	case ondisk.Directory:
		return "directory"
	case ondisk.Symlink:
		return "symlink"
	}
	return "special"
}

// Recorder records and matches nodes with one digest key.
type Recorder struct {
	Root *ondisk.Root
	// Key is the host's digest key (the zero Key: none, and no content is
	// recorded or matched).
	Key model.Key
}

// keyID names the recorder's key in a record (firstboot.KeyIDOf: the
// first boot's two records name a key alike).
func (rc *Recorder) keyID() string { return firstboot.KeyIDOf(rc.Key) }

// Extend adds to rec (nil: a new record) the changes it has no path of;
// it returns how many it added.
func (rc *Recorder) Extend(rec *Record, kind HostKind, cs []Change) (*Record, int, error) {
	if rec == nil {
		rec = &Record{Version: RecordVersion, KeyID: rc.keyID(), Baseline: kind}
	}
	rec.reindex()
	added := 0
	for i := range cs {
		c := &cs[i]
		if c.Err != "" || rec.index[c.Path] != nil {
			continue
		}
		n := Recorded{Path: c.Path, Change: c.Op.String()}
		if c.Op != Removed && c.Live != nil {
			n.Type, n.Mode, n.UID, n.GID, n.Target = typeName(c.Live.Type), model.FormatMode(c.Live.Mode|c.Live.Fmt), c.Live.UID, c.Live.GID, c.Live.Target
			if c.Live.Type == ondisk.Regular {
				n.Size = c.Live.Size
				d, err := rc.digest(c.Path)
				if err != nil {
					continue // changed or gone since: not what the boot left
				}
				n.Digest = d
				if f, ok := accountFiles[c.Path]; ok {
					if raw, err := rc.Root.ReadFile(c.Path); err == nil {
						n.Lines = accountLines(f, raw, digester(rc.Key))
					}
				}
			}
		}
		rec.Paths = append(rec.Paths, n)
		rec.index[n.Path] = &rec.Paths[len(rec.Paths)-1]
		added++
	}
	sort.Slice(rec.Paths, func(i, j int) bool { return rec.Paths[i].Path < rec.Paths[j].Path })
	rec.index = nil
	return rec, added, nil
}

func (rec *Record) reindex() {
	rec.index = make(map[string]*Recorded, len(rec.Paths))
	for i := range rec.Paths {
		rec.index[rec.Paths[i].Path] = &rec.Paths[i]
	}
}

// lookup is the record's node of host path p; nil without one.
func (rec *Record) lookup(p string) *Recorded {
	if rec == nil {
		return nil
	}
	if rec.index == nil {
		rec.reindex()
	}
	return rec.index[p]
}

// Matches reports whether a change leaves its path as the record has it.
func (rc *Recorder) Matches(rec *Record, c *Change) bool {
	if rec == nil || c.Err != "" {
		return false
	}
	if rec.index == nil {
		rec.reindex()
	}
	n := rec.index[c.Path]
	if n == nil {
		return false
	}
	if c.Op == Removed || c.Live == nil {
		return n.Change == Removed.String()
	}
	l := c.Live
	if n.Change == Removed.String() || n.Type != typeName(l.Type) || n.Mode != model.FormatMode(l.Mode|l.Fmt) ||
		n.UID != l.UID || n.GID != l.GID || n.Target != l.Target {
		return false
	}
	if l.Type != ondisk.Regular {
		return true
	}
	if n.Size != l.Size || n.Digest == (model.Digest{}) || rec.KeyID != rc.keyID() {
		return false
	}
	d, err := rc.digest(c.Path)
	return err == nil && d.Equal(n.Digest)
}

// digest is the keyed digest of the regular file at host path p.
func (rc *Recorder) digest(p string) (model.Digest, error) {
	var none model.Digest
	if !rc.Key.Valid() {
		return none, errors.New("no digest key")
	}
	dir, name := path.Split(p)
	dfd, err := rc.Root.OpenDir(path.Clean(dir))
	if err != nil {
		return none, err
	}
	defer unix.Close(dfd)
	fd, err := openRegular(dfd, name)
	if err != nil {
		return none, err
	}
	defer unix.Close(fd)
	h := sha256.New()
	if err := hashFile(fd, h, make([]byte, compareChunk)); err != nil {
		return none, err
	}
	return rc.Key.Digest([sha256.Size]byte(h.Sum(nil))), nil
}

// LoadRecord reads the record at host path p inside r; nil, and no
// error, when there is none. A record that a user other than root (or the
// root tree's owner) could have written, it or a node on its path, is
// refused (package writers): it decides what is not reported. Nothing but
// white space may follow the record (json.Unmarshal's rule).
func LoadRecord(r *ondisk.Root, p string) (*Record, error) {
	f, err := r.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := writers.Check(r, p, f, writers.Options{}); err != nil {
		return nil, fmt.Errorf("%s: %w: not used", p, err)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxRecord {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, maxRecord)
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if rec.Version != RecordVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", p, rec.Version, RecordVersion)
	}
	for _, n := range rec.Paths {
		if _, err := strconv.ParseUint(n.Mode, 8, 32); n.Mode != "" && err != nil {
			return nil, fmt.Errorf("%s: %s: mode %q", p, n.Path, n.Mode)
		}
	}
	return &rec, nil
}

// SaveRecord writes rec at host path p inside r, atomically, mode 0600,
// in a directory made 0700 if it is missing.
func SaveRecord(r *ondisk.Root, p string, rec *Record) error {
	raw, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	dir, base := path.Split(p)
	dfd, err := fsx.MkdirAll(r.OpenDir, path.Clean(dir), 0o700, 0o755)
	if err != nil {
		return fmt.Errorf("%s: %w", path.Clean(dir), err)
	}
	defer unix.Close(dfd)
	if err := fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{Name: base, Pattern: "." + base + ".*.tmp", Mode: 0o600, How: fsx.Replace}, fsx.Bytes(raw)); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// RecordNow records the differences of the root's /etc from its image
// that the record lacks (see the package's first-boot record): every
// change but those at runtime-written paths.
func RecordNow(ctx context.Context, r *ondisk.Root, b *Baseline, rc *Recorder, p string) (added int, err error) {
	if !b.Available() {
		return 0, errors.New(b.Unavailable)
	}
	rec, err := LoadRecord(r, p)
	if err != nil {
		return 0, err
	}
	cs, err := b.Diff(ctx, r)
	if err != nil {
		return 0, err
	}
	rt := ShippedRuntime()
	keep := cs[:0]
	for _, c := range cs {
		if rt.Match(c.Path) == "" {
			keep = append(keep, c)
		}
	}
	rec, added, err = rc.Extend(rec, b.Kind, keep)
	if err != nil || added == 0 {
		return added, err
	}
	return added, SaveRecord(r, p, rec)
}

// RecordStamp names the version of the record at RecordPath inside r, as
// the root has it now: another adopt --image gives another.
func RecordStamp(r *ondisk.Root) string { return identity(r, RecordPath) }
