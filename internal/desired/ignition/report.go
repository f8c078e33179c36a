package ignition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"

	"github.com/coreos/vcontext/report"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// ReportError turns Ignition's report on raw into a LoadError; positions
// says whether raw is the file itself, so that positions in it mean something.
func ReportError(file string, raw []byte, rpt report.Report, err error, positions bool) *configerr.LoadError {
	le := &configerr.LoadError{File: file, Err: err}
	for _, e := range rpt.Entries {
		if !e.Kind.IsFatal() {
			continue
		}
		le.Err = errors.New(e.Message)
		if e.Context.Len() > 0 {
			le.Context = e.Context.String()
		}
		if positions && e.Marker.StartP != nil {
			p := e.Marker.StartP
			le.Line, le.Column = int(p.Line), int(p.Column)
			if le.Line == 0 && p.Index > 0 && p.Index <= int64(len(raw)) {
				// Ignition cannot place a JSON syntax error on a line (it
				// has no tree of a broken document) but keeps its offset.
				le.Line, le.Column = lineColumn(raw, p.Index)
			}
		}
		break
	}
	if errors.Is(err, ignerrors.ErrUnknownVersion) {
		le.Err = fmt.Errorf("%w %q (supported: 3.0.0 to %s)", err, ConfigVersion(raw), types.MaxVersion)
	}
	return le
}

// lineColumn converts the offset of a JSON syntax error (the bytes read up to
// and including the offending one) into its 1-based line and column.
func lineColumn(raw []byte, offset int64) (line, column int) {
	before := raw[:offset-1]
	line = 1 + bytes.Count(before, []byte("\n"))
	column = len(before) - bytes.LastIndexByte(before, '\n')
	return line, column
}

// ConfigVersion is the ignition.version a config declares, for messages.
func ConfigVersion(raw []byte) string {
	var stub struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	_ = json.Unmarshal(raw, &stub) // only called once Ignition has read the version
	return stub.Ignition.Version
}
