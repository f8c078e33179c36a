package daemon

import (
	"slices"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// cmpDrift is the order in which the daemon lists drift: drift.Cmp's, then
// the entry ID, so that ties have an order too. A stable sort's "the order
// they come in" would be the order of events here, which differs from run
// to run.
func cmpDrift(a, b *drift.Drift) int {
	if c := drift.Cmp(a, b); c != 0 {
		return c
	}
	return strings.Compare(a.EntryID, b.EntryID)
}

// blockMax is the size a block of sortedDrifts is split at (in two halves)
// and, divided by 4, the size under which it is merged with its neighbour.
const blockMax = 512

// sortedDrifts keeps drift in cmpDrift order as a list of sorted blocks, so
// that an insertion or a removal costs O(log n + blockMax + n/blockMax)
// instead of a sort of everything: a storm of n changes to a set of n
// drifts stays far from O(n²). Reading the first k costs O(k). Elements are
// pointers, told apart by identity when they compare equal.
type sortedDrifts struct {
	blocks [][]*drift.Drift // each non-empty and sorted; their concatenation sorted
	n      int
}

func (s *sortedDrifts) len() int { return s.n }

// insert adds d after every element that compares equal to it.
func (s *sortedDrifts) insert(d *drift.Drift) {
	s.n++
	if len(s.blocks) == 0 {
		s.blocks = append(s.blocks, []*drift.Drift{d})
		return
	}
	bi := sort.Search(len(s.blocks), func(i int) bool {
		b := s.blocks[i]
		return cmpDrift(b[len(b)-1], d) > 0
	})
	if bi == len(s.blocks) {
		bi--
	}
	b := s.blocks[bi]
	j := sort.Search(len(b), func(k int) bool { return cmpDrift(b[k], d) > 0 })
	b = slices.Insert(b, j, d)
	if len(b) <= 2*blockMax {
		s.blocks[bi] = b
		return
	}
	right := slices.Clone(b[blockMax:])
	clear(b[blockMax:]) // let the moved pointers go
	s.blocks[bi] = b[:blockMax]
	s.blocks = slices.Insert(s.blocks, bi+1, right)
}

// remove removes d (the very pointer) and reports whether it was there.
func (s *sortedDrifts) remove(d *drift.Drift) bool {
	bi := sort.Search(len(s.blocks), func(i int) bool {
		b := s.blocks[i]
		return cmpDrift(b[len(b)-1], d) >= 0
	})
	for ; bi < len(s.blocks); bi++ {
		b := s.blocks[bi]
		j := sort.Search(len(b), func(k int) bool { return cmpDrift(b[k], d) >= 0 })
		for ; j < len(b) && cmpDrift(b[j], d) == 0; j++ {
			if b[j] == d {
				s.removeAt(bi, j)
				return true
			}
		}
		if j < len(b) {
			return false // past the elements equal to d
		}
	}
	return false
}

func (s *sortedDrifts) removeAt(bi, j int) {
	s.n--
	b := slices.Delete(s.blocks[bi], j, j+1)
	switch {
	case len(b) == 0:
		s.blocks = slices.Delete(s.blocks, bi, bi+1)
	case len(b) < blockMax/4 && bi+1 < len(s.blocks) && len(b)+len(s.blocks[bi+1]) <= 2*blockMax:
		s.blocks[bi] = append(b, s.blocks[bi+1]...)
		s.blocks = slices.Delete(s.blocks, bi+1, bi+2)
	default:
		s.blocks[bi] = b
	}
}

// each calls fn for the elements from index from on, in order, until fn
// returns false.
func (s *sortedDrifts) each(from int, fn func(*drift.Drift) bool) {
	for _, b := range s.blocks {
		if from >= len(b) {
			from -= len(b)
			continue
		}
		for _, d := range b[from:] {
			if !fn(d) {
				return
			}
		}
		from = 0
	}
}
