package model

import (
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
// appended to it. It is both what the first-boot record keeps of the file
// (its JSON, package firstboot) and, with Key and Record set, what an
// entry's Content.Base holds after a load (never cached).
type Base struct {
	// Unknown, when set, says why there is no base for the file (why the
	// record has none, or why its is not usable): the other fields are
	// then zero.
	Unknown string `json:"unknown,omitempty"`
	// Size is the base's length in bytes.
	Size int64 `json:"size"`
	// Keyed is the keyed digest (Key.Digest) of the base's SHA-256, which
	// says nothing of the bytes to whoever lacks the key.
	Keyed Digest `json:"digest,omitzero"`
	// Bytes are the base itself, when the record keeps them (see
	// firstboot: only bytes any user could read at the first boot); base64
	// in JSON.
	Bytes []byte `json:"bytes,omitempty"`
	// Twin is a host path that held the base at the first boot (an
	// rpm-ostree host's /usr/etc copy of an /etc file), "" if none.
	Twin string `json:"twin,omitempty"`
	// Key is the key Keyed is checked with: the host's, set when the
	// record is applied to entries.
	Key Key `json:"-"`
	// Record is the record's host path, for messages.
	Record string `json:"-"`
}

// Matches reports whether sum, a SHA-256, is the base's.
func (b *Base) Matches(sum [sha256.Size]byte) bool {
	if b.Unknown != "" || !b.Key.Valid() {
		return false
	}
	return b.Key.Digest(sum).Equal(b.Keyed)
}

// Holds reports whether p is the base.
func (b *Base) Holds(p []byte) bool {
	return int64(len(p)) == b.Size && b.Matches(sha256.Sum256(p))
}
