package ignspec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// leanConfig is a config of spec version declaring n files, file i with
// the members file(i) gives (JSON, without the braces).
func leanConfig(version string, n int, file func(i int) string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"ignition":{"version":%q},"storage":{"files":[`, version)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString("{" + file(i) + "}")
	}
	b.WriteString("]}}\n")
	return []byte(b.String())
}

// dataURL is a base64 data URL of size bytes of content, different for each i.
func dataURL(i, size int) string {
	c := bytes.Repeat([]byte{byte('a' + i%26)}, size)
	copy(c, fmt.Sprintf("file %d\n", i))
	return "data:;base64," + base64.StdEncoding.EncodeToString(c)
}

func plainFile(i int) string {
	return fmt.Sprintf(`"path":"/etc/lean/f%d","mode":420,"contents":{"source":%q}`, i, dataURL(i, 120))
}

// reopenOf reopens b, counting the opens.
func reopenOf(b []byte, opens *int) Reopen {
	return func() (io.ReadCloser, error) {
		*opens++
		return io.NopCloser(bytes.NewReader(b)), nil
	}
}

// TestLeanIsDecodeExact: where the lean decoding takes charge and decodes,
// it decodes what json.Unmarshal of the whole bytes decodes (decodeExact
// without a way to read them again); where it cannot be sure (a repeated
// key, a file changed while it was read), it declines, and where the bytes
// could make a marker ambiguous, or nothing is worth it, it leaves them to
// decodeExact.
func TestLeanIsDecodeExact(t *testing.T) {
	v := MaxVersion.String()
	mixed := func(i int) string {
		switch i % 6 {
		case 0: // escaped: decoded by encoding/json, not replaced
			return fmt.Sprintf(`"path":"/etc/lean/f%d","contents":{"source":"data:,%s\/x"}`, i, strings.Repeat("e", 80))
		case 1: // not ASCII
			return fmt.Sprintf(`"path":"/etc/lean/f%d","contents":{"source":"data:,%sé"}`, i, strings.Repeat("u", 80))
		case 2: // short
			return fmt.Sprintf(`"path":"/etc/lean/f%d","contents":{"source":"data:,short"}`, i)
		case 3: // an append fragment's source: left to encoding/json
			return fmt.Sprintf(`"path":"/etc/lean/f%d","append":[{"source":%q}]`, i, dataURL(i, 90))
		case 4: // remote, with members around the source
			return fmt.Sprintf(`"path":"/etc/lean/f%d","contents":{"compression":"gzip","source":"https://example.com/%s","verification":{"hash":"sha512-00"}}`, i, strings.Repeat("p", 90))
		}
		return plainFile(i)
	}
	for _, tt := range []struct {
		name         string
		raw          []byte
		stream       []byte // nil: the bytes themselves
		tried, lean  bool
		plainDecodes bool
	}{
		{name: "plain data URLs", raw: leanConfig(v, 40, plainFile), tried: true, lean: true, plainDecodes: true},
		{name: "every shape of source", raw: leanConfig(v, 60, mixed), tried: true, lean: true, plainDecodes: true},
		{name: "white space everywhere", raw: []byte(strings.NewReplacer(`":`, "\" :\t", `,"`, " ,\n\t\"", `{"`, "{ \r\n\"", `"}`, "\" }").Replace(
			string(leanConfig(v, 10, plainFile)))), tried: true, lean: true, plainDecodes: true},
		{name: "a NUL escape anywhere", raw: leanConfig(v, 10, func(i int) string {
			if i == 7 {
				return `"path":"/etc/\u0000"`
			}
			return plainFile(i)
		}), plainDecodes: true},
		{name: "nothing to replace", raw: leanConfig(v, 3, func(i int) string { return fmt.Sprintf(`"path":"/etc/f%d"`, i) }), plainDecodes: true},
		{name: "contents repeated", raw: leanConfig(v, 5, func(i int) string {
			return plainFile(i) + fmt.Sprintf(`,"contents":{"source":%q}`, dataURL(i+100, 100))
		}), tried: true, plainDecodes: true},
		{name: "source repeated", raw: leanConfig(v, 5, func(i int) string {
			return fmt.Sprintf(`"path":"/etc/f%d","contents":{"source":%q,"source":%q}`, i, dataURL(i, 100), dataURL(i+1, 100))
		}), tried: true, plainDecodes: true},
		{name: "files repeated", raw: []byte(fmt.Sprintf(`{"ignition":{"version":%q},"storage":{"files":[{%s}],"files":[{%s}]}}`,
			v, plainFile(1), plainFile(2))), tried: true, plainDecodes: true},
		{name: "another version", raw: leanConfig("3.5.0", 10, plainFile), tried: true},
		{name: "a syntax error after the sources", raw: append(leanConfig(v, 10, plainFile), '}'), tried: true},
		{name: "a source where a number goes", raw: []byte(fmt.Sprintf(`{"ignition":{"version":%q},"storage":{"files":[{"path":"/a","mode":%q,"contents":{"source":%q}}]}}`,
			v, dataURL(1, 100), dataURL(2, 100))), tried: true},
		{name: "a key of another case", raw: []byte(strings.Replace(string(leanConfig(v, 10, plainFile)), `"mode"`, `"Mode"`, 1)), tried: true},
		{name: "changed before it was read again", raw: leanConfig(v, 10, plainFile),
			stream: bytes.Replace(leanConfig(v, 10, plainFile), []byte("ZmlsZSA"), []byte("ZmlsZSB"), 1), tried: true, plainDecodes: true},
		{name: "shorter when read again", raw: leanConfig(v, 10, plainFile), stream: leanConfig(v, 9, plainFile), tried: true, plainDecodes: true},
		{name: "longer when read again", raw: leanConfig(v, 10, plainFile), stream: leanConfig(v, 11, plainFile), tried: true, plainDecodes: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain, plainOK := decodeExact[Config](&Bytes{b: bytes.Clone(tt.raw)}, v, reflect.TypeFor[Config]())
			if plainOK != tt.plainDecodes {
				t.Fatalf("decodeExact of the whole bytes: %v, want %v", plainOK, tt.plainDecodes)
			}
			stream := tt.stream
			if stream == nil {
				stream = tt.raw
			}
			// The config as a file, and as a part of one (a
			// MachineConfig's spec.config: NewRangeBytes).
			for _, wrap := range [][2]string{{"", ""}, {`{"kind":"MachineConfig","spec":{"config":`, "}}\n"}} {
				opens := 0
				src := NewBytes(bytes.Clone(tt.raw), reopenOf(stream, &opens))
				if wrap[0] != "" {
					file := []byte(wrap[0] + string(tt.raw) + wrap[1])
					src = NewRangeBytes(file, len(wrap[0]), len(wrap[0])+len(tt.raw), reopenOf([]byte(wrap[0]+string(stream)+wrap[1]), &opens))
				}
				var c Config
				tried, ok := decodeLean(src, &c, v, reflect.TypeFor[Config](), 0)
				if tried != tt.tried || ok != tt.lean {
					t.Fatalf("decodeLean %q: tried %v, decoded %v; want %v, %v", wrap[0], tried, ok, tt.tried, tt.lean)
				}
				if !tried && (src.dropped || opens != 0) {
					t.Errorf("declined, but dropped the bytes (%v) or read them again (%d times)", src.dropped, opens)
				}
				if ok {
					if diff := cmp.Diff(plain, c); diff != "" {
						t.Errorf("lean decoding %q (-whole +lean):\n%s", wrap[0], diff)
					}
					if opens != 1 {
						t.Errorf("read again %d times, want once", opens)
					}
				}
				if tried {
					// Read again for a report: the part, or refused
					// as changed.
					b, err := src.Bytes()
					switch {
					case tt.stream != nil && !errors.Is(err, errChanged):
						t.Errorf("Bytes of a changed file: %v, want %v", err, errChanged)
					case tt.stream == nil && (err != nil || !bytes.Equal(b, tt.raw)):
						t.Errorf("Bytes: %v; the part again: %v", err, bytes.Equal(b, tt.raw))
					}
				}
			}
		})
	}
}

// TestLeanParseIsIgnitions: a config large enough for the lean decoding,
// of every stable spec, parsed from bytes that can be read again, is what
// Ignition's own parse gives; the bytes are read again once (for the
// sources), and not at all when Ignition's parse had to read them.
func TestLeanParseIsIgnitions(t *testing.T) {
	for _, s := range specs {
		v := s.Version
		t.Run(v, func(t *testing.T) {
			raw := leanConfig(v, 1+leanMin/3000, func(i int) string {
				return fmt.Sprintf(`"path":"/etc/lean/f%d","mode":420,"contents":{"source":%q}`, i, dataURL(i, 3000))
			})
			want, wantRpt, wantErr := IgnitionParse(raw, v)
			if wantErr != nil || len(wantRpt.Entries) > 0 {
				t.Fatalf("Ignition: %v %v", wantErr, wantRpt)
			}
			opens := 0
			got, rpt, err := Parse(NewBytes(bytes.Clone(raw), reopenOf(raw, &opens)), v)
			if err != nil || len(rpt.Entries) > 0 {
				t.Fatalf("Parse: %v %v", err, rpt)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-Ignition +lean):\n%s", diff)
			}
			if opens != 1 {
				t.Errorf("read again %d times, want once", opens)
			}
		})
	}
}

// TestLeanChangedIsRefused: a config changed between its first reading and
// the lean decoding's is refused as changed (Parse reads it again for
// Ignition and finds it changed), never decoded from the new bytes.
func TestLeanChangedIsRefused(t *testing.T) {
	v := MaxVersion.String()
	file := func(i int) string {
		return fmt.Sprintf(`"path":"/etc/lean/f%d","contents":{"source":%q}`, i, dataURL(i, 3000))
	}
	raw := leanConfig(v, 1+leanMin/3000, file)
	changed := bytes.Replace(raw, []byte(dataURL(5, 3000)), []byte(dataURL(6, 3000)), 1)
	opens := 0
	_, _, err := Parse(NewBytes(bytes.Clone(raw), reopenOf(changed, &opens)), v)
	var re *RereadError
	if !errors.As(err, &re) || !errors.Is(err, errChanged) {
		t.Errorf("Parse of a config changed while it was read: %v, want %v", err, errChanged)
	}
}

// TestLeanLetsTheBytesGo: on the quick path (decodeExact), the config's
// bytes are unreachable by the time the file is read again for its
// sources: the two are never alive at once.
func TestLeanLetsTheBytesGo(t *testing.T) {
	v := MaxVersion.String()
	raw := leanConfig(v, 1+leanMin/3000, func(i int) string {
		return fmt.Sprintf(`"path":"/etc/lean/f%d","contents":{"source":%q}`, i, dataURL(i, 3000))
	})
	stream := bytes.Clone(raw)
	collected := make(chan struct{})
	src := func() *Bytes {
		b := bytes.Clone(raw)
		runtime.AddCleanup(&b[0], func(ch chan struct{}) { close(ch) }, collected)
		return NewBytes(b, func() (io.ReadCloser, error) {
			deadline := time.After(20 * time.Second)
			for {
				runtime.GC()
				select {
				case <-collected:
					return io.NopCloser(bytes.NewReader(stream)), nil
				case <-deadline:
					return nil, errors.New("the config's bytes are still reachable when the file is read again")
				case <-time.After(10 * time.Millisecond): // a cleanup runs on its own goroutine after the cycle
				}
			}
		})
	}()
	if _, ok := decodeExact[Config](src, v, reflect.TypeFor[Config]()); !ok || !src.dropped {
		t.Fatalf("decodeExact: decoded %v, the bytes dropped %v (they were still reachable when read again, or the stream differed)", ok, src.dropped)
	}
}

// FuzzLeanDecode: for any bytes, the skeleton is JSON where the bytes are,
// and the lean decoding, where it decodes, decodes what json.Unmarshal of
// the whole bytes does.
func FuzzLeanDecode(f *testing.F) {
	v := MaxVersion.String()
	f.Add(leanConfig(v, 3, plainFile))
	f.Add([]byte(fmt.Sprintf(`{"ignition":{"version":%q},"storage":{"files":[{"path":"/a","contents":{"source":%q,"source":%q}}],"files":[]}}`,
		v, dataURL(1, 60), dataURL(2, 60))))
	f.Add([]byte(fmt.Sprintf(`{"storage":{"files":[{"contents":{"source":%q}},{"contents":{"Source":%q}}]},"ignition":{"version":%q}}`,
		dataURL(1, 60), dataURL(2, 60), v)))
	f.Add([]byte(fmt.Sprintf(`{"ignition":{"version":%q},"storage":{"files":[{"contents":{"source":%q}}, {"contents":{"source":"\u0000"}}]}}`,
		v, dataURL(3, 60))))
	f.Fuzz(func(t *testing.T, raw []byte) {
		sources, _ := leanSources(raw)
		if !bytes.Contains(raw, []byte(`\u0000`)) {
			if got, want := json.Valid(leanSkeleton(raw, sources)), json.Valid(raw); got != want {
				t.Fatalf("skeleton valid %v, the bytes %v", got, want)
			}
		}
		plain, plainOK := decodeExact[Config](&Bytes{b: bytes.Clone(raw)}, v, reflect.TypeFor[Config]())
		opens := 0
		var c Config
		tried, ok := decodeLean(NewBytes(bytes.Clone(raw), reopenOf(raw, &opens)), &c, v, reflect.TypeFor[Config](), 0)
		if tried && ok {
			if !plainOK {
				t.Fatal("the lean decoding decodes what decodeExact does not")
			}
			if diff := cmp.Diff(plain, c); diff != "" {
				t.Fatalf("lean decoding (-whole +lean):\n%s", diff)
			}
		}
	})
}
