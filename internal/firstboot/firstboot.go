// Package firstboot keeps what a host's provisioning config left to the
// node: the first-boot record. Ignition writes what a config declares, and
// for what it does not declare it keeps the node's own or uses its
// defaults; which of the two happened is known only on the host, at the
// first boot, when `drift-monitor adopt` runs right after Ignition
// (units/drift-monitor-adopt.service). The record says, for the nodes the
// adopted config declares without a mode or an owner, and for the files it
// only appends to:
//
//   - the mode, owner and group the node had then. A directory declared
//     without mode that did not exist was created 0755 and root's
//     (ignition v2.27.0 internal/exec/stages/files/filesystemEntries.go,
//     dirEntry.create: os.MkdirAll(path, util.DefaultDirectoryPermissions),
//     then util.SetPermissions, which chmods only a declared mode and
//     chowns to the declared owner or the node's own,
//     internal/exec/util/file.go); one that existed kept its own. A file
//     declared without contents or overwrite is the same (fileEntry.create:
//     an absent one is created empty, PerformFetch's temporary file made
//     util.DefaultFilePermissions, 0644; an existing one is appended to in
//     place, PerformFetch's os.OpenFile(O_APPEND)). The config cannot say
//     which happened; the node at the first boot does.
//   - the base of a file declared with append fragments and no
//     contents.source: what the file held before Ignition appended to it
//     (PerformFetch with Append: O_APPEND on the existing file), as the
//     file at the first boot minus its appended fragments. It is kept as
//     its length and a digest keyed with the host's digest key (package
//     digestkey: HMAC-SHA256 of its SHA-256, as drift's keyed digests), so
//     that the record names the base without holding it. The bytes are kept
//     too only when anyone on the host could read them then (the file
//     granted others read and every directory above it search, see
//     ondisk.Root.Public) and they are at most MaxBytes long: such bytes
//     are no secret, and a copy of them in a root-only file tells nobody
//     anything new. A secret base is never copied: a copy outlives the
//     rotation of the original, and lands in every backup of /etc.
//   - the enablement state of each unit whose enablement the config
//     declares, as `systemctl is-enabled` would have said right after the
//     first boot's preset applied Ignition's (package enablement, offline).
//     A unit declared enabled that is disabled now and cannot be enabled is
//     either one that could not be enabled then (an alias link of its name
//     was another unit's) or one an admin disabled since (by pointing that
//     link elsewhere): the tree is the same, and only this tells them apart
//     (enablement.Tree.WantEnabled).
//   - on an rpm-ostree host (/run/ostree-booted), whether an /etc node
//     existed before Ignition ran: the first deployment's /etc is a copy
//     of its /usr/etc (ostree's src/libostree/ostree-sysroot-deploy.c,
//     merge_configuration: usr/etc is copied to etc with its modes and
//     owners, and a previous deployment's changes are merged in only when
//     there is one; test/conformance TestFirstBootRecordOstree sees it
//     with the real `ostree admin deploy`), so a twin in /usr/etc means
//     the image had the node. It is noted (Origin), not acted on. A base that is the
//     twin's bytes names the twin: the bytes can be found there, and
//     checked against the digest, without being copied; an upgrade that
//     changes the twin makes it no source (the digest no longer matches).
//
// Check and reconcile use the record where there is one (Use.Apply): what
// it says of a mode, owner or group is wanted where no config declares one,
// an append-only file must hold its recorded base followed by its
// fragments, and a unit's enablement is judged knowing its state then. Without a record, modes and owners a config leaves to the node
// are not checked, and reconcile refuses to guess an append-only file's
// base.
//
// It promises: the record is written once, atomically, mode 0600, root's,
// beside the adopted config (DefaultPath; package adopt writes it); it
// holds no byte of a file others could not read and no unkeyed digest; a
// record that others may read, that a user other than root (or the root
// tree's owner) could have written — it, or a node on its path (package
// writers) —, or that does not parse is not used, and Apply says why. A
// record made with another digest key has its bases left out (their
// digests cannot be checked), not taken for a mismatch.
//
// It does not promise that the nodes were as Ignition wrote them: what stood
// at the first boot, right after Ignition, is taken as Ignition's result.
package firstboot

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"io"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/writers"
)

// DefaultPath is the record's host path: beside the fragment adopt writes
// (adopt.DefaultDest), in the directory it makes 0700. Its name is no
// config name (discover.IsConfigName) and one the loader knows
// (model.OwnFile): it neither loads it nor names it as a file it leaves
// alone.
const DefaultPath = model.FirstBootRecord

// Version is the record's format.
const Version = 1

// MaxBytes bounds the base bytes a record keeps (see the package doc);
// larger bases are kept as a length and a digest only.
const MaxBytes = 64 << 10

// maxBase bounds the base that is read at all: a larger file's base is not
// recorded (a file of gigabytes only appended to is not a config file).
const maxBase = 64 << 20

// maxRecord bounds what is read of a record.
const maxRecord = 64 << 20

// Record is the first-boot record.
type Record struct {
	Version int `json:"version"`
	// Config is the host path of the adopted config the record is of.
	Config string `json:"config"`
	// KeyID names the digest key the bases are keyed with: the key's
	// digest (model.Key.Digest, "hmac-sha256:HEX") of a fixed label; ""
	// when none was.
	KeyID string `json:"key_id,omitempty"`
	// OSTree: the host is an rpm-ostree (ostree) host.
	OSTree bool   `json:"ostree"`
	Nodes  []Node `json:"nodes"`
	// Units are the declared units' enablement at the first boot; nil in
	// a record made by a drift-monitor that did not record them (no
	// "units"), which then says nothing of any unit.
	Units []Unit `json:"units"`
}

// Unit is one declared unit's enablement at the first boot.
type Unit struct {
	Unit string `json:"unit"`
	// State is as `systemctl is-enabled` names it (enablement.State).
	State string `json:"state"`
}

// Node is what one declared node was at the first boot.
type Node struct {
	Path string `json:"path"`
	// Type is "file" or "directory".
	Type string `json:"type"`
	// Mode is the mode bits (with setuid, setgid, sticky), octal: "0755".
	Mode string `json:"mode"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	// Origin, on an rpm-ostree host and for /etc paths only: "image" when
	// the node has a twin in /usr/etc (it existed before Ignition ran),
	// "ignition" when it has none (Ignition, or something else in the
	// initramfs, created it).
	Origin string `json:"origin,omitempty"`
	// Base is the base of an append-only file: what it held before
	// Ignition appended to it (Key and Record unset).
	Base *model.Base `json:"base,omitempty"`
}

// keyIDLabel is what KeyID keys: a fixed text, so that the ID names the key
// and nothing else.
const keyIDLabel = "drift-monitor first-boot record"

// KeyID names key in a record ("" for no key).
func KeyID(key []byte) string { return KeyIDOf(model.NewKey(key)) }

// KeyIDOf is KeyID of a Key: the name the first boot's records (this one,
// and the image's /etc record of package image) give the host's key.
func KeyIDOf(k model.Key) string {
	if !k.Valid() {
		return ""
	}
	return k.Digest(sha256.Sum256([]byte(keyIDLabel))).String()
}

// Recorded reports whether the record wants the node of an entry: a node
// the config leaves its mode, owner or group to, or a file it only appends
// to. Units, drop-ins, links and SSH keys have all three declared (or
// Ignition's writer's): their nodes are never in a record (a unit's
// enablement is, in Units).
func Recorded(e *model.Entry) bool {
	if !e.Kind.Means().LeftToNode {
		return false
	}
	return e.Mode == nil || (e.UID == nil && e.OwnerProblem == "") || (e.GID == nil && e.GroupProblem == "") || appendOnly(e)
}

// appendOnly: a file declared with append fragments and no contents (nor
// overwrite): its content is its base, whatever that was, and the
// fragments.
func appendOnly(e *model.Entry) bool {
	return e.KeepsNode() && e.Content != nil
}

// Make observes the nodes of entries (a config's state) that Recorded
// wants, inside root, and returns their record, keyed with key (nil: the
// bases are recorded as unknown). config is the adopted config's host
// path. A node that cannot be recorded (missing, of another type than
// declared, unreadable) is left out, and a line in problems says why.
func Make(root *ondisk.Root, entries []model.Entry, config string, key []byte) (rec Record, problems []string) {
	rec = Record{Version: Version, Config: config, KeyID: KeyID(key), Nodes: []Node{}}
	o := ondisk.NewObserver(root)
	defer o.Close()
	o.Declare(ondisk.Declare(entries))
	rec.OSTree = o.TypeOf("/run/ostree-booted") != ondisk.Absent
	rec.Units, problems = makeUnits(root, entries)
	for i := range entries {
		e := entries[i]
		if !Recorded(&e) {
			continue
		}
		n, err := makeNode(root, o, &e, key, rec.OSTree)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s not recorded: %v", e.Path, err))
			continue
		}
		rec.Nodes = append(rec.Nodes, n)
	}
	return rec, problems
}

// makeUnits records the enablement state of every unit whose enablement
// entries declare, read offline from the unit files under root as systemd
// would answer `systemctl is-enabled` (at the first boot the manager has
// just read the same files). A unit whose state cannot be computed is left
// out, and a line in problems says why.
func makeUnits(root *ondisk.Root, entries []model.Entry) (units []Unit, problems []string) {
	units = []Unit{}
	var tree *enablement.Tree
	for i := range entries {
		e := &entries[i]
		if e.Kind != model.KindEnablement {
			continue
		}
		if tree == nil {
			t, err := enablement.New(root)
			if err != nil {
				return units, append(problems, fmt.Sprintf("unit enablement not recorded: %v", err))
			}
			tree = t
			defer tree.Close()
		}
		st, err := tree.UnitFileState(e.Unit)
		if err != nil {
			problems = append(problems, fmt.Sprintf("unit %q: enablement not recorded: %v", e.Unit, err))
			continue
		}
		units = append(units, Unit{Unit: e.Unit, State: st})
	}
	return units, problems
}

func makeNode(root *ondisk.Root, o *ondisk.Observer, e *model.Entry, key []byte, ostree bool) (Node, error) {
	bare := *e
	bare.Content = nil // the base is read below, once
	ob := o.Observe(&bare)
	want := map[model.Type]ondisk.FileType{model.TypeRegular: ondisk.Regular, model.TypeDirectory: ondisk.Directory}[e.Type]
	switch {
	case ob.Err != nil:
		return Node{}, ob.Err
	case ob.Detour != nil:
		return Node{}, fmt.Errorf("a symbolic link among its parents leads to %q", ob.Detour.Target)
	case ob.Type == ondisk.Absent:
		return Node{}, errors.New("it does not exist")
	case ob.Type != want:
		return Node{}, fmt.Errorf("it is a %s, declared a %s", ob.Type, want)
	}
	n := Node{Path: e.Path, Type: map[bool]string{true: "directory", false: "file"}[want == ondisk.Directory],
		Mode: model.FormatMode(ob.Mode), UID: ob.UID, GID: ob.GID}
	twin := ""
	if ostree && strings.HasPrefix(e.Path, "/etc/") {
		twin = "/usr" + e.Path
		n.Origin = "ignition"
		if o.TypeOf(twin) != ondisk.Absent {
			n.Origin = "image"
		}
	}
	if appendOnly(e) {
		n.Base = makeBase(root, e, ob.Mode, key, twin)
	}
	return n, nil
}

// makeBase reads the file at e.Path and records what precedes its appended
// fragments.
func makeBase(root *ondisk.Root, e *model.Entry, mode uint32, key []byte, twin string) *model.Base {
	if len(key) == 0 {
		return &model.Base{Unknown: "no digest key to record it with"}
	}
	raw, err := readBounded(root, e.Path)
	if err != nil {
		return &model.Base{Unknown: fmt.Sprintf("reading it at the first boot: %v", err)}
	}
	suffix := e.Content.Suffix
	if len(raw) < len(suffix) || string(raw[len(raw)-len(suffix):]) != string(suffix) {
		return &model.Base{Unknown: "at the first boot it did not end with its appended fragments"}
	}
	base := raw[:len(raw)-len(suffix)]
	b := &model.Base{Size: int64(len(base)), Keyed: model.NewKey(key).Digest(sha256.Sum256(base))}
	if mode&0o004 != 0 && len(base) <= MaxBytes {
		if public, err := root.Public(e.Path); err == nil && public {
			b.Bytes = append([]byte{}, base...)
		}
	}
	if twin != "" {
		if t, err := readBounded(root, twin); err == nil && string(t) == string(base) {
			b.Twin = twin
		}
	}
	return b
}

// readBounded reads a regular file inside root, refusing one larger than
// maxBase.
func readBounded(root *ondisk.Root, hostPath string) ([]byte, error) {
	f, err := root.Open(hostPath)
	if err != nil {
		return nil, errpath.Strip(err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxBase+1))
	if err != nil {
		return nil, errpath.Strip(err)
	}
	if len(raw) > maxBase {
		return nil, fmt.Errorf("larger than %d bytes", maxBase)
	}
	return raw, nil
}

// Marshal is the record as it is written: indented JSON, one node a few
// lines, for an admin who reads it.
func (r *Record) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Parse reads a record: one JSON object, and nothing after it but white
// space. A record followed by anything (a second record appended, a
// damaged tail) is refused: which nodes it speaks for cannot be told.
func Parse(raw []byte) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the record, at byte %d", dec.InputOffset())
	}
	if r.Version != Version {
		return nil, fmt.Errorf("version %d, this drift-monitor reads version %d", r.Version, Version)
	}
	for _, n := range r.Nodes {
		if !path.IsAbs(n.Path) || path.Clean(n.Path) != n.Path {
			return nil, fmt.Errorf("node %q: not a clean absolute path", n.Path)
		}
		if n.Type != "file" && n.Type != "directory" {
			return nil, fmt.Errorf("node %q: type %q", n.Path, n.Type)
		}
		if _, err := parseMode(n.Mode); err != nil {
			return nil, fmt.Errorf("node %q: %v", n.Path, err)
		}
		if n.UID < 0 || n.GID < 0 {
			return nil, fmt.Errorf("node %q: a negative owner", n.Path)
		}
		if b := n.Base; b != nil && b.Unknown == "" && (b.Keyed == model.Digest{} || b.Size < 0) {
			return nil, fmt.Errorf("node %q: base: size %d, digest %q", n.Path, b.Size, b.Keyed)
		}
	}
	for _, u := range r.Units {
		if u.Unit == "" || strings.ContainsAny(u.Unit, "/\x00") || !enablement.IsState(u.State) {
			return nil, fmt.Errorf("unit %q: state %q: not a unit and its enablement state", u.Unit, u.State)
		}
	}
	return &r, nil
}

func parseMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m&^0o7777 != 0 {
		return 0, fmt.Errorf("mode %q: not octal mode bits", s)
	}
	return uint32(m), nil
}

// Use is how a command uses the record: its host path and the host's digest
// key (nil: bases are not used).
type Use struct {
	Path string
	Key  []byte
}

// Load reads the record at u.Path inside root: nil and no error when there
// is none.
func (u Use) Load(root *ondisk.Root) (*Record, error) {
	f, err := root.Open(u.Path)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("first-boot record %s: %w: not used", root.Join(u.Path), errpath.Strip(err))
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("first-boot record %s: %w: not used", root.Join(u.Path), err)
	}
	if st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("first-boot record %s: mode %04o lets others at it: not used (it is root's alone, 0600)", root.Join(u.Path), st.Mode&0o7777)
	}
	// Who could have written it, or a node on its path: the rule every
	// file of settings is held to.
	if err := writers.Check(root, u.Path, f, writers.Options{}); err != nil {
		return nil, fmt.Errorf("first-boot record %s: %w: not used", root.Join(u.Path), err)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil, fmt.Errorf("first-boot record %s: %w: not used", root.Join(u.Path), errpath.Strip(err))
	}
	if len(raw) > maxRecord {
		return nil, fmt.Errorf("first-boot record %s: larger than %d bytes: not used", root.Join(u.Path), maxRecord)
	}
	r, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("first-boot record %s: %v: not used", root.Join(u.Path), err)
	}
	return r, nil
}

// Apply fills the entries of st with what the record at u.Path says (see
// the package doc): the mode, owner and group of a node where no config
// declares them, and the base of an append-only file. It returns warnings:
// a record that is not used, or whose bases are not, and why. Without a
// record it changes nothing.
func (u Use) Apply(root *ondisk.Root, st *model.State) []string {
	if u.Path == "" {
		return nil
	}
	rec, err := u.Load(root)
	if err != nil {
		return []string{err.Error()}
	}
	if rec == nil {
		return nil
	}
	return rec.apply(st, u.Path, u.Key)
}

func (r *Record) apply(st *model.State, recPath string, key []byte) []string {
	var warnings []string
	bases := true
	switch {
	case r.KeyID == "":
	case len(key) == 0:
		bases = false
		warnings = append(warnings, fmt.Sprintf("first-boot record %s: no digest key to check its bases with: append-only files are checked for their fragments only", recPath))
	case !hmac.Equal([]byte(KeyID(key)), []byte(r.KeyID)):
		bases = false
		warnings = append(warnings, fmt.Sprintf("first-boot record %s: made with another digest key than this host's: its bases are not used (append-only files are checked for their fragments only)", recPath))
	}
	nodes := make(map[string]*Node, len(r.Nodes))
	for i := range r.Nodes {
		nodes[r.Nodes[i].Path] = &r.Nodes[i]
	}
	units := make(map[string]string, len(r.Units))
	for _, u := range r.Units {
		units[u.Unit] = u.State
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Kind == model.KindEnablement {
			if s, ok := units[e.Unit]; ok {
				e.FirstBoot = &model.FirstBoot{Record: recPath, Enablement: s}
			}
			continue
		}
		n := nodes[e.Path]
		if n == nil || !Recorded(e) || n.Type != map[bool]string{true: "directory", false: "file"}[e.Kind == model.KindDirectory] {
			continue
		}
		fb := &model.FirstBoot{Record: recPath}
		if e.Mode == nil {
			m, _ := parseMode(n.Mode) // checked by Parse
			e.Mode, fb.Mode = &m, true
		}
		if e.UID == nil && e.OwnerProblem == "" {
			uid := n.UID
			e.UID, fb.Owner = &uid, true
		}
		if e.GID == nil && e.GroupProblem == "" {
			gid := n.GID
			e.GID, fb.Group = &gid, true
		}
		if fb.Mode || fb.Owner || fb.Group {
			e.FirstBoot = fb
		}
		if appendOnly(e) {
			c := *e.Content
			c.Base = r.base(n, recPath, key, bases)
			e.Content = &c
		}
	}
	return warnings
}

// base is what the entry's Content.Base is made of n's record.
func (r *Record) base(n *Node, recPath string, key []byte, usable bool) *model.Base {
	b := n.Base
	switch {
	case b == nil:
		return &model.Base{Unknown: fmt.Sprintf("the first-boot record %s has no base for it", recPath), Record: recPath}
	case b.Unknown != "":
		return &model.Base{Unknown: fmt.Sprintf("the first-boot record %s has none: %s", recPath, b.Unknown), Record: recPath}
	case !usable:
		return &model.Base{Unknown: fmt.Sprintf("the first-boot record %s keys it with another digest key than this host's", recPath), Record: recPath}
	}
	return &model.Base{Size: b.Size, Keyed: b.Keyed, Key: model.NewKey(key), Bytes: b.Bytes, Twin: b.Twin, Record: recPath}
}
