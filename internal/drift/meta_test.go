package drift_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
)

// capValue is a security.capability value of revision 2 (what setcap writes
// without a namespace root).
func capValue(eff bool, perm, inh uint64) []byte {
	b := make([]byte, 20)
	magic := uint32(0x02000000)
	if eff {
		magic |= 1
	}
	binary.LittleEndian.PutUint32(b, magic)
	binary.LittleEndian.PutUint32(b[4:], uint32(perm))
	binary.LittleEndian.PutUint32(b[8:], uint32(inh))
	binary.LittleEndian.PutUint32(b[12:], uint32(perm>>32))
	binary.LittleEndian.PutUint32(b[16:], uint32(inh>>32))
	return b
}

func TestCapabilitiesInWords(t *testing.T) {
	for _, c := range []struct {
		v    []byte
		want string
	}{
		{capValue(true, 1<<13, 0), "cap_net_raw=ep"},
		{capValue(false, 1<<13|1<<10, 0), "cap_net_bind_service,cap_net_raw=p"},
		{capValue(true, 1<<21, 1<<21), "cap_sys_admin=eip"},
		{capValue(false, 1<<40, 0), "cap_checkpoint_restore=p"},
		{capValue(false, 0, 0), "(none)"},
		{[]byte{1, 2}, "(malformed, 2 bytes)"},
	} {
		if got := drift.Capabilities(c.v); got != c.want {
			t.Errorf("Capabilities(%x) = %q, want %q", c.v, got, c.want)
		}
	}
}

func acl(es ...ondisk.ACLEntry) []byte { return ondisk.EncodeACL(es) }

var (
	aclBase = []ondisk.ACLEntry{{Tag: ondisk.ACLUserObj, Perm: 6}, {Tag: ondisk.ACLGroupObj, Perm: 4}, {Tag: ondisk.ACLOther, Perm: 4}}
	aclMask = ondisk.ACLEntry{Tag: ondisk.ACLMask, Perm: 6}
	// nobody is named in words through the root's accounts.
	nobody = ondisk.ACLEntry{Tag: ondisk.ACLUser, Perm: 6, ID: 65534}
	adm    = ondisk.ACLEntry{Tag: ondisk.ACLGroup, Perm: 7, ID: 4}
	names  = ondisk.Names{Users: map[uint32]string{65534: "nobody"}, Groups: map[uint32]string{4: "adm"}}
)

func metaOb(typ ondisk.FileType, m ondisk.Meta) *ondisk.Observation {
	m.Observed, m.Names = true, names
	return &ondisk.Observation{Type: typ, Mode: 0o644, Meta: m}
}

func kinds(ds []drift.Drift) []string {
	var k []string
	for _, d := range ds {
		k = append(k, string(d.Kind)+": "+d.Got)
	}
	return k
}

// TestMetaDrift: each kind of metadata Ignition never sets is drift of its
// own kind on a node Ignition writes; the ACL a parent's default ACL gives
// a new node is not; on a node Ignition keeps, it is a notice.
func TestMetaDrift(t *testing.T) {
	file := model.Entry{Kind: model.KindFile, Path: "/etc/app.conf", Type: model.TypeRegular, Mode: ptr(uint32(0o644)),
		Content: &model.Content{Exact: []byte{}}}
	dir := model.Entry{Kind: model.KindDirectory, Path: "/srv/d", Type: model.TypeDirectory, Mode: ptr(uint32(0o644))}
	kept := model.Entry{Kind: model.KindFile, Path: "/etc/kept", Type: model.TypeRegular}
	withNobody := append([]ondisk.ACLEntry{aclMask, nobody}, aclBase...)
	key := model.NewKey([]byte("host key"))
	for _, c := range []struct {
		name    string
		e       model.Entry
		ob      *ondisk.Observation
		want    []string
		notices int
	}{
		{"clean", file, metaOb(ondisk.Regular, ondisk.Meta{}), nil, 0},
		{"label and IMA are not xattr drift", file, metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{
			{Name: "security.ima", Value: []byte{1}}, {Name: "security.selinux", Value: []byte("x_u:x_r:x_t:s0\x00")}}}), nil, 0},
		{"immutable", file, metaOb(ondisk.Regular, ondisk.Meta{Immutable: true}), []string{"fileattr: immutable"}, 0},
		{"both flags", file, metaOb(ondisk.Regular, ondisk.Meta{Immutable: true, Append: true}), []string{"fileattr: immutable, append-only"}, 0},
		{"named ACL entry", file, metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: ondisk.XattrACLAccess, Value: acl(withNobody...)}}}),
			[]string{"acl: user:nobody:rw-"}, 0},
		{"base-only ACL is the mode", file, metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: ondisk.XattrACLAccess, Value: acl(aclBase...)}}}), nil, 0},
		{"inherited ACL", file, metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: ondisk.XattrACLAccess, Value: acl(withNobody...)}},
			ParentDefaultACL: acl(withNobody...)}), nil, 0},
		{"ACL beyond the inherited one", file, metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: ondisk.XattrACLAccess, Value: acl(append(withNobody, adm)...)}},
			ParentDefaultACL: acl(withNobody...)}), []string{"acl: user:nobody:rw-,group:adm:rwx"}, 0},
		{"default ACL on a directory", dir, metaOb(ondisk.Directory, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: ondisk.XattrACLDefault, Value: acl(withNobody...)}}}),
			[]string{"acl: default:user::rw-,default:user:nobody:rw-,default:group::r--,default:mask::rw-,default:other::r--"}, 0},
		{"inherited default ACL on a directory", dir, metaOb(ondisk.Directory, ondisk.Meta{Xattrs: []ondisk.Xattr{
			{Name: ondisk.XattrACLAccess, Value: acl(withNobody...)}, {Name: ondisk.XattrACLDefault, Value: acl(withNobody...)}},
			ParentDefaultACL: acl(withNobody...)}), nil, 0},
		{"capabilities", file, metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: ondisk.XattrCapability, Value: capValue(true, 1<<13, 0)}}}),
			[]string{"xattr: file capabilities cap_net_raw=ep"}, 0},
		{"kept node: a notice", kept, metaOb(ondisk.Regular, ondisk.Meta{Immutable: true, Xattrs: []ondisk.Xattr{{Name: "user.x", Value: []byte("1")}}}), nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ob := *c.ob
			ob.Mode = 0o644
			got := drift.Compare(&c.e, &ob, key)
			inRows(t, got)
			inRows(t, drift.MetaNotices(&c.e, &ob, key))
			if diff := cmp.Diff(c.want, kinds(got)); diff != "" {
				t.Errorf("drift (-want +got):\n%s\n%+v", diff, got)
			}
			if n := drift.MetaNotices(&c.e, &ob, key); len(n) != c.notices {
				t.Errorf("notices %+v, want %d", n, c.notices)
			}
		})
	}
}

// TestXattrValueNeverShown: a user.* or trusted.* value is described by its
// size and keyed digest, never its bytes, nor a plain digest of them.
func TestXattrValueNeverShown(t *testing.T) {
	const secret = "hunter2-SECRET-xattr"
	e := model.Entry{Kind: model.KindFile, Path: "/etc/app.conf", Type: model.TypeRegular, Content: &model.Content{Exact: []byte{}}}
	ob := metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: "trusted.t", Value: []byte(secret)}, {Name: "user.token", Value: []byte(secret)}}})
	ds := drift.Compare(&e, ob, model.NewKey([]byte("k")))
	if len(ds) != 1 || ds[0].Kind != drift.Xattr || ds[0].Attribute != "trusted.t,user.token" {
		t.Fatalf("drift %+v, want one xattr drift naming both", ds)
	}
	all := ds[0].Message + ds[0].Got + ds[0].Want
	if strings.Contains(all, secret) || strings.Contains(all, "sha256:") && !strings.Contains(all, "hmac-sha256:") {
		t.Errorf("the value shows: %q", all)
	}
	if !strings.Contains(ds[0].Got, "20 bytes, hmac-sha256:") {
		t.Errorf("got %q, want the size and a keyed digest", ds[0].Got)
	}
}

// TestCompareLabel: type and MLS range are compared (the whole context with
// full); any of an inode's names' defaults will do; the MCD's files differ
// as a notice; a kept node is not compared.
func TestCompareLabel(t *testing.T) {
	file := model.Entry{Kind: model.KindFile, Path: "/etc/app.conf", Type: model.TypeRegular, Content: &model.Content{Exact: []byte{}}}
	labelled := func(ctx string) *ondisk.Observation {
		return metaOb(ondisk.Regular, ondisk.Meta{Xattrs: []ondisk.Xattr{{Name: ondisk.XattrSELinux, Value: []byte(ctx + "\x00")}}})
	}
	const etc = "system_u:object_r:etc_t:s0"
	mc := file
	mc.NotRelabelled = true
	kept := model.Entry{Kind: model.KindFile, Path: "/etc/kept", Type: model.TypeRegular}
	for _, c := range []struct {
		name          string
		e             model.Entry
		ob            *ondisk.Observation
		want          []string
		full          bool
		drift, notice int
	}{
		{"default", file, labelled(etc), []string{etc}, false, 0, 0},
		{"another user and role", file, labelled("unconfined_u:object_r:etc_t:s0"), []string{etc}, false, 0, 0},
		{"another user, full", file, labelled("unconfined_u:object_r:etc_t:s0"), []string{etc}, true, 1, 0},
		{"another type", file, labelled("system_u:object_r:bin_t:s0"), []string{etc}, false, 1, 0},
		{"another range", file, labelled("system_u:object_r:etc_t:s0:c1"), []string{etc}, false, 1, 0},
		{"no label", file, metaOb(ondisk.Regular, ondisk.Meta{}), []string{etc}, false, 1, 0},
		{"a hard link's default", file, labelled("system_u:object_r:bin_t:s0"), []string{etc, "system_u:object_r:bin_t:s0"}, false, 0, 0},
		{"<<none>>", file, metaOb(ondisk.Regular, ondisk.Meta{}), nil, false, 0, 0},
		{"written by the MCD", mc, labelled("system_u:object_r:bin_t:s0"), []string{etc}, false, 0, 1},
		{"kept", kept, labelled("system_u:object_r:bin_t:s0"), []string{etc}, false, 0, 0},
	} {
		d, n := drift.CompareLabel(&c.e, c.ob, c.want, c.full)
		inRows(t, d)
		inRows(t, n)
		if len(d) != c.drift || len(n) != c.notice {
			t.Errorf("%s: drift %+v, notices %+v; want %d and %d", c.name, d, n, c.drift, c.notice)
		}
		for _, x := range d {
			if x.Kind != drift.Label || x.Attribute != ondisk.XattrSELinux {
				t.Errorf("%s: %+v", c.name, x)
			}
		}
	}
}
