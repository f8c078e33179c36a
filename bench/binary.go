package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// binaryResult is what the measured binary is: its size, and the packages
// its release build links (cmd/drift-monitor/depaware.txt lists them).
type binaryResult struct {
	Size int64
	// ThirdParty and Own count the packages linked beyond Go's standard
	// library: other modules', and drift-monitor's.
	ThirdParty, Own int
	// TestHelpers are test support packages the build links (none in a
	// release build: tools/release-goenv.sh).
	TestHelpers []string
	// Env is how long tools/release-goenv.sh takes when its workspace is
	// there already, and Build a whole make build then (the script, and a
	// go build whose packages are all in the build cache): what the
	// release environment adds to every build.
	Env, Build time.Duration
}

// measureBinary measures the binary at bin and lists what the release build
// of the module at dir links (go list -deps in tools/release-goenv.sh's
// environment, as make build builds bin).
func measureBinary(bin, dir string) (*binaryResult, error) {
	st, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	r := &binaryResult{Size: st.Size()}
	env, err := releaseEnv(dir)
	if err != nil {
		return nil, err
	}
	if r.Env, r.Build, err = timeBuild(dir); err != nil {
		return nil, err
	}
	args := []string{"list", "-deps", "-json=ImportPath,Standard", "./cmd/drift-monitor"}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
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

// releaseEnv runs tools/release-goenv.sh in dir: the go command's
// environment of the release build.
func releaseEnv(dir string) ([]string, error) {
	cmd := exec.Command("./tools/release-goenv.sh")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tools/release-goenv.sh: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// timeBuild times tools/release-goenv.sh and a whole release build (the
// script, then go build as make build runs it) in dir, once each has run
// before: the cost of every build with warm caches.
func timeBuild(dir string) (env, build time.Duration, err error) {
	out, err := os.MkdirTemp("", "drift-bench-build-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(out)
	run := func() (time.Duration, time.Duration, error) {
		start := time.Now()
		e, err := releaseEnv(dir)
		if err != nil {
			return 0, 0, err
		}
		envTook := time.Since(start)
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(out, "drift-monitor"), "./cmd/drift-monitor")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), e...)
		if o, err := cmd.CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("go build: %w\n%s", err, o)
		}
		return envTook, time.Since(start), nil
	}
	if _, _, err := run(); err != nil {
		return 0, 0, err
	}
	return run()
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
	p("## 9. The binary\n\n")
	p("The binary measured (`make build`: tools/release-goenv.sh's release build) and what it links beyond Go's standard library ")
	p("(`go list -deps`; cmd/drift-monitor/depaware.txt lists the packages, and its test fails when they change), ")
	p("and what a build costs with warm caches: tools/release-goenv.sh alone, and the whole of `make build` ")
	p("(the script, then a go build whose packages are all cached).\n\n")
	p("| size | third-party packages | drift-monitor packages | release-goenv.sh | make build, warm |\n| --- | --- | --- | --- | --- |\n")
	p("| %.1f MB | %d | %d | %.2f s | %.2f s |\n\n", float64(b.Size)/1e6, b.ThirdParty, b.Own, b.Env.Seconds(), b.Build.Seconds())
}
