package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// microPackages hold the Go benchmarks of the hot paths.
var microPackages = []string{"./internal/check", "./internal/ondisk", "./internal/daemon", "./internal/desired", "./internal/exclude"}

// microResult is part 4: the raw `go test -bench` output (benchstat's input)
// and benchstat's summary of it.
type microResult struct {
	Cmd       string
	RawFile   string
	Raw       string
	Benchstat string
}

// micro runs the Go benchmarks -count times, but for loading 100,000 files
// (tens of seconds each), which runs once, in a second invocation (and not
// at all in quick mode).
func (b *bench) micro(ctx context.Context, rawFile string) (*microResult, error) {
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", fmt.Sprint(b.microCount),
		"-benchtime", b.microTime, "-short", "-timeout", "60m"}
	args = append(args, microPackages...)
	runs := [][]string{args}
	if !b.microShort {
		runs = append(runs, []string{"test", "-run", "^$", "-bench", "LoadState/files=100000$", "-benchmem", "-count", "1",
			"-benchtime", "1x", "-timeout", "30m", "./internal/desired"})
	}
	var out bytes.Buffer
	var cmds []string
	for _, a := range runs {
		cmd := exec.CommandContext(ctx, "go", a...)
		cmd.Dir = b.moduleDir
		cmd.Stdout = &out
		cmd.Stderr = os.Stderr
		b.logf("part 4: go %s", strings.Join(a, " "))
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(a, " "), err, out.String())
		}
		cmds = append(cmds, "go "+shellQuote(a))
	}
	res := &microResult{Cmd: strings.Join(cmds, "` then `"), RawFile: rawFile, Raw: out.String()}
	if err := os.MkdirAll(filepath.Dir(rawFile), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(rawFile, out.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if bs, err := exec.LookPath(b.benchstat); err == nil {
		name := rawFile
		if rel, err := filepath.Rel(b.moduleDir, rawFile); err == nil {
			name = rel // benchstat titles its columns with the name
		}
		c := exec.CommandContext(ctx, bs, name)
		c.Dir = b.moduleDir
		if o, err := c.Output(); err == nil {
			res.Benchstat = string(o)
		} else {
			res.Benchstat = fmt.Sprintf("(benchstat failed: %v)", err)
		}
	} else {
		res.Benchstat = "(benchstat not found: go install golang.org/x/perf/cmd/benchstat@latest)"
	}
	return res, nil
}
