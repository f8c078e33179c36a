package selinux

import (
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
)

// A lookup that walks every regular expression of a path's stem tries
// hundreds under /etc or /usr (Debian's policy has 331 and 714), each behind
// a test of its literal prefix; prefixIndex gives only those whose literal
// prefix (spec.prefix) the path starts with, a handful, in the order
// lookup_all tries them (the last in file order first).
//
// libselinux does the same at a coarser grain: 3.4 tries an expression only
// on paths of its stem, the first path component (label_file.c,
// find_stem_from_file and lookup_all); 3.10 and later keep the
// specifications in a tree of literal path components and start from the
// deepest node a path reaches (label_file.c, lookup_find_deepest_node and
// lookup_check_node, from "libselinux: rework selabel_file(5) database").
// A literal prefix goes at least as deep, and is cut where an expression's
// first metacharacter is, within a component too.
//
// The prefixes a path starts with are all prefixes of the longest of them,
// so each distinct prefix keeps the expressions of every shorter prefix of
// it in the index beside its own, ordered once when the index is built: a
// lookup finds the longest prefix of the path (one binary search, then up
// its chain of shorter prefixes) and walks one list.
//
// The stem rule still applies to what it gives (an expression with a stem
// is tried only on paths with that first component): a prefix does not
// always imply it (^/etc/?x$ has the prefix /etc and matches /etcx, which
// has no stem).
type prefixIndex struct {
	// prefixes are the distinct literal prefixes of the expressions,
	// sorted; parent[i] is the index of the longest other one that is a
	// prefix of prefixes[i] (-1: none); specs[i] are the expressions whose
	// prefix is prefixes[i] or one of its own prefixes, the last in file
	// order first.
	prefixes []string
	parent   []int
	specs    [][]*spec
}

// newPrefixIndex indexes the expressions of regexes (by stem, as Contexts
// keeps them).
func newPrefixIndex(regexes map[string][]*spec) *prefixIndex {
	own := map[string][]*spec{}
	for _, specs := range regexes {
		for _, s := range specs {
			own[s.prefix] = append(own[s.prefix], s)
		}
	}
	x := &prefixIndex{prefixes: make([]string, 0, len(own))}
	for p := range own {
		x.prefixes = append(x.prefixes, p)
	}
	sort.Strings(x.prefixes)
	x.parent = make([]int, len(x.prefixes))
	x.specs = make([][]*spec, len(x.prefixes))
	// Sorted, a prefix comes before the strings that extend it: the stack
	// holds the chain of prefixes of the current one.
	var chain []int
	for i, p := range x.prefixes {
		for len(chain) > 0 && !strings.HasPrefix(p, x.prefixes[chain[len(chain)-1]]) {
			chain = chain[:len(chain)-1]
		}
		x.parent[i] = -1
		var inherited []*spec
		if len(chain) > 0 {
			x.parent[i] = chain[len(chain)-1]
			inherited = x.specs[x.parent[i]]
		}
		x.specs[i] = mergeDescending(inherited, own[p])
		chain = append(chain, i)
	}
	return x
}

// mergeDescending is the specs of a (the last in file order first) and of
// b (in any order), the last in file order first.
func mergeDescending(a, b []*spec) []*spec {
	b = slices.Clone(b)
	slices.SortFunc(b, func(x, y *spec) int { return y.order - x.order })
	out := make([]*spec, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].order > b[0].order {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// candidates are the expressions whose literal prefix k starts with, the
// last in file order first.
func (x *prefixIndex) candidates(k string) []*spec {
	// The greatest prefix ≤ k: every prefix of k that is one of them lies
	// between the longest of those and k, so it is that one's or one of
	// its chain.
	i := sort.SearchStrings(x.prefixes, k)
	if i < len(x.prefixes) && x.prefixes[i] == k {
		return x.specs[i]
	}
	for i--; i >= 0 && !strings.HasPrefix(k, x.prefixes[i]); {
		i = x.parent[i]
	}
	if i < 0 {
		return nil
	}
	return x.specs[i]
}

// matchIndexed is match, trying only the expressions the index gives for k
// (and of those, only the ones whose literals k holds).
func (c *Contexts) matchIndexed(k string, t FileType) *spec {
	if s := c.matchLiteral(k, t); s != nil {
		return s
	}
	st := stemOfPath(k)
	for _, s := range c.index.candidates(k) {
		if (s.stem == "" || s.stem == st) && typeMatches(s, t) && s.mayMatch(k) && s.matchesFast(k) {
			return s
		}
	}
	return nil
}

// literals are what every match of re, an anchored expression as
// syntax.Parse returns it, holds as it is: the literals of its top-level
// concatenation. suffix is the run of them that ends it before the end of
// text ("" when it ends otherwise); infixes are the others, but for the one
// the expression starts with (its prefix, which the index already
// requires). Many expressions of a policy end so (/usr/(.*/)?dh-python/dh_pypy)
// or need a word (/etc/.*l2tp(/.*)?), and telling that a path lacks one
// costs far less than running the expression.
func literals(re *syntax.Regexp) (suffix string, infixes []string) {
	if re.Op != syntax.OpConcat {
		return "", nil
	}
	sub := re.Sub
	if len(sub) > 0 && sub[0].Op == syntax.OpBeginText {
		sub = sub[1:]
		if len(sub) > 0 && sub[0].Op == syntax.OpLiteral {
			sub = sub[1:]
		}
	}
	end := len(sub)
	if end > 0 && sub[end-1].Op == syntax.OpEndText {
		end--
		var tail []rune
		for end > 0 && plainLiteral(sub[end-1]) {
			tail = append(slices.Clone(sub[end-1].Rune), tail...)
			end--
		}
		suffix = string(tail)
	}
	for _, r := range sub[:end] {
		if plainLiteral(r) {
			infixes = append(infixes, string(r.Rune))
		}
	}
	return suffix, infixes
}

// plainLiteral: r is a literal that matches only itself (not ignoring case).
func plainLiteral(r *syntax.Regexp) bool {
	return r.Op == syntax.OpLiteral && r.Flags&syntax.FoldCase == 0
}

// mayMatch: k ends with the spec's literal suffix and holds its infixes, as
// every path it matches does.
func (s *spec) mayMatch(k string) bool {
	if !strings.HasSuffix(k, s.suffix) {
		return false
	}
	for _, in := range s.infixes {
		if !strings.Contains(k, in) {
			return false
		}
	}
	return true
}

// Most expressions of a policy are a literal path and what may follow it,
// in one of two shapes (Debian's: 1,900 of 2,685), matched here without
// the regexp package: a lookup's last step, the expression that matches,
// is nearly always one of them.
const (
	shapeRegexp  = iota // anything else: the regexp package decides
	shapeAnyTail        // ^L.*$
	shapeSubtree        // ^L(/.*)?$
)

// shapeOf is the shape of re, an anchored expression as syntax.Parse
// returns it, and its literal L.
func shapeOf(re *syntax.Regexp) (shape int, lit string) {
	if re.Op != syntax.OpConcat || len(re.Sub) != 4 || re.Sub[0].Op != syntax.OpBeginText || !plainLiteral(re.Sub[1]) ||
		re.Sub[3].Op != syntax.OpEndText {
		return shapeRegexp, ""
	}
	lit = string(re.Sub[1].Rune)
	switch tail := re.Sub[2]; {
	case anyRun(tail):
		return shapeAnyTail, lit
	case tail.Op == syntax.OpQuest:
		in := tail.Sub[0]
		if in.Op == syntax.OpCapture {
			in = in.Sub[0]
		}
		if in.Op == syntax.OpConcat && len(in.Sub) == 2 && plainLiteral(in.Sub[0]) && string(in.Sub[0].Rune) == "/" && anyRun(in.Sub[1]) {
			return shapeSubtree, lit
		}
	}
	return shapeRegexp, ""
}

// anyRun: r is .* (any number of characters but a newline).
func anyRun(r *syntax.Regexp) bool {
	return r.Op == syntax.OpStar && r.Sub[0].Op == syntax.OpAnyCharNotNL
}

// matchesFast is matches, without the regexp package for the shapes it
// knows. . matches any character but a newline, and a byte that is not
// UTF-8 as one (U+FFFD, as the regexp package reads it).
func (s *spec) matchesFast(k string) bool {
	switch s.shape {
	case shapeAnyTail:
		return strings.HasPrefix(k, s.lit) && strings.IndexByte(k[len(s.lit):], '\n') < 0
	case shapeSubtree:
		if k == s.lit {
			return true
		}
		rest, ok := strings.CutPrefix(k, s.lit)
		return ok && rest[0] == '/' && strings.IndexByte(rest, '\n') < 0
	}
	return s.matches(k)
}
