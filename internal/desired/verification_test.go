package desired

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/contents"
)

// TestDataURLHashVerified: a data URL's verification.hash is checked
// against its decoded, decompressed bytes, as Ignition checks it, for a
// file's contents and its append fragments: a mismatch refuses the config
// at the file, without saying either digest; a match loads.
func TestDataURLHashVerified(t *testing.T) {
	const text = "verified contents\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	gzURL := "data:;base64," + base64.StdEncoding.EncodeToString(gz.Bytes())
	s512, s256 := sha512.Sum512([]byte(text)), sha256.Sum256([]byte(text))
	good512, good256 := "sha512-"+hex.EncodeToString(s512[:]), "sha256-"+hex.EncodeToString(s256[:])
	bad512 := "sha512-" + strings.Repeat("0", 128)
	file := func(res string) string {
		return fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/ok","contents":{"source":"data:,ok"}},{"path":"/etc/v",%s}]}}`, res)
	}
	tests := []struct {
		name, raw string
		ok        bool
	}{
		{"gzip, sha512 of the decompressed bytes", file(fmt.Sprintf(`"contents":{"source":%q,"compression":"gzip","verification":{"hash":%q}}`, gzURL, good512)), true},
		{"gzip, a wrong sha512", file(fmt.Sprintf(`"contents":{"source":%q,"compression":"gzip","verification":{"hash":%q}}`, gzURL, bad512)), false},
		{"plain percent-encoded, sha256", file(fmt.Sprintf(`"contents":{"source":"data:,verified%%20contents%%0A","verification":{"hash":%q}}`, good256)), true},
		{"plain base64, a wrong hash", file(fmt.Sprintf(`"contents":{"source":"data:;base64,%s","verification":{"hash":%q}}`,
			base64.StdEncoding.EncodeToString([]byte("other\n")), good512)), false},
		{"an append fragment, a wrong hash", file(fmt.Sprintf(`"append":[{"source":"data:,x","verification":{"hash":%q}}]`, good256)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("v.ign", []byte(tt.raw))
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var le *configerr.LoadError
			if !errors.As(err, &le) || le.Context != "$.storage.files.1" || !errors.Is(err, contents.ErrHashMismatch) {
				t.Fatalf("error %v, want a LoadError at $.storage.files.1 wrapping contents.ErrHashMismatch", err)
			}
			if strings.Contains(err.Error(), hex.EncodeToString(s512[:])[:16]) || strings.Contains(err.Error(), strings.Repeat("0", 16)) {
				t.Errorf("the error says a digest: %v", err)
			}
		})
	}
}
