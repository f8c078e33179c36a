// Package butane reads Butane configs as fragments.
//
// It is a stage of its own because Butane's translator is the largest
// module the binary links, and takes test helpers with it (see
// tools/release-goenv.sh): only this stage and the load above it link it
// (cmd/drift-monitor's TestLoaderStages), so that no other stage, and
// nothing that observes, compares or caches, carries it.
//
// Ignition 2.27 takes a Butane config where it takes an Ignition one
// (v2.27.0 config/config.go, Parse): Ignition JSON first, and only if that
// fails butane/config.TranslateBytes with zero TranslateBytesOptions (no
// files directory, no Raw), whose Ignition JSON it then parses. A fragment
// is read the same way, with the same translator of the same module, so
// that a host is checked against what Ignition applied:
//
//   - which files are Butane is the loader's format detection's to say
//     (package format), as Parse would try Ignition JSON first;
//   - every variant Butane knows is translated (fcos, flatcar, r4e, fiot,
//     openshift). For openshift, TranslateBytes without Raw yields a
//     MachineConfig (butane/config/openshift/v4_N/translate.go,
//     ToConfigBytes: TranslateBytesYAML, "ToMachineConfig4_N"), which is
//     read as the MachineConfig fragment it is — Ignition's Parse cannot
//     read it, but the machine-config daemon writes such a config;
//   - with no files directory, Butane refuses `local:` contents and
//     `trees` (butane/base/util/file.go, ReadLocalFile; base/v0_N
//     translate.go: ErrNoFilesDir): the fragment must be self-contained,
//     and the error says so;
//   - an error of Butane's names the file, and the line and column Butane
//     gives (its report entries carry the YAML position).
package butane

import (
	"bytes"
	"errors"
	"fmt"

	butaneconfig "github.com/coreos/ignition/v2/butane/config"
	butanecommon "github.com/coreos/ignition/v2/butane/config/common"
	"github.com/coreos/vcontext/report"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"sigs.k8s.io/yaml"
)

// ErrFilesDir replaces Butane's own message for a local file: its
// advice (-d/--files-dir) is for the butane command, not for a fragment.
var ErrFilesDir = errors.New("local file contents (local:, trees) are not supported: " +
	"a fragment must be self-contained; inline the contents, or translate it with butane --files-dir and install the .ign")

// Parse translates the Butane config raw with Ignition's module and has
// read parse the result as the Ignition config or MachineConfig it is
// (the loader's format detection, which calls Parse); errors name file.
func Parse(file string, raw []byte, read func(file string, raw []byte) (parsed.Fragment, error)) (parsed.Fragment, error) {
	out, rpt, err := butaneconfig.TranslateBytes(raw, butanecommon.TranslateBytesOptions{})
	if err != nil {
		return parsed.Fragment{File: file}, butaneError(file, raw, rpt, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) {
		// openshift: a MachineConfig in YAML.
		if out, err = yaml.YAMLToJSON(out); err != nil {
			return parsed.Fragment{File: file}, &configerr.LoadError{File: file, Err: fmt.Errorf("reading Butane's MachineConfig: %w", err)}
		}
	}
	// Parsed as JSON under a name of its own, so that nothing of the file's
	// extension applies; its errors then point into Butane's output, not
	// into file: they keep their JSON path and lose their position.
	frag, err := read(file+".json", out)
	frag.File = file
	frag.Warnings = append(frag.Warnings, butaneWarnings(rpt)...)
	if le := (*configerr.LoadError)(nil); errors.As(err, &le) {
		le.File, le.Line, le.Column = file, 0, 0
		le.Err = fmt.Errorf("in the config Butane translated it to: %w", le.Err)
		return frag, le
	}
	return frag, err
}

// butaneError is the LoadError for a failed translation: the first error of
// Butane's report, at its line and column in raw, or Butane's own error.
func butaneError(file string, raw []byte, rpt report.Report, err error) *configerr.LoadError {
	le := ignition.ReportError(file, raw, rpt, err, true)
	if le.Line == 0 {
		// A syntax error, or a value of the wrong type: Butane's report is
		// empty, and go-yaml's message names a line (for a syntax error,
		// one that may not be the error's).
		configerr.YAMLPosition(le, raw)
	}
	if le.Err.Error() == butanecommon.ErrNoFilesDir.Error() {
		le.Err = ErrFilesDir
	}
	le.Err = butanePrefixed{le.Err}
	return le
}

// butanePrefixed says that err is Butane's.
type butanePrefixed struct{ err error }

func (e butanePrefixed) Error() string { return "Butane: " + e.err.Error() }
func (e butanePrefixed) Unwrap() error { return e.err }

// butaneWarnings are the warnings of Butane's report, with their lines.
func butaneWarnings(rpt report.Report) []string {
	var out []string
	for _, e := range rpt.Entries {
		if e.Kind != report.Warn {
			continue
		}
		w := "Butane: " + e.Message
		if e.Marker.StartP != nil {
			w = fmt.Sprintf("line %d column %d: %s", e.Marker.StartP.Line, e.Marker.StartP.Column, w)
		}
		out = append(out, w)
	}
	return out
}
