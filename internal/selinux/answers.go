package selinux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// An Answer is what a policy gives a path as one type of node: Lookup's
// result, Context "" when OK is false.
type Answer struct {
	Path    string
	Type    FileType
	Context string
	OK      bool
}

// PolicyKey names a policy by the contents of its files (whoever computes
// it: a policy's answers are kept under it, and must never be given for
// another policy's).
type PolicyKey [32]byte

// Answers are a policy's answers to some lookups, kept to give them again
// without loading the policy: sorted by path and type, in the block of
// bytes EncodeAnswers writes, which DecodeAnswers reads without copying
// the paths (a check of 100,000 paths reads them all once).
type Answers struct {
	paths    []byte   // the paths, one after the other
	ends     []uint32 // where each ends in paths
	types    []byte
	contexts []uint32 // into names; noContext: the policy gives none
	names    []string
}

const noContext = ^uint32(0)

// Len is the number of answers.
func (a *Answers) Len() int {
	if a == nil {
		return 0
	}
	return len(a.ends)
}

func (a *Answers) path(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = a.ends[i-1]
	}
	return a.paths[start:a.ends[i]]
}

// Find returns the index of the answer for p as a node of type t, and
// whether there is one.
func (a *Answers) Find(p string, t FileType) (int, bool) {
	n := a.Len()
	i, j := 0, n
	for i < j {
		h := int(uint(i+j) >> 1)
		if compareAnswer(a.path(h), a.types[h], p, t) < 0 {
			i = h + 1
		} else {
			j = h
		}
	}
	return i, i < n && compareAnswer(a.path(i), a.types[i], p, t) == 0
}

// Seek is Find starting from hint, the index of an answer at or before
// the one sought (lookups in sorted order then cost a step or two).
func (a *Answers) Seek(p string, t FileType, hint int) (int, bool) {
	n := a.Len()
	for k := 0; k < 4 && hint >= 0 && hint < n; k++ {
		switch c := compareAnswer(a.path(hint), a.types[hint], p, t); {
		case c == 0:
			return hint, true
		case c > 0:
			return a.Find(p, t)
		}
		hint++
	}
	return a.Find(p, t)
}

// At is the answer at index i (of Find).
func (a *Answers) At(i int) (context string, ok bool) {
	if c := a.contexts[i]; c != noContext {
		return a.names[c], true
	}
	return "", false
}

// TypeAt is the node type the answer at index i is for.
func (a *Answers) TypeAt(i int) FileType { return FileType(a.types[i]) }

// Answer is the whole answer at index i, its path copied.
func (a *Answers) Answer(i int) Answer {
	c, ok := a.At(i)
	return Answer{Path: string(a.path(i)), Type: FileType(a.types[i]), Context: c, OK: ok}
}

// compareAnswer orders answers by path, then type. (string(p) in a
// comparison is not a copy.)
func compareAnswer(p []byte, t byte, q string, u FileType) int {
	switch {
	case string(p) < q:
		return -1
	case string(p) != q:
		return 1
	}
	return int(t) - int(u)
}

// The encoding: little-endian counts of answers and of contexts, each
// context (its length, then its bytes), then for every answer the end of
// its path, its type and its context's index, then the paths.
const answersHead = 8

// EncodeAnswers writes the answers of list in the form DecodeAnswers
// reads; of two answers to one lookup, the first.
func EncodeAnswers(list []Answer) []byte {
	all := slices.Clone(list)
	slices.SortStableFunc(all, func(x, y Answer) int {
		if c := strings.Compare(x.Path, y.Path); c != 0 {
			return c
		}
		return int(x.Type) - int(y.Type)
	})
	all = slices.CompactFunc(all, func(x, y Answer) bool { return x.Path == y.Path && x.Type == y.Type })
	index := map[string]uint32{}
	var names []string
	for _, x := range all {
		if _, ok := index[x.Context]; x.OK && !ok {
			index[x.Context] = uint32(len(names))
			names = append(names, x.Context)
		}
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(all)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(n)))
		b = append(b, n...)
	}
	end := uint32(0)
	for _, x := range all {
		end += uint32(len(x.Path))
		b = binary.LittleEndian.AppendUint32(b, end)
	}
	for _, x := range all {
		b = append(b, byte(x.Type))
	}
	for _, x := range all {
		c := noContext
		if x.OK {
			c = index[x.Context]
		}
		b = binary.LittleEndian.AppendUint32(b, c)
	}
	for _, x := range all {
		b = append(b, x.Path...)
	}
	return b
}

var errAnswers = errors.New("not a block of answers")

// DecodeAnswers reads what EncodeAnswers wrote. The Answers keep b (its
// paths are not copied): b must not change while they are used.
func DecodeAnswers(b []byte) (*Answers, error) {
	if len(b) < answersHead {
		return nil, errAnswers
	}
	n, m := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	rest := b[answersHead:]
	// Every count is bounded by the bytes it needs before it is used.
	if uint64(m)*4 > uint64(len(rest)) || uint64(n)*9 > uint64(len(rest)) {
		return nil, errAnswers
	}
	a := &Answers{names: make([]string, m)}
	for i := range a.names {
		if len(rest) < 4 {
			return nil, errAnswers
		}
		l := binary.LittleEndian.Uint32(rest)
		if uint64(l) > uint64(len(rest)-4) {
			return nil, errAnswers
		}
		a.names[i], rest = string(rest[4:4+l]), rest[4+l:]
	}
	if uint64(len(rest)) < uint64(n)*9 {
		return nil, errAnswers
	}
	a.ends = make([]uint32, n)
	a.contexts = make([]uint32, n)
	prev := uint32(0)
	for i := range a.ends {
		if a.ends[i] = binary.LittleEndian.Uint32(rest[4*i:]); a.ends[i] < prev {
			return nil, errAnswers
		}
		prev = a.ends[i]
	}
	rest = rest[4*n:]
	a.types, rest = rest[:n:n], rest[n:]
	for i := range a.contexts {
		if a.contexts[i] = binary.LittleEndian.Uint32(rest[4*i:]); a.contexts[i] != noContext && a.contexts[i] >= m {
			return nil, errAnswers
		}
	}
	rest = rest[4*n:]
	if uint64(len(rest)) != uint64(prev) {
		return nil, fmt.Errorf("%w: %d bytes of paths, want %d", errAnswers, len(rest), prev)
	}
	a.paths = rest
	return a, nil
}
