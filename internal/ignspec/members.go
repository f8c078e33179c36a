package ignspec

// PlainMembers walks the members of raw, one JSON object, calling member
// with each key and the bytes of its value, found without a decoder: ok
// when raw is one object (white space around it) whose keys are plain ASCII
// without escapes, and member said true for each. The value's bytes are
// raw's, from its first byte to its last: what encoding/json hands a
// json.RawMessage field for that key (decode.go, object and literalStore).
// It checks the object's structure, not the grammar of the values: a
// caller that trusts a value must decode or check it (json.Valid).
func PlainMembers(raw []byte, member func(key, value []byte) bool) bool {
	s := keyScan{b: raw}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	ok := s.members(func(key []byte) bool {
		s.space()
		start := s.i
		if !s.skip() {
			return false
		}
		return member(key, s.b[start:s.i])
	})
	s.space()
	return ok && s.i == len(s.b)
}
