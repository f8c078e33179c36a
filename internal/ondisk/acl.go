package ondisk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
)

// ACL tags and the value layout of system.posix_acl_access and
// system.posix_acl_default: a little-endian u32 version (2), then 8-byte
// entries {u16 tag, u16 perm, u32 id} (the kernel's
// include/uapi/linux/posix_acl_xattr.h; decoded here, without libacl).
const (
	ACLUserObj  = 0x01
	ACLUser     = 0x02
	ACLGroupObj = 0x04
	ACLGroup    = 0x08
	ACLMask     = 0x10
	ACLOther    = 0x20

	aclVersion = 2
)

// ACLEntry is one entry of a POSIX ACL.
type ACLEntry struct {
	Tag  uint16
	Perm uint16 // rwx = 4|2|1
	ID   uint32 // the uid or gid of a named entry
}

// ParseACL decodes a POSIX ACL xattr value.
func ParseACL(b []byte) ([]ACLEntry, error) {
	if len(b) < 4 || (len(b)-4)%8 != 0 {
		return nil, fmt.Errorf("malformed ACL of %d bytes", len(b))
	}
	if v := binary.LittleEndian.Uint32(b); v != aclVersion {
		return nil, fmt.Errorf("ACL version %d, want %d", v, aclVersion)
	}
	var es []ACLEntry
	for b = b[4:]; len(b) >= 8; b = b[8:] {
		es = append(es, ACLEntry{Tag: binary.LittleEndian.Uint16(b), Perm: binary.LittleEndian.Uint16(b[2:]) & 7,
			ID: binary.LittleEndian.Uint32(b[4:])})
	}
	return es, nil
}

// EncodeACL is ParseACL's inverse, entries in the kernel's order (by tag,
// then id).
func EncodeACL(es []ACLEntry) []byte {
	es = append([]ACLEntry(nil), es...)
	sort.Slice(es, func(i, j int) bool {
		if es[i].Tag != es[j].Tag {
			return es[i].Tag < es[j].Tag
		}
		return es[i].ID < es[j].ID
	})
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint32(aclVersion))
	for _, e := range es {
		id := e.ID
		if e.Tag != ACLUser && e.Tag != ACLGroup {
			id = 0xffffffff // ACL_UNDEFINED_ID
		}
		binary.Write(&b, binary.LittleEndian, e.Tag)
		binary.Write(&b, binary.LittleEndian, e.Perm)
		binary.Write(&b, binary.LittleEndian, id)
	}
	return b.Bytes()
}

// Named returns the named user and group entries: what an ACL says beyond
// the mode bits (the owner, group and other entries are the mode; the mask
// is the group bits).
func Named(es []ACLEntry) []ACLEntry {
	var n []ACLEntry
	for _, e := range es {
		if e.Tag == ACLUser || e.Tag == ACLGroup {
			n = append(n, e)
		}
	}
	return n
}

// Names turns ids into account names, for messages.
type Names struct{ Users, Groups map[uint32]string }

// Format writes an entry as getfacl does: user:nobody:rw-, group:adm:r-x,
// mask::rwx (an id without a name in the root's accounts: its number).
func (n Names) Format(e ACLEntry) string {
	perm := []byte("---")
	for i, c := range "rwx" {
		if e.Perm&(4>>i) != 0 {
			perm[i] = byte(c)
		}
	}
	name := func(m map[uint32]string) string {
		if s, ok := m[e.ID]; ok {
			return s
		}
		return strconv.FormatUint(uint64(e.ID), 10)
	}
	switch e.Tag {
	case ACLUserObj:
		return "user::" + string(perm)
	case ACLUser:
		return "user:" + name(n.Users) + ":" + string(perm)
	case ACLGroupObj:
		return "group::" + string(perm)
	case ACLGroup:
		return "group:" + name(n.Groups) + ":" + string(perm)
	case ACLMask:
		return "mask::" + string(perm)
	case ACLOther:
		return "other::" + string(perm)
	}
	return fmt.Sprintf("tag%#x:%d:%s", e.Tag, e.ID, perm)
}
