package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// under reports whether p is prefix or lies beneath it.
func under(p, prefix string) bool {
	return p == prefix || prefix == "/" || strings.HasPrefix(p, prefix+"/")
}

// exclusion is the admin's list of declared paths the daemon leaves alone
// (another component legitimately rewrites them: a rotated CA bundle, a pull
// secret). A pattern matches a path (path.Match) or any directory above it.
type exclusion []string

func (x exclusion) match(p string) bool { return Excluded(x, p) }

// kindExclusion is the checker's Exclude for x: a drift at an excluded
// path (ExcludedDrift); nil without any pattern.
func (x exclusion) kindExclusion() func(*drift.Drift) bool {
	if len(x) == 0 {
		return nil
	}
	return func(d *drift.Drift) bool { return ExcludedDrift(x, d) }
}

// ExcludedDrift reports whether d is left unreported by patterns: its kind
// at its path (ExcludedKind), or its path itself. An entry at an excluded
// path is not checked at all; this catches the drift an entry reports at
// another path: a user's password, declared with /etc/passwd's entry, is
// compared in /etc/shadow, so the daemon's --exclude /etc/shadow leaves it unreported.
func ExcludedDrift(patterns []string, d *drift.Drift) bool {
	return Excluded(patterns, d.Path) || ExcludedKind(patterns, d.Kind, d.Path)
}

// Excluded reports whether a pattern of the daemon's --exclude matches p:
// p itself or a directory above it (path.Match). `drift-monitor reconcile
// --exclude` leaves alone what the daemon would. A pattern for one kind of
// drift (KIND:PATTERN, see ExcludedKind) leaves the path watched.
func Excluded(patterns []string, p string) bool {
	for _, pat := range patterns {
		if !strings.HasPrefix(pat, "/") {
			continue
		}
		if matchUp(pat, p) {
			return true
		}
	}
	return false
}

// ExcludedKind reports whether a pattern for one kind of drift,
// KIND:PATTERN (label:/etc/kubernetes/*), matches a drift of kind k at p:
// that drift is not reported, the rest of the path's is. Fedora CoreOS
// keeps such per-path exceptions for labels after a policy update
// (coreos/fedora-coreos-config PR #3192).
func ExcludedKind(patterns []string, k drift.Kind, p string) bool {
	for _, pat := range patterns {
		if kind, rest, ok := strings.Cut(pat, ":"); ok && kind == string(k) && matchUp(rest, p) {
			return true
		}
	}
	return false
}

// CheckExclusion validates an --exclude pattern: an absolute path.Match
// pattern, or KIND:PATTERN for a kind of drift.
func CheckExclusion(pat string) error {
	if kind, rest, ok := strings.Cut(pat, ":"); ok && !strings.HasPrefix(pat, "/") {
		if _, known := drift.ParseKind(kind); !known {
			return fmt.Errorf("pattern %q: %q is not a kind of drift", pat, kind)
		}
		pat = rest
	}
	if !strings.HasPrefix(pat, "/") {
		return fmt.Errorf("pattern %q is not an absolute path", pat)
	}
	if _, err := path.Match(pat, "/"); err != nil {
		return fmt.Errorf("pattern %q: %w", pat, err)
	}
	return nil
}

// matchUp: pat matches p or a directory above it.
func matchUp(pat, p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false // path.Dir of a relative path ends at ".", never at "/"
	}
	for q := p; ; q = path.Dir(q) {
		if ok, _ := path.Match(pat, q); ok {
			return true
		}
		if q == "/" {
			return false
		}
	}
}

// exclusions reads the patterns from the options and the exclude file: one
// absolute pattern per line, # starts a comment. A missing file is empty.
func (d *Daemon) exclusions() (exclusion, error) {
	x := exclusion(append([]string(nil), d.o.Exclude...))
	if d.o.ExcludeFile == "" {
		return x, nil
	}
	file := d.root.Join(d.o.ExcludeFile)
	data, err := d.root.ReadFile(d.o.ExcludeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, err
	}
	return parseExclusions(file, data, x)
}

func parseExclusions(file string, data []byte, x exclusion) (exclusion, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := CheckExclusion(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		if kind, rest, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "/") {
			x = append(x, kind+":"+path.Clean(rest))
			continue
		}
		x = append(x, path.Clean(line))
	}
	return x, sc.Err()
}
