package drift

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The kinds of metadata Ignition never sets (ondisk.Meta). Ignition writes a
// node's contents, mode and owner and nothing else (its files stage creates
// through os.CreateTemp, chmod, chown, rename: coreos/ignition v2.27.0
// internal/exec/util/file.go), so on a node it (re)creates any of these is
// drift — but for what the kernel adds as it creates: the parent's default
// ACL, inherited.
const (
	// ACL: named entries of an access ACL, or a default ACL, that the
	// parent's default ACL does not account for.
	ACL Kind = "acl"
	// Xattr: extended attributes outside the ones with a kind of their own
	// (file capabilities among them).
	Xattr Kind = "xattr"
	// FileAttr: the immutable or append-only flag.
	FileAttr Kind = "fileattr"
	// KeptMetadata is a notice, not drift: a node Ignition keeps as it finds
	// it (a file declared without contents) carries metadata that may
	// predate Ignition and is not its to set.
	KeptMetadata Kind = "kept-metadata"
)

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, bool) {
	i := slices.Index(Kinds, Kind(s))
	if i < 0 {
		return "", false
	}
	return Kinds[i], true
}

// ignoredXattrs have a kind of their own, or are the kernel's integrity
// metadata (IMA/EVM), set by the kernel's appraisal policy, not by an admin.
var ignoredXattrs = map[string]bool{
	ondisk.XattrSELinux: true, ondisk.XattrACLAccess: true, ondisk.XattrACLDefault: true,
	"security.ima": true, "security.evm": true,
}

// metaScope: the entries whose metadata is compared. A hard link's inode
// is its target's, compared with the target's own entry.
func metaScope(e *model.Entry, ob *ondisk.Observation) bool {
	if !ob.Meta.Observed || e.Kind.Means().Source != model.FromNode {
		return false
	}
	switch e.Type {
	case model.TypeRegular, model.TypeDirectory, model.TypeSymlink:
		return true
	}
	return false
}

// compareMeta adds the metadata drift of a node Ignition (re)creates.
func compareMeta(e *model.Entry, ob *ondisk.Observation, d *drifts, key model.Key) {
	if !metaScope(e, ob) || e.KeepsNode() {
		return
	}
	m := &ob.Meta
	if m.Err != nil {
		d.add(Unreadable, fmt.Sprintf("cannot read the extended attributes of %s: %v", Noun(e), m.Err), "", "")
		return
	}
	if got := fileAttrs(m); got != "" {
		dr := d.add(FileAttr, fmt.Sprintf("%s is %s (chattr), which Ignition never sets", Noun(e), got), "none", got)
		dr.Attribute = got
	}
	if got, names := aclDrift(m, ob.Type == ondisk.Directory); got != "" {
		want := "none"
		if inh := inherited(m); inh != "" {
			want = "inherited from the parent directory: " + inh
		}
		dr := d.add(ACL, fmt.Sprintf("%s has ACL entries %s, want %s", Noun(e), got, want), want, got)
		dr.Attribute = names
	}
	if got, names := xattrDrift(m, key); got != "" {
		dr := d.add(Xattr, fmt.Sprintf("%s has %s, which Ignition never sets", Noun(e), got), "none", got)
		dr.Attribute = names
	}
}

// MetaNotices are the notices of a node Ignition keeps (see KeptMetadata).
func MetaNotices(e *model.Entry, ob *ondisk.Observation, key model.Key) []Drift {
	if !metaScope(e, ob) || !e.KeepsNode() || ob.Meta.Err != nil {
		return nil
	}
	m := &ob.Meta
	var what []string
	if s := fileAttrs(m); s != "" {
		what = append(what, s)
	}
	if s, _ := aclDrift(m, ob.Type == ondisk.Directory); s != "" {
		what = append(what, "ACL entries "+s)
	}
	if s, _ := xattrDrift(m, key); s != "" {
		what = append(what, s)
	}
	if len(what) == 0 {
		return nil
	}
	return []Drift{{Kind: KeptMetadata, Entry: e.Kind, Path: e.Path, EntryID: e.ID(),
		Message: fmt.Sprintf("%s is declared without contents, so Ignition keeps the node it finds: %s not Ignition's, not checked",
			Noun(e), strings.Join(what, "; ")),
		Got: strings.Join(what, "; ")}}
}

// TrustedUnchecked is the notice a check carries when this process cannot
// see trusted.* xattrs (ondisk.SeesTrusted): they are not checked, which is
// not the same as none being there. Said once per check, on its first
// entry with a node (e).
func TrustedUnchecked(e *model.Entry) Drift {
	return Drift{Kind: Unverifiable, Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User, EntryID: e.ID(),
		Message: fmt.Sprintf("trusted.* extended attributes are not checked on %s nor on any other declared node: "+
			"the kernel lists them only to a process with CAP_SYS_ADMIN, which this one lacks", Noun(e))}
}

func fileAttrs(m *ondisk.Meta) string { return strings.Join(FlagNames(m), ", ") }

// FlagNames names the node's immutable and append-only flags.
func FlagNames(m *ondisk.Meta) []string {
	var s []string
	if m.Immutable {
		s = append(s, "immutable")
	}
	if m.Append {
		s = append(s, "append-only")
	}
	return s
}

// ExtraACLs are the ACL xattrs whose removal repairs an acl drift (see
// aclDrift): what is left is the mode, and no ACL is accepted under a
// parent with a default one too.
func ExtraACLs(m *ondisk.Meta, dir bool) []string {
	_, names := aclDrift(m, dir)
	if names == "" {
		return nil
	}
	return strings.Split(names, ",")
}

// ExtraXattrs are the xattrs an xattr drift is about, by their raw names.
func ExtraXattrs(m *ondisk.Meta) []string {
	var xs []string
	for _, x := range m.Xattrs {
		if !ignoredXattrs[x.Name] {
			xs = append(xs, x.Name)
		}
	}
	return xs
}

// aclDrift describes the ACL entries a node has beyond what its parent's
// default ACL gives it as it is created: the named entries of its access
// ACL (the rest of an ACL is the mode bits, compared as mode) and, for a
// directory, its default ACL, which it inherits whole. A node without them
// where the parent has a default ACL is accepted: the parent may have got
// it after Ignition wrote the node. names is the xattrs concerned.
func aclDrift(m *ondisk.Meta, dir bool) (got, names string) {
	var parent []ondisk.ACLEntry
	if m.ParentDefaultACL != nil {
		parent, _ = ondisk.ParseACL(m.ParentDefaultACL)
	}
	var out, xs []string
	if v, ok := m.Get(ondisk.XattrACLAccess); ok {
		es, err := ondisk.ParseACL(v)
		switch {
		case err != nil:
			out, xs = append(out, fmt.Sprintf("(unreadable access ACL: %v)", err)), append(xs, ondisk.XattrACLAccess)
		case len(ondisk.Named(es)) > 0 && !sameEntries(ondisk.Named(es), ondisk.Named(parent)):
			for _, x := range ondisk.Named(es) {
				out = append(out, m.Names.Format(x))
			}
			xs = append(xs, ondisk.XattrACLAccess)
		}
	}
	if v, ok := m.Get(ondisk.XattrACLDefault); ok && dir {
		es, err := ondisk.ParseACL(v)
		switch {
		case err != nil:
			out, xs = append(out, fmt.Sprintf("(unreadable default ACL: %v)", err)), append(xs, ondisk.XattrACLDefault)
		case len(es) > 0 && !sameEntries(es, parent):
			for _, x := range es {
				out = append(out, "default:"+m.Names.Format(x))
			}
			xs = append(xs, ondisk.XattrACLDefault)
		}
	}
	return escape.Name(strings.Join(out, ",")), strings.Join(xs, ",")
}

// inherited names the parent's default ACL's named entries ("" for none).
func inherited(m *ondisk.Meta) string {
	es, _ := ondisk.ParseACL(m.ParentDefaultACL)
	var s []string
	for _, x := range ondisk.Named(es) {
		s = append(s, m.Names.Format(x))
	}
	return escape.Name(strings.Join(s, ","))
}

func sameEntries(a, b []ondisk.ACLEntry) bool {
	key := func(es []ondisk.ACLEntry) []ondisk.ACLEntry {
		es = slices.Clone(es)
		slices.SortFunc(es, func(x, y ondisk.ACLEntry) int {
			if x.Tag != y.Tag {
				return int(x.Tag) - int(y.Tag)
			}
			return int(int64(x.ID) - int64(y.ID))
		})
		return es
	}
	return slices.Equal(key(a), key(b))
}

// xattrDrift describes the xattrs outside ignoredXattrs: file capabilities
// in words (as getcap prints them), any other value by its size and keyed
// digest only — a user.* or trusted.* value may be anything, a secret too.
func xattrDrift(m *ondisk.Meta, key model.Key) (got, names string) {
	var out, xs []string
	g := digester{key: key}
	for _, x := range m.Xattrs {
		if ignoredXattrs[x.Name] {
			continue
		}
		xs = append(xs, escape.Name(x.Name))
		if x.Name == ondisk.XattrCapability {
			out = append(out, "file capabilities "+Capabilities(x.Value))
			continue
		}
		sum := sha256.Sum256(x.Value)
		out = append(out, fmt.Sprintf("extended attribute %s (%s)", escape.Name(x.Name), g.describe(int64(len(x.Value)), sum[:])))
	}
	return strings.Join(out, ", "), strings.Join(xs, ",")
}

// capNames are the capabilities by number (include/uapi/linux/capability.h).
var capNames = []string{"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw", "ipc_lock", "ipc_owner",
	"sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
	"sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write", "audit_control", "setfcap",
	"mac_override", "mac_admin", "syslog", "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf",
	"checkpoint_restore"}

// Capabilities decodes a security.capability value (struct vfs_cap_data or
// vfs_ns_cap_data, revisions 1 to 3) in getcap's words: "cap_net_raw=ep",
// capabilities with the same flags joined by commas.
func Capabilities(v []byte) string {
	if len(v) < 4 {
		return fmt.Sprintf("(malformed, %d bytes)", len(v))
	}
	magic := binary.LittleEndian.Uint32(v)
	words := 2
	switch magic & 0xff000000 {
	case 0x01000000:
		words = 1
	case 0x02000000, 0x03000000:
	default:
		return fmt.Sprintf("(unknown revision %#x)", magic&0xff000000)
	}
	if len(v) < 4+8*words {
		return fmt.Sprintf("(malformed, %d bytes)", len(v))
	}
	var perm, inh uint64
	for i := 0; i < words; i++ {
		perm |= uint64(binary.LittleEndian.Uint32(v[4+8*i:])) << (32 * i)
		inh |= uint64(binary.LittleEndian.Uint32(v[8+8*i:])) << (32 * i)
	}
	eff := magic&1 != 0
	var order []string
	groups := map[string][]string{}
	for c := 0; c < 64; c++ {
		p, i := perm&(1<<c) != 0, inh&(1<<c) != 0
		if !p && !i {
			continue
		}
		flags := ""
		if eff {
			flags += "e"
		}
		if i {
			flags += "i"
		}
		if p {
			flags += "p"
		}
		name := fmt.Sprintf("cap_%d", c)
		if c < len(capNames) {
			name = "cap_" + capNames[c]
		}
		if _, ok := groups[flags]; !ok {
			order = append(order, flags)
		}
		groups[flags] = append(groups[flags], name)
	}
	if len(order) == 0 {
		return "(none)"
	}
	var s []string
	for _, f := range order {
		s = append(s, strings.Join(groups[f], ",")+"="+f)
	}
	out := strings.Join(s, " ")
	if magic&0xff000000 == 0x03000000 && len(v) >= 24 {
		out += fmt.Sprintf(" [rootid=%d]", binary.LittleEndian.Uint32(v[20:]))
	}
	return out
}

// Label: the SELinux label is not the policy's default for the path.
const Label Kind = "label"

// CompareLabel compares the node's SELinux label (security.selinux) with
// the policy's defaults for it, want (several for an inode with several
// declared names: Ignition hands setfiles its paths in map order, so a hard
// link's inode gets one path's default or another's). Type and MLS range
// are compared, or the whole context with full (setfiles -F sets user and
// role too). A node Ignition keeps is not its to label; an entry whose
// writer does not relabel (model.Entry.NotRelabelled: the MCD) differs as
// a notice, not drift. want empty: the policy expects no label (<<none>>).
func CompareLabel(e *model.Entry, ob *ondisk.Observation, want []string, full bool) (drifts, notices []Drift) {
	if !metaScope(e, ob) || e.KeepsNode() || ob.Meta.Err != nil || len(want) == 0 {
		return nil, nil
	}
	v, ok := ob.Meta.Get(ondisk.XattrSELinux)
	v = bytes.TrimRight(v, "\x00")
	for _, w := range want {
		if ok && sameLabel(w, v, full) {
			return nil, nil
		}
	}
	shown := escape.Name(string(v))
	if !ok {
		shown = "none"
	}
	wants := escape.Name(strings.Join(want, " or "))
	d := Drift{Kind: Label, Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User, EntryID: e.ID(),
		Want: wants, Got: shown, Attribute: ondisk.XattrSELinux}
	if e.NotRelabelled {
		d.Kind = KeptMetadata
		d.Message = fmt.Sprintf("%s has SELinux label %s, not the policy's %s: the machine-config daemon writes without relabelling (restorecon -F %s sets the default)",
			Noun(e), shown, wants, escape.Name(e.Path))
		return nil, []Drift{d}
	}
	d.Message = fmt.Sprintf("SELinux label mismatch for %s: want %s (the policy's default, as Ignition's setfiles sets it), got %s", Noun(e), wants, shown)
	return []Drift{d}, nil
}

// sameLabel compares two contexts, user:role:type:range, by type and range
// (the range may hold colons), or whole.
// b is the node's, as read: compared without a copy, since every node of
// an SELinux host has one.
func sameLabel(a string, b []byte, full bool) bool {
	if full || a == string(b) {
		return a == string(b)
	}
	ta, tb := afterUserRole(a), afterUserRole(string(b))
	return ta >= 0 && tb >= 0 && a[ta:] == string(b[tb:])
}

// afterUserRole is where a context's type starts, after its user and role
// (-1 without them).
func afterUserRole(c string) int {
	u := strings.IndexByte(c, ':')
	if u < 0 {
		return -1
	}
	r := strings.IndexByte(c[u+1:], ':')
	if r < 0 {
		return -1
	}
	return u + 1 + r + 1
}
