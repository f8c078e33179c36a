package contents

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// ErrHashMismatch is wrapped by the error of a source whose bytes do not
// have the digest its verification.hash declares.
var ErrHashMismatch = errors.New("verification.hash does not match")

// VerifyHash checks the bytes read from a source (decoded, decompressed)
// against its declared verification.hash, as Ignition does for every
// source it reads, a data URL included (v2.27.0 internal/exec/util/file.go,
// newFetchOp: util.GetHasher, the expected sum; internal/resource/url.go,
// decompressCopyHashAndVerify, on the decompressed stream), and for a
// child config (util.AssertValid). On a mismatch Ignition fails ("hash
// verification failed") and writes nothing: such a config was never
// applied, and is refused. Neither digest is said: the bytes may be a
// secret.
func VerifyHash(v types.Verification, raw []byte) error {
	if v.Hash == nil {
		return nil
	}
	algo, sum, _ := strings.Cut(*v.Hash, "-")
	var h hash.Hash
	switch algo {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return fmt.Errorf("verification.hash: unsupported algorithm %q", algo)
	}
	h.Write(raw)
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, sum) {
		return fmt.Errorf("%w the contents (Ignition fails with \"hash verification failed\" and writes nothing)", ErrHashMismatch)
	}
	return nil
}

// VerifiedDataURL says whether a file has a data URL with a declared
// hash among its sources: its contents are decoded when the config is
// loaded, so that a mismatch refuses the config that declares it.
func VerifiedDataURL(f types.File) bool {
	return anySource(f, func(r types.Resource) bool {
		return r.Verification.Hash != nil && r.Source != nil && strings.HasPrefix(*r.Source, "data:")
	})
}
