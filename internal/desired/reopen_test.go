package desired

import (
	"bytes"
	"io"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// reopenBytes reopens b, counting the times in *opened.
func reopenBytes(b []byte, opened *int) types.Reopen {
	return func() (io.ReadCloser, error) {
		*opened++
		return io.NopCloser(bytes.NewReader(b)), nil
	}
}
