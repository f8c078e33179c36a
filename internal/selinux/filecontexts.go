// Package selinux computes the SELinux label a policy gives a path — what
// `matchpathcon` prints and `setfiles -F` writes — without cgo: a lookup
// over the policy's file_contexts, file_contexts.homedirs and
// file_contexts.local with the file_contexts.subs and .subs_dist path
// aliases, ordered and matched as libselinux orders and matches them
// (SELinuxProject/selinux libselinux/src/label_file.{c,h}, 3.4 — Debian 12's
// — and 3.11, which keeps the same precedence):
//
//   - the three files are read in that order into one list;
//   - a spec without regular-expression metacharacters (a backslash escapes
//     the character after it) is a literal, and literals are tried before
//     every regular expression (sort_specs moves them to the end of the
//     list, which lookup_all walks backwards);
//   - among literals, and then among regular expressions, the last in file
//     order that matches wins;
//   - a spec with a file type (--, -d, -l, -c, -b, -s, -p) matches only
//     nodes of that type;
//   - every spec is anchored, ^SPEC$, and a spec whose first path component
//     is free of metacharacters (its stem) is tried only on paths with that
//     first component (find_stem_from_file);
//   - <<none>> as the first match means no label is expected;
//   - the path has its doubled slashes collapsed and a trailing slash removed,
//     then the first alias of .subs that is a prefix of it (ending at a
//     component boundary; the last line first) and then of .subs_dist
//     rewrites it (selabel_sub_key).
//
// Regular expressions are Go's (RE2) rather than PCRE's: the policies'
// file_contexts use the common subset (Debian's: 0 of 5,621 fail to
// compile). The lookup indexes literals in a map and regular expressions by
// their literal prefix (index.go: libselinux indexes them by stem, and from
// 3.10 by literal path components), tests what else an expression needs a
// path to hold before running it, matches the two commonest shapes of
// expression without the regexp package, and compiles an expression the
// first time a path gets that far (a load only parses them).
package selinux

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode"
)

// FileType is a node type as a file_contexts spec names it.
type FileType byte

const (
	AnyType   FileType = 0
	Regular   FileType = '-' // --
	Directory FileType = 'd'
	Symlink   FileType = 'l'
	CharDev   FileType = 'c'
	BlockDev  FileType = 'b'
	Socket    FileType = 's'
	FIFO      FileType = 'p'
)

// spec is one line of a file_contexts file.
type spec struct {
	// re is the spec's regular expression, compiled the first time a path
	// reaches it (matches): a policy has thousands, a check's declared
	// paths get past the literal prefix of a small part of them, and
	// compiling them all was most of a load's time and memory. The load
	// parses each one, so a spec that would not compile is still an error
	// of the load, named (TestEveryExpressionCompiles holds the two
	// together).
	compile sync.Once
	re      *regexp.Regexp
	prefix  string   // what every path the regular expression matches starts with
	suffix  string   // what every path it matches ends with
	infixes []string // what every path it matches holds (index.go, literals)
	shape   int      // how matchesFast matches it, with lit (index.go)
	lit     string
	literal string // the path a literal spec matches (escapes resolved)
	stem    string // "" without one
	typ     FileType
	context string
	order   int // position in file order
	src     string
}

// sub is one alias of a .subs file: a path prefix and what it stands for.
type sub struct{ src, dst string }

// Contexts is a policy's file contexts, loaded.
type Contexts struct {
	// literals by path, each in file order.
	literals map[string][]*spec
	// regexes by stem ("" for the specs without one), each in file order.
	regexes map[string][]*spec
	// index finds the regular expressions a path can match (index.go).
	index    *prefixIndex
	subs     []sub // .subs, last line first
	distSubs []sub // .subs_dist, last line first
	// Specs counts what was loaded, for messages.
	Specs int
}

// Reader reads a file of the policy; fs.ErrNotExist for a missing one.
type Reader func(path string) ([]byte, error)

// Load reads the file contexts at path (…/contexts/files/file_contexts)
// with their .homedirs, .local, .subs and .subs_dist siblings, the optional
// ones missing or not.
func Load(read Reader, path string) (*Contexts, error) {
	c := &Contexts{literals: map[string][]*spec{}, regexes: map[string][]*spec{}}
	var err error
	if c.distSubs, err = loadSubs(read, path+".subs_dist"); err != nil {
		return nil, err
	}
	if c.subs, err = loadSubs(read, path+".subs"); err != nil {
		return nil, err
	}
	order := 0
	for i, p := range []string{path, path + ".homedirs", path + ".local"} {
		data, err := read(p)
		if i > 0 && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := c.parse(p, data, &order); err != nil {
			return nil, err
		}
	}
	c.index = newPrefixIndex(c.regexes)
	return c, nil
}

// maxLine bounds a line of a file_contexts file: libselinux reads them with
// getline(), unbounded, but a spec is a path pattern and a context, and
// the longest of a real policy is a few hundred bytes.
const maxLine = 1 << 20

func (c *Contexts) parse(file string, data []byte, order *int) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 1
	for ; sc.Scan(); n++ {
		fields := strings.FieldsFunc(sc.Text(), func(r rune) bool { return r < 0x80 && unicode.IsSpace(r) })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		s := &spec{src: fields[0], order: *order}
		switch len(fields) {
		case 2:
			s.context = fields[1]
		case 3:
			t, ok := fileTypes[fields[1]]
			if !ok {
				return fmt.Errorf("%s:%d: invalid file type %q", file, n, fields[1])
			}
			s.typ, s.context = t, fields[2]
		default:
			return fmt.Errorf("%s:%d: want PATHNAME [TYPE] CONTEXT, got %d fields", file, n, len(fields))
		}
		*order++
		c.Specs++
		s.stem = stemOfSpec(s.src)
		if lit, ok := literal(s.src); ok {
			s.literal = lit
			c.literals[lit] = append(c.literals[lit], s)
			continue
		}
		// What syntax.Parse accepts, regexp.Compile compiles: it parses with
		// the same flags, and its further steps do not fail.
		re, err := syntax.Parse(anchored(s.src), syntax.Perl)
		if err != nil {
			return fmt.Errorf("%s:%d: %q: %v", file, n, s.src, err)
		}
		s.prefix = regexPrefix(s.src)
		s.suffix, s.infixes = literals(re)
		s.shape, s.lit = shapeOf(re)
		c.regexes[s.stem] = append(c.regexes[s.stem], s)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("%s:%d: a line longer than %d bytes: not a file_contexts spec", file, n, maxLine)
	}
	if sc.Err() != nil {
		return fmt.Errorf("%s:%d: %w", file, n, sc.Err())
	}
	return nil
}

// anchored is a spec's regular expression as lookup_all matches it: whole
// paths only.
func anchored(src string) string { return "^" + src + "$" }

// matches reports whether the spec's regular expression matches k,
// compiling it the first time (see spec.re).
func (s *spec) matches(k string) bool {
	s.compile.Do(func() { s.re = regexp.MustCompile(anchored(s.src)) })
	return s.re.MatchString(k)
}

// fileTypes are the type fields of file_contexts (string_to_mode).
var fileTypes = map[string]FileType{"--": Regular, "-d": Directory, "-l": Symlink, "-c": CharDev, "-b": BlockDev,
	"-s": Socket, "-p": FIFO}

// metaChars are the characters that make a spec a regular expression
// (spec_hasMetaChars in label_file.h, 3.4).
const metaChars = ".^$?*+|[({"

// literal resolves a spec without metacharacters to the path it matches: a
// backslash escapes the character after it.
func literal(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
			if i < len(s) {
				b.WriteByte(s[i])
			}
		case strings.IndexByte(metaChars, c) >= 0:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// regexPrefix is the literal text every match of the anchored spec starts
// with — a cheap test before the regular expression runs: the characters
// before the first metacharacter (escapes resolved), less the last when a
// quantifier follows it; "" when an alternation outside any group makes
// the whole spec a choice.
func regexPrefix(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				return ""
			}
		case '[':
			// A class: skip to its end (a ] first in it is literal).
			j := i + 1
			if j < len(s) && s[j] == '^' {
				j++
			}
			if j < len(s) && s[j] == ']' {
				j++
			}
			for j < len(s) && s[j] != ']' {
				j++
			}
			i = j
		}
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			if i+1 >= len(s) || !isLiteralEscape(s[i+1]) {
				break
			}
			i++
			c = s[i]
		} else if strings.IndexByte(metaChars, c) >= 0 || c == ')' || c == ']' || c == '}' {
			break
		}
		if i+1 < len(s) && strings.IndexByte("?*{", s[i+1]) >= 0 {
			break // optional, or repeated any number of times
		}
		b = append(b, c)
	}
	return string(b)
}

// isLiteralEscape: \c stands for c itself (not \d, \w, \b and the like).
func isLiteralEscape(c byte) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
}

// stemOfSpec is the spec's first path component when no metacharacter is in
// it (get_stem_from_spec): "/etc" of "/etc/ssh(/.*)?"; "" otherwise.
func stemOfSpec(s string) string {
	if len(s) < 2 {
		return ""
	}
	i := strings.IndexByte(s[1:], '/')
	if i < 0 {
		return ""
	}
	stem := s[:i+1]
	if strings.ContainsAny(stem, metaChars) {
		return ""
	}
	return stem
}

// stemOfPath is a path's first component when another follows it
// (find_stem_from_file); "" otherwise.
func stemOfPath(p string) string {
	if len(p) < 2 {
		return ""
	}
	i := strings.IndexByte(p[1:], '/')
	if i < 0 {
		return ""
	}
	return p[:i+1]
}

func loadSubs(read Reader, path string) ([]sub, error) {
	data, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var subs []sub
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		subs = append(subs, sub{src: f[0], dst: f[1]})
	}
	// The last line first, as libselinux keeps them.
	for i, j := 0, len(subs)-1; i < j; i, j = i+1, j-1 {
		subs[i], subs[j] = subs[j], subs[i]
	}
	return subs, nil
}

func applySubs(subs []sub, p string) (string, bool) {
	for _, s := range subs {
		if !strings.HasPrefix(p, s.src) {
			continue
		}
		rest := p[len(s.src):]
		if rest != "" && rest[0] != '/' {
			continue
		}
		if rest != "" && s.dst == "/" {
			rest = rest[1:]
		}
		return s.dst + rest, true
	}
	return p, false
}

// key is the path as lookup_all matches it.
func (c *Contexts) key(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	if q, ok := applySubs(c.subs, p); ok {
		if r, ok := applySubs(c.distSubs, q); ok {
			return r
		}
		return q
	}
	p, _ = applySubs(c.distSubs, p)
	return p
}

// Lookup returns the context the policy gives a node of type t at path p,
// and false when it gives none (no spec matches, or <<none>>).
func (c *Contexts) Lookup(p string, t FileType) (string, bool) {
	k := c.key(p)
	s := c.matchIndexed(k, t)
	if s == nil || s.context == "<<none>>" {
		return "", false
	}
	return s.context, true
}

func typeMatches(s *spec, t FileType) bool { return t == AnyType || s.typ == AnyType || s.typ == t }

// match is the lookup of k by every regular expression of its stem, as
// libselinux 3.4's lookup_all walks them: the reference that matchIndexed
// is tested against.
func (c *Contexts) match(k string, t FileType) *spec {
	if s := c.matchLiteral(k, t); s != nil {
		return s
	}
	// Regular expressions: those without a stem and those with the path's,
	// merged by file order, the last first.
	a, b := c.regexes[""], []*spec(nil)
	if st := stemOfPath(k); st != "" {
		b = c.regexes[st]
	}
	i, j := len(a)-1, len(b)-1
	for i >= 0 || j >= 0 {
		var s *spec
		if j < 0 || (i >= 0 && a[i].order > b[j].order) {
			s, i = a[i], i-1
		} else {
			s, j = b[j], j-1
		}
		if typeMatches(s, t) && strings.HasPrefix(k, s.prefix) && s.matches(k) {
			return s
		}
	}
	return nil
}

// matchLiteral is the literal spec for k, if one matches: literals are
// tried before every regular expression.
func (c *Contexts) matchLiteral(k string, t FileType) *spec {
	// A literal matches its path only, and one whose stem is not the
	// path's cannot match it anyway (the stem is a prefix of its path).
	lits := c.literals[k]
	for i := len(lits) - 1; i >= 0; i-- {
		if typeMatches(lits[i], t) {
			return lits[i]
		}
	}
	return nil
}
