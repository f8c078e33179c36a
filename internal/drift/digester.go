package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// digester names the contents of one drift: in the clear where the content
// could be shown anyway, keyed otherwise, or not at all without a key.
type digester struct {
	key   model.Key
	plain bool
}

// name is the digest of a content whose SHA-256 is sum; "" when it must not
// be given.
func (g digester) name(sum []byte) string {
	switch {
	case len(sum) != sha256.Size:
		return ""
	case g.plain:
		return model.PlainDigest + ":" + hex.EncodeToString(sum)
	case g.key.Valid():
		return g.key.Digest([sha256.Size]byte(sum)).String()
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
