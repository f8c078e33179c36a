package drift

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// NewKey makes a Key of the key bytes (the host's digest key).
func NewKey(k []byte) Key { return Key{k: append([]byte(nil), k...)} }

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

// digester names the contents of one drift: in the clear where the content
// could be shown anyway, keyed otherwise, or not at all without a key.
type digester struct {
	key   Key
	plain bool
}

// name is the digest of a content whose SHA-256 is sum; "" when it must not
// be given.
func (g digester) name(sum []byte) string {
	switch {
	case len(sum) != sha256.Size:
		return ""
	case g.plain:
		return PlainDigest + ":" + hex.EncodeToString(sum)
	case g.key.Valid():
		m := hmac.New(sha256.New, g.key.k)
		m.Write(sum)
		return KeyedDigest + ":" + hex.EncodeToString(m.Sum(nil))
	}
	return ""
}

// describe is "N bytes, DIGEST", or "N bytes" without a digest to give.
func (g digester) describe(size int64, sum []byte) string {
	if n := g.name(sum); n != "" {
		return fmt.Sprintf("%d bytes, %s", size, n)
	}
	return fmt.Sprintf("%d bytes", size)
}

// unhex decodes a hex digest; nil when it is not one.
func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}
