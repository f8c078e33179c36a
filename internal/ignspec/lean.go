package ignspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The lean decoding: a large config's files' contents decoded without the
// config's bytes alive at the same time.
//
// Most of a large config's bytes are its files' data URLs, and
// encoding/json copies every string it decodes: at the end of
// json.Unmarshal the bytes and the copies of their data URLs were both
// alive, twice the config, the memory peak of a cold load (and of the
// daemon's cold start: docs/benchmarks.md). So when the bytes can be read
// again (a Bytes with a Reopen) and the sources of its files' contents are
// large, decodeExact decodes a skeleton instead: the bytes with each of
// those sources replaced by a marker string, "\u0000" and the source's
// number. It lets the bytes go, decodes the skeleton with encoding/json as
// before, and reads the file again as a stream, copying each source out of
// it into the string its marker was decoded into.
//
// It is the same decoding: a replaced source is a JSON string without an
// escape or a control byte (so its value is its bytes) and so is its marker,
// and the skeleton differs from the bytes in nothing else, so encoding/json
// accepts one where it accepts the other, decodes every other value alike,
// and decodes the marker where it decodes the source; the bytes hold no
// "\u0000" (which no other string could decode to without), and every
// marker must be found once, in a file's contents.source, or the quick path
// declines. The stream must be the bytes let go (their length and
// CRC-32C, as Bytes checks the bytes it reads again): a file changed in
// between is declined too, and Parse, reading it again, refuses it as
// changed.

// leanMin is the least that a config's replaceable sources must add up to
// for the lean decoding: below it, reading the file again costs more than
// the memory it spares.
const leanMin = 1 << 20

// leanMinSource is the least length of a source worth its marker.
const leanMinSource = 64

// leanChunk is how much of the file is read at a time while its sources are
// copied out of it.
const leanChunk = 256 << 10

// Reopen opens a config file again, so that its bytes can be read again
// (Bytes): whole, for a report that needs them, or as a stream, by the lean
// decoding. What it opens must be the bytes the parse was given.
type Reopen func() (io.ReadCloser, error)

// ReadAll reads the file whole (a file, into a buffer of its size:
// ondisk.ReadAll).
func (r Reopen) ReadAll() ([]byte, error) {
	rc, err := r()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if f, ok := rc.(*os.File); ok {
		b, err := ondisk.ReadAll(f)
		return b, errpath.Strip(err) // the caller names the file
	}
	return io.ReadAll(rc)
}

// leanSource is where one replaced source lies in the config's bytes:
// between the quotes of raw[start-1:end+1].
type leanSource struct{ start, end int }

// decodeLean is decodeExact's decoding into c by the skeleton, when src's
// bytes (a whole file, or a part of one) can be read again and the sources
// of at least min bytes are worth it: tried says it took charge (src has dropped the bytes), and ok is then
// decodeExact's answer. keys is decodeExact's.
func decodeLean(src *Bytes, c *Config, version string, keys reflect.Type, min int) (tried, ok bool) {
	raw := src.b
	if src.reopen == nil || bytes.Contains(raw, []byte(`\u0000`)) {
		return false, false
	}
	sources, total := leanSources(raw)
	if total < min || len(sources) == 0 {
		return false, false
	}
	skel := leanSkeleton(raw, sources)
	src.drop()
	raw = nil
	if json.Unmarshal(skel, c) != nil || c.Ignition.Version != version || !exactKeys(skel, keys) {
		return true, false
	}
	skel = nil
	dest, ok := leanDestinations(c, len(sources))
	if !ok {
		return true, false
	}
	return true, src.fillSources(sources, dest) == nil
}

// leanSources finds the sources of raw's storage.files[].contents that are
// JSON strings of printable ASCII without escapes, and the sum of their
// lengths. It reads raw's structure as exactKeys does, loosely (only
// encoding/json decides what raw is); anything it does not expect leaves
// the sources after it out.
func leanSources(raw []byte) (sources []leanSource, total int) {
	s := keyScan{b: raw}
	object := func(member func(key []byte) bool) bool {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '{' {
			return s.skip()
		}
		return s.members(member)
	}
	object(func(key []byte) bool {
		if string(key) != "storage" {
			return s.skip()
		}
		return object(func(key []byte) bool {
			s.space()
			if string(key) != "files" || s.i >= len(s.b) || s.b[s.i] != '[' {
				return s.skip()
			}
			return s.elements(func() bool {
				return object(func(key []byte) bool {
					if string(key) != "contents" {
						return s.skip()
					}
					return object(func(key []byte) bool {
						s.space()
						if string(key) != "source" || s.i >= len(s.b) || s.b[s.i] != '"' {
							return s.skip()
						}
						start := s.i + 1
						v, ok := s.str()
						if ok && len(v) >= leanMinSource && plainString(v) {
							sources = append(sources, leanSource{start, start + len(v)})
							total += len(v)
						}
						return ok
					})
				})
			})
		})
	})
	return sources, total
}

// plainString: a JSON string's bytes that are its value, printable ASCII
// without a backslash (and, found by keyScan.str, without a quote).
func plainString(b []byte) bool {
	return printableASCII(b) && bytes.IndexByte(b, '\\') < 0
}

// leanMarker is the marker of source k, as JSON (leanSkeleton) and decoded.
func leanMarker(k int) string { return `"\u0000` + strconv.Itoa(k) + `"` }

const leanMarkerPrefix = "\x00"

// leanSkeleton is raw with each source replaced by its marker.
func leanSkeleton(raw []byte, sources []leanSource) []byte {
	n := len(raw)
	for k, s := range sources {
		n += len(leanMarker(k)) - (s.end - s.start + 2)
	}
	skel := make([]byte, 0, n)
	at := 0
	for k, s := range sources {
		skel = append(skel, raw[at:s.start-1]...)
		skel = append(skel, leanMarker(k)...)
		at = s.end + 1
	}
	return append(skel, raw[at:]...)
}

// leanDestinations finds the string each of the n markers was decoded
// into: a file's contents.source, each marker once; ok false otherwise.
func leanDestinations(c *Config, n int) (dest []*string, ok bool) {
	dest = make([]*string, n)
	found := 0
	for i := range c.Storage.Files {
		p := c.Storage.Files[i].Contents.Source
		if p == nil || !strings.HasPrefix(*p, leanMarkerPrefix) {
			continue
		}
		k, err := strconv.Atoi((*p)[len(leanMarkerPrefix):])
		if err != nil || k < 0 || k >= n || dest[k] != nil {
			return nil, false
		}
		dest[k], found = p, found+1
	}
	return dest, found == n
}

// errChanged: bytes read again are not those the parse let go.
var errChanged = errors.New("changed while it was being read: load it again")

// fillSources reads the dropped bytes again as a stream and sets *dest[k]
// to source k's bytes (at c.from in the file, for a part); an error if the
// stream is not the file dropped.
func (c *Bytes) fillSources(sources []leanSource, dest []*string) error {
	f, err := c.reopen()
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, leanChunk)
	var sum uint32
	off, k := 0, 0
	var cur strings.Builder
	for {
		n, err := io.ReadFull(f, buf)
		chunk := buf[:n]
		sum = crc32.Update(sum, castagnoli, chunk)
		for len(chunk) > 0 && k < len(sources) {
			s := leanSource{sources[k].start + c.from, sources[k].end + c.from}
			end := off + len(chunk)
			if end <= s.start {
				break
			}
			from, to := max(s.start, off), min(s.end, end)
			if cur.Len() == 0 {
				cur.Grow(s.end - s.start)
			}
			cur.Write(chunk[from-off : to-off])
			if to < s.end {
				break
			}
			*dest[k] = cur.String()
			cur = strings.Builder{}
			k++
		}
		off += n
		if off > c.n {
			return errChanged
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if off != c.n || sum != c.sum || k != len(sources) {
		return errChanged
	}
	return nil
}
