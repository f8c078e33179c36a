package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// binaryResult is what the measured binary is: its size, and the packages
// its release build links (cmd/drift-monitor/depaware.txt lists them).
type binaryResult struct {
	Size int64
	// ThirdParty and Own count the packages linked beyond Go's standard
	// library: other modules', and drift-monitor's.
	ThirdParty, Own int
	// TestHelpers are test support packages the build links (none in a
	// release build: tools/release-goflags.sh).
	TestHelpers []string
}

// measureBinary measures the binary at bin and lists what the release build
// of the module at dir links (go list -deps with tools/release-goflags.sh's
// flags, as make build builds bin).
func measureBinary(bin, dir string) (*binaryResult, error) {
	st, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	r := &binaryResult{Size: st.Size()}
	cmd := exec.Command("./tools/release-goflags.sh")
	cmd.Dir = dir
	flags, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tools/release-goflags.sh: %w", err)
	}
	args := append(append([]string{"list", "-deps", "-json=ImportPath,Standard"}, strings.Fields(string(flags))...), "./cmd/drift-monitor")
	cmd = exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	const self = "github.com/drift-monitor/drift-monitor/"
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath string
			Standard   bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		switch {
		case p.ImportPath == "testing" || p.ImportPath == "net/http/httptest" || strings.HasPrefix(p.ImportPath, "github.com/stretchr/testify/"):
			r.TestHelpers = append(r.TestHelpers, p.ImportPath)
		}
		switch {
		case p.Standard:
		case strings.HasPrefix(p.ImportPath, self):
			r.Own++
		default:
			r.ThirdParty++
		}
	}
	return r, nil
}

// binaryVerdicts: the release binary links no test helper.
func (r *report) binaryVerdicts() []verdict {
	if r.Binary == nil {
		return nil
	}
	measured := "none"
	if len(r.Binary.TestHelpers) > 0 {
		measured = strings.Join(r.Binary.TestHelpers, ", ")
	}
	return []verdict{{Target: "the release binary links no test helper (testing, testify, httptest)", Measured: measured, Met: len(r.Binary.TestHelpers) == 0}}
}

// mdBinary is the section on the binary itself.
func (r *report) mdBinary(p printf) {
	b := r.Binary
	p("## 8. The binary\n\n")
	p("The binary measured (`make build`: tools/release-goflags.sh's release build) and what it links beyond Go's standard library ")
	p("(`go list -deps`; cmd/drift-monitor/depaware.txt lists the packages, and its test fails when they change).\n\n")
	p("| size | third-party packages | drift-monitor packages |\n| --- | --- | --- |\n")
	p("| %.1f MB | %d | %d |\n\n", float64(b.Size)/1e6, b.ThirdParty, b.Own)
}
