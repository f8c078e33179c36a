package escape

import "unicode/utf8"

// Ellipsis ends a string that Cut shortened.
const Ellipsis = "…"

// Cut returns s when it is at most limit bytes long, and otherwise its start
// cut at a character boundary and followed by Ellipsis, limit bytes at most.
// It does not escape: callers cut what they have already made safe.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len(Ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + Ellipsis
}
