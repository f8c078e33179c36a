package desired

import (
	"crypto/hmac"
	"crypto/sha256"
)

// FirstBoot says which of an entry's fields come from the first-boot record
// (package firstboot) rather than from a config: what the config left to the
// node, as Ignition left it. It is set after a load, never cached.
type FirstBoot struct {
	// Record is the record's host path, for messages.
	Record string
	// Mode, Owner and Group say which fields the record filled.
	Mode, Owner, Group bool
	// Enablement, for a unit's enablement entry, is the unit's state at
	// the first boot as the record keeps it (as `systemctl is-enabled`
	// names it).
	Enablement string
}

// Base is the recorded base of a file declared with append fragments and
// no contents (Content.Suffix alone): what the file held before Ignition
// appended to it, as the first-boot record keeps it. It is set after a
// load, never cached.
type Base struct {
	// Unknown, when set, says why the record has no base for the file:
	// the other fields are then zero.
	Unknown string
	// Size is the base's length in bytes.
	Size int64
	// Keyed is HMAC-SHA256, under Key, of the base's SHA-256: the keyed
	// digest drift's reports give ("hmac-sha256"), which says nothing of
	// the bytes to whoever lacks the key.
	Keyed [sha256.Size]byte
	Key   []byte
	// Bytes are the base itself, when the record keeps them (see
	// firstboot: only bytes any user could read at the first boot).
	Bytes []byte
	// Twin is a host path that held the base at the first boot (an
	// rpm-ostree host's /usr/etc copy of an /etc file), "" if none.
	Twin string
	// Record is the record's host path, for messages.
	Record string
}

// Matches reports whether sum, a SHA-256, is the base's.
func (b *Base) Matches(sum [sha256.Size]byte) bool {
	if b.Unknown != "" || len(b.Key) == 0 {
		return false
	}
	m := hmac.New(sha256.New, b.Key)
	m.Write(sum[:])
	return hmac.Equal(m.Sum(nil), b.Keyed[:])
}

// Holds reports whether p is the base.
func (b *Base) Holds(p []byte) bool {
	return int64(len(p)) == b.Size && b.Matches(sha256.Sum256(p))
}
