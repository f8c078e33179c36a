package statecache

import (
	"crypto/sha256"
	"fmt"
	"os"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// entryFile is a lazy state's model.ContentStore: the entry it was read
// from, open, so that the contents stay readable when the entry is removed
// from the directory (trimmed, or by hand). The file closes when the state
// and every copy of its Store are garbage.
type entryFile struct{ f *os.File }

// ReadStored reads s's bytes back and checks them against its digest.
func (e entryFile) ReadStored(s *model.Stored) ([]byte, error) {
	b := make([]byte, s.Size)
	if _, err := e.f.ReadAt(b, s.Offset); err != nil {
		return nil, fmt.Errorf("reading the declared content back from %s: %w", e.f.Name(), err)
	}
	if sha256.Sum256(b) != s.Sum {
		return nil, fmt.Errorf("reading the declared content back from %s: digest mismatch", e.f.Name())
	}
	return b, nil
}
