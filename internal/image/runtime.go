package image

import (
	_ "embed"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// runtimeList is the shipped list of paths the OS writes at run time
// (runtime.list, which says what each is).
//
//go:embed runtime.list
var runtimeList string

// Runtime is a list of runtime-written paths.
type Runtime struct {
	Version  int
	Patterns []string
}

// ShippedRuntime is the list this build ships.
func ShippedRuntime() *Runtime {
	rt, err := ParseRuntime("runtime.list", runtimeList)
	if err != nil {
		panic(err) // a test parses it: a build with a broken list never ships
	}
	return rt
}

// ParseRuntime parses a runtime list: "version N" first, then one
// absolute path.Match pattern per line; # starts a comment.
func ParseRuntime(name, text string) (*Runtime, error) {
	rt := &Runtime{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rt.Version == 0 {
			v, ok := strings.CutPrefix(line, "version ")
			k, err := strconv.Atoi(v)
			if !ok || err != nil || k < 1 {
				return nil, fmt.Errorf("%s:%d: want \"version N\" first, got %q", name, n+1, line)
			}
			rt.Version = k
			continue
		}
		if !strings.HasPrefix(line, EtcDir+"/") {
			return nil, fmt.Errorf("%s:%d: %q is not a path under %s", name, n+1, line, EtcDir)
		}
		if _, err := path.Match(line, EtcDir); err != nil {
			return nil, fmt.Errorf("%s:%d: %q: %w", name, n+1, line, err)
		}
		rt.Patterns = append(rt.Patterns, path.Clean(line))
	}
	if rt.Version == 0 {
		return nil, fmt.Errorf("%s: no version line", name)
	}
	return rt, nil
}

// Match returns the pattern that matches p or a directory above it; ""
// when none does.
func (rt *Runtime) Match(p string) string {
	for _, pat := range rt.Patterns {
		for q := p; q != "/" && q != "."; q = path.Dir(q) {
			if ok, _ := path.Match(pat, q); ok {
				return pat
			}
		}
	}
	return ""
}
