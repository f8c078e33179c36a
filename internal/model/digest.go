package model

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Key keys the digests that stand for content that must not be shown. The
// zero Key keys nothing: such digests are then left out.
//
// A plain SHA-256 of a short secret is as good as the secret to whoever
// reads it with the size ("7 bytes, sha256 f52f…" is hunter2 after a
// dictionary's worth of hashing), and records travel: to the journal, to a
// fleet's log store. A digest keyed with a key that never leaves the host
// (HMAC-SHA256) still says whether two reports saw the same content, and
// says nothing about what it is.
type Key struct{ k []byte }

// NewKey makes a Key of the key bytes (the host's digest key, package
// digestkey).
func NewKey(k []byte) Key { return Key{k: append([]byte(nil), k...)} }

// Equal reports whether k and o are the same key (go-cmp compares keys
// through it: the bytes are unexported, so that nothing prints them).
func (k Key) Equal(o Key) bool { return hmac.Equal(k.k, o.k) }

// Valid reports whether the key keys anything.
func (k Key) Valid() bool { return len(k.k) > 0 }

// The names of the digests in reports: "sha256:HEX" is the plain SHA-256 of
// the content; "hmac-sha256:HEX" is HMAC-SHA256, under the host's key, of
// the content's SHA-256 (32 bytes, not hex): keying the digest the
// comparison computes anyway, rather than the content, costs no second
// read of a large file and no read-back of a stored declared content.
const (
	PlainDigest = "sha256"
	KeyedDigest = "hmac-sha256"
)

// Digest is a keyed digest: HMAC-SHA256, under a Key, of a content's
// SHA-256. As text it is "hmac-sha256:HEX", the name reports and the
// first-boot record give it.
type Digest [sha256.Size]byte

// Digest is the keyed digest of a content whose SHA-256 is sum: the one
// place that computes it (drift's reports, the first-boot record's bases
// and key id, Base.Matches). With the zero Key it is HMAC under an empty
// key: callers check Valid first.
func (k Key) Digest(sum [sha256.Size]byte) Digest {
	m := hmac.New(sha256.New, k.k)
	m.Write(sum[:])
	return Digest(m.Sum(nil))
}

// String is "hmac-sha256:HEX".
func (d Digest) String() string { return KeyedDigest + ":" + hex.EncodeToString(d[:]) }

// Equal compares two digests in constant time.
func (d Digest) Equal(o Digest) bool { return hmac.Equal(d[:], o[:]) }

// ParseDigest reads "hmac-sha256:HEX".
func ParseDigest(s string) (Digest, error) {
	var out Digest
	h, ok := strings.CutPrefix(s, KeyedDigest+":")
	b, err := hex.DecodeString(h)
	if !ok || err != nil || len(b) != sha256.Size {
		return out, fmt.Errorf("digest %q: not %s:HEX", s, KeyedDigest)
	}
	copy(out[:], b)
	return out, nil
}

// MarshalText is String's text, for the first-boot record's JSON.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
