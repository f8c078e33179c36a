// Package configerr says what is wrong with a config that cannot be loaded,
// and where: the file, the line and column where the reader has them (a
// JSON offset, a YAML construct), and the config path. Every stage of the
// loader reports a refused config with its LoadError, so that every
// message has the one shape "file:line:column: path: what".
package configerr

import (
	"fmt"
	"strings"
)

// LoadError is a config that cannot be loaded: it names the file and, where
// Ignition's report has them, the line, column and JSON path of the problem.
type LoadError struct {
	File    string
	Line    int // 0 when unknown
	Column  int
	Context string // the config path, e.g. $.storage.files.0.path
	Err     error
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Context != "" && e.Context != "$" {
		fmt.Fprintf(&b, "%s: ", e.Context)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *LoadError) Unwrap() error { return e.Err }
