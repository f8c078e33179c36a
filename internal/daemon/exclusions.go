package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
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

// Excluded reports whether a pattern of the daemon's --exclude matches p:
// p itself or a directory above it (path.Match). `drift-monitor reconcile
// --exclude` leaves alone what the daemon would.
func Excluded(patterns []string, p string) bool {
	for _, pat := range patterns {
		for q := p; ; q = path.Dir(q) {
			if ok, _ := path.Match(pat, q); ok {
				return true
			}
			if q == "/" {
				break
			}
		}
	}
	return false
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
		if !strings.HasPrefix(line, "/") {
			return nil, fmt.Errorf("%s:%d: pattern %q is not an absolute path", file, n, line)
		}
		if _, err := path.Match(line, "/"); err != nil {
			return nil, fmt.Errorf("%s:%d: pattern %q: %w", file, n, line, err)
		}
		x = append(x, path.Clean(line))
	}
	return x, sc.Err()
}
