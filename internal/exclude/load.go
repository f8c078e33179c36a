package exclude

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/writers"
)

// DefaultFile is the admin's exclusion file, read inside the root by every
// command unless --exclude-from names another (or none).
const DefaultFile = "/etc/drift-monitor/exclude.conf"

// MaxFileSize bounds the exclusion file: a hand-written list of paths is
// far smaller, and a larger file is refused rather than read whole.
const MaxFileSize = 1 << 20

// MaxWildcards bounds the patterns of a file that are not a plain path (a
// glob, KIND:PATTERN): a plain path costs a map lookup per directory of a
// declared path, the others a match each, for every declared path at every
// load. A file with more is refused, rather than make a load that long.
const MaxWildcards = 256

// Options say where a command's rules come from: its --exclude patterns,
// then the file its --exclude-from names (DefaultFile unless set).
type Options struct {
	Patterns []Pattern
	// File is a host path inside the root; "" reads no file.
	File string
}

// DefaultOptions read DefaultFile and nothing else.
func DefaultOptions() Options { return Options{File: DefaultFile} }

// Usage texts of the flags, one for every command that has them.
const (
	excludeUsage = "leave alone the declared paths matching `PATTERN`, an absolute path.Match pattern that matches a path " +
		"or a directory above it (neither watched, checked, reported, repaired nor audited); KIND:PATTERN leaves only " +
		"that kind of drift unreported there (repeatable; drift-monitor(8), EXCLUSIONS)"
	excludeFromUsage = "read more patterns from `FILE`, one per line, inside the root (\"\" reads none; a missing " +
		DefaultFile + " is empty, any other file that cannot be read is an error)"
)

// Register declares --exclude and --exclude-from on fs, into o, with o.File
// as --exclude-from's default. A pattern or file name that could never be
// used is a usage error, refused as the flag is parsed.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.Var((*patternFlag)(&o.Patterns), "exclude", excludeUsage)
	fs.Var((*fileFlag)(&o.File), "exclude-from", excludeFromUsage)
}

// patternFlag is --exclude: each value parsed as it is given.
type patternFlag []Pattern

func (f *patternFlag) String() string {
	if f == nil {
		return ""
	}
	s := make([]string, len(*f))
	for i, p := range *f {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (f *patternFlag) Set(v string) error {
	p, err := ParsePattern(v, "--exclude")
	if err != nil {
		return err
	}
	*f = append(*f, p)
	return nil
}

// fileFlag is --exclude-from: an absolute path (inside the root), or "".
type fileFlag string

func (f *fileFlag) String() string {
	if f == nil {
		return ""
	}
	return string(*f)
}

func (f *fileFlag) Set(v string) error {
	if v != "" && !strings.HasPrefix(v, "/") {
		return fmt.Errorf("%q is not an absolute path (it is read inside the root, as / is the host's)", v)
	}
	if v != "" {
		v = path.Clean(v)
	}
	*f = fileFlag(v)
	return nil
}

// Load reads the rulebook inside root: o's patterns, then o.File's. An
// error names the file (a host path, never prefixed by the root) and, for
// a bad pattern, its line.
func (o Options) Load(root *ondisk.Root) (*Rules, error) {
	ps, err := ReadFile(root, o.File)
	if err != nil {
		return nil, err
	}
	return New(append(slices.Clone(o.Patterns), ps...)...), nil
}

// Flags is the rulebook of o's patterns alone: what applies while o.File is
// refused and no earlier reading of it is at hand.
func (o Options) Flags() *Rules { return New(o.Patterns...) }

// ReadFile reads and parses the exclusion file at host path file inside
// root ("" is none). A missing DefaultFile is empty: the admin has nothing
// to exclude. Every other file that cannot be read — missing although
// --exclude-from names it, unreadable, a directory, too large, one that a
// user other than root could have written (package writers: it, or a
// directory or link on its path) — is an error, never an empty rulebook.
func ReadFile(root *ondisk.Root, file string) ([]Pattern, error) {
	if file == "" {
		return nil, nil
	}
	f, err := root.Open(file)
	if errors.Is(err, fs.ErrNotExist) && file == DefaultFile {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, errpath.Strip(err))
	}
	defer f.Close()
	// What it leaves alone no command reports: a file that a user other
	// than root could have written (or a node on its path) would let that
	// user hide drift. Named as the host's paths, as the file is.
	if err := writers.Check(root, file, f, writers.Options{Name: func(p string) string { return p }}); err != nil {
		if errors.Is(err, writers.ErrOthersMayWrite) {
			err = fmt.Errorf("%w; drift-monitor reads only exclusions that root alone may write (chown it to root, chmod go-w)", err)
		}
		return nil, fmt.Errorf("%s: %w", file, errpath.Strip(err))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, errpath.Strip(err))
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a list of patterns", file, MaxFileSize)
	}
	return Parse(file, data)
}

// Parse parses an exclusion file's content: one pattern per line; blank
// lines and lines starting with # are ignored, and so is white space around
// a pattern. An error names name:LINE and what is wrong with it.
func Parse(name string, data []byte) ([]Pattern, error) {
	var out []Pattern
	wildcards := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, MaxFileSize+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		at := fmt.Sprintf("%s:%d", name, n)
		if !utf8.ValidString(line) || strings.ContainsFunc(line, isControl) {
			return nil, fmt.Errorf("%s: not a pattern: control characters or bytes that are not UTF-8", at)
		}
		p, err := ParsePattern(line, at)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if p.Kind != "" || wild(p.Glob) {
			if wildcards++; wildcards > MaxWildcards {
				return nil, fmt.Errorf("%s: more than %d patterns with a wildcard or a kind: list paths, or a directory above them", at, MaxWildcards)
			}
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
