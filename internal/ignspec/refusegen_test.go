package ignspec

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/report"
	vvalidate "github.com/coreos/vcontext/validate"
)

// choices draws a generated config's choices from a stream of bytes (a
// fuzzer's input, or random bytes): 0 once the stream runs out, so every
// stream gives a config, and a short one a small config.
type choices struct {
	b []byte
	i int
}

// n is a choice among k.
func (c *choices) n(k int) int {
	if c.i >= len(c.b) || k <= 1 {
		return 0
	}
	c.i++
	return int(c.b[c.i-1]) % k
}

func (c *choices) pick(from ...string) string { return from[c.n(len(from))] }

// rarely is bad one time in eight, else a pick of good.
func (c *choices) rarely(bad string, good ...string) string {
	if c.n(8) == 0 {
		return bad
	}
	return c.pick(good...)
}

// genConfig writes a config of spec version made of c's choices, for the
// refusal path's oracle: few names, so that duplicates are common, among
// storage nodes (one key space for files, directories and links), units,
// their dropins, users, groups, kernel arguments, config merges and CAs;
// invalid values (a relative path, a unit without a known suffix, a source
// that is no URL, a link without a target, which 3.0.0 allows and the
// newest spec refuses) before or after them; special mode bits (a warning
// before 3.6.0); now and then a key in another case or an unknown one
// (then Ignition's path decides, unless refused first), and lists in any
// order and sections in any order.
func genConfig(c *choices, version string) []byte {
	var sections []string
	list := func(max int, elem func() string) string {
		n := c.n(max + 1)
		items := make([]string, n)
		for i := range items {
			items[i] = elem()
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	key := func(k string) string {
		switch c.n(24) {
		case 0:
			return `"` + strings.ToUpper(k[:1]) + k[1:] + `"`
		case 1:
			return `"` + k + `x"`
		}
		return `"` + k + `"`
	}
	obj := func(members ...string) string {
		var kept []string
		for _, m := range members {
			if m != "" {
				kept = append(kept, m)
			}
		}
		c.shuffle(kept)
		return "{" + strings.Join(kept, ",") + "}"
	}
	opt := func(m string) string {
		if c.n(2) == 0 {
			return ""
		}
		return m
	}
	source := func() string {
		return key("source") + ":" + c.rarely(`"not a url"`, `"data:,x"`, `"data:,y"`, `"https://example.com/a"`, `"data:;base64,eA=="`, `""`)
	}
	path := func() string { return key("path") + ":" + c.rarely(`"rel"`, `"/a"`, `"/b"`, `"/a/c"`, `"/d"`, `"/e"`) }
	mode := func() string { return key("mode") + ":" + c.rarely("-1", "420", "493", "2541") }

	ign := `"ignition":` + obj(`"version":"`+version+`"`,
		opt(`"config":`+obj(`"merge":`+list(3, func() string { return obj(source()) }))),
		opt(`"security":{"tls":{"certificateAuthorities":`+list(3, func() string { return obj(source()) })+`}}`))
	sections = append(sections, ign)
	files := list(6, func() string {
		return obj(path(), opt(mode()), opt(`"overwrite":true`),
			opt(`"contents":`+obj(source())), opt(`"append":`+list(2, func() string { return obj(source()) })))
	})
	dirs := list(4, func() string { return obj(path(), opt(mode())) })
	links := list(4, func() string {
		return obj(path(), opt(key("target")+":"+c.rarely(`"t"`, `"/t"`)), opt(`"hard":`+c.pick("true", "false")))
	})
	storage := []string{opt(key("files") + ":" + files), opt(`"directories":` + dirs), opt(`"links":` + links)}
	if c.n(8) == 0 {
		storage = append(storage, `"disks":[{"device":"/dev/sda"},{"device":"/dev/sda"}]`)
	}
	sections = append(sections, opt(`"storage":`+obj(storage...)))
	units := list(5, func() string {
		return obj(key("name")+":"+c.rarely(`"bad"`, `"a.service"`, `"b.service"`, `"a.socket"`),
			opt(`"enabled":true`), opt(`"mask":true`), opt(`"contents":"[Unit]"`),
			opt(`"dropins":`+list(3, func() string {
				return obj(`"name":`+c.rarely(`"bad"`, `"x.conf"`, `"y.conf"`), opt(`"contents":"[Service]"`))
			})))
	})
	sections = append(sections, opt(`"systemd":`+obj(`"units":`+units)))
	names := func() string {
		return list(3, func() string { return c.pick(`"k1"`, `"k2"`, `"k1"`) })
	}
	users := list(4, func() string {
		return obj(key("name")+":"+c.rarely(`""`, `"core"`, `"u1"`, `"u2"`),
			opt(`"sshAuthorizedKeys":`+names()), opt(`"groups":`+names()), opt(`"uid":`+c.pick("1000", "0")))
	})
	groups := list(4, func() string { return obj(`"name":`+c.rarely(`""`, `"g1"`, `"g2"`), opt(`"gid":1000`)) })
	sections = append(sections, opt(`"passwd":`+obj(opt(`"users":`+users), opt(`"groups":`+groups))))
	sections = append(sections, opt(`"kernelArguments":`+obj(opt(`"shouldExist":`+names()), opt(`"shouldNotExist":`+names()))))
	return []byte(obj(sections...) + "\n")
}

// shuffle puts s in an order of c's choice.
func (c *choices) shuffle(s []string) {
	for i := len(s) - 1; i > 0; i-- {
		j := c.n(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// refusalSameAsIgnition checks Parse of raw against Ignition's path
// (IgnitionParse): the same error; of a refused config the same first
// fatal entry (message, context path, line and column: all a LoadError
// shows); of any other the same config and report. It returns whether the
// config was refused.
func refusalSameAsIgnition(t *testing.T, raw []byte, version string) (refused bool) {
	t.Helper()
	wantCfg, wantRpt, wantErr := IgnitionParse(raw, version)
	cfg, rpt, err := ParseBytes(raw, version)
	if (err == nil) != (wantErr == nil) || (err != nil && !errors.Is(err, wantErr)) {
		t.Fatalf("%s\nerror %v; Ignition's %v", raw, err, wantErr)
	}
	if wantRpt.IsFatal() {
		got, want := firstFatalEntry(rpt), firstFatalEntry(wantRpt)
		if got == nil || got.String() != want.String() || !reflect.DeepEqual(got.Context, want.Context) {
			t.Fatalf("%s\nfirst fatal entry %v; Ignition's %v", raw, got, want)
		}
		return true
	}
	if rpt.IsFatal() {
		t.Fatalf("%s\nrefused: %v; Ignition's path accepts it", raw, rpt)
	}
	if !reflect.DeepEqual(cfg, wantCfg) {
		t.Fatalf("%s\nconfig %+v; Ignition's %+v", raw, cfg, wantCfg)
	}
	if got, want := sortedLines(rpt), sortedLines(wantRpt); got != want {
		t.Fatalf("%s\nreport:\n%s\nIgnition's:\n%s", raw, got, want)
	}
	return false
}

func firstFatalEntry(r report.Report) *report.Entry {
	for i := range r.Entries {
		if r.Entries[i].Kind.IsFatal() {
			return &r.Entries[i]
		}
	}
	return nil
}

// sortedLines is a report's entries, one a line, sorted: Ignition reports
// unused keys in the order of a map's iteration (ValidateUnusedKeys).
func sortedLines(r report.Report) string {
	lines := strings.Split(r.String(), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

var errDuplicate = ignerrors.ErrDuplicate.Error()

// TestRefusalOfGeneratedConfigs: over configs generated in every spec,
// Parse refuses what Ignition's path refuses, with the same first fatal
// entry, and accepts the rest alike; and the generator does make configs
// refused for a duplicate, for an invalid value, and accepted ones, in every
// spec (else it would prove little).
func TestRefusalOfGeneratedConfigs(t *testing.T) {
	const rounds = 200 // in -short too: fewer leave a kind of config too rare to count
	for _, v := range Versions() {
		t.Run(v, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(v))+uint64(v[2])))
			seen := map[string]int{}
			for range rounds {
				b := make([]byte, 64+rng.IntN(192))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				raw := genConfig(&choices{b: b}, v)
				_, want, _ := IgnitionParse(raw, v)
				switch e := firstFatalEntry(want); {
				case e == nil:
					seen["accepted"]++
				case e.Message == errDuplicate:
					seen["duplicate"]++
				case strings.Contains(want.String(), errDuplicate):
					seen["invalid, and a duplicate"]++
				default:
					seen["invalid"]++
				}
				refusalSameAsIgnition(t, raw, v)
				checkFirstDuplicate(t, raw, v)
			}
			t.Logf("%v", seen)
			for _, what := range []string{"accepted", "duplicate", "invalid, and a duplicate", "invalid"} {
				if seen[what] < rounds/20 {
					t.Errorf("%d configs %s of %d: want %d at least (%v)", seen[what], what, rounds, rounds/20, seen)
				}
			}
		})
	}
}

// FuzzRefusal: whatever config the generator makes of the fuzzer's bytes,
// in whatever spec, Parse and Ignition's path agree (refusalSameAsIgnition),
// and firstDuplicate is the first entry of ValidateDups' walk.
func FuzzRefusal(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 9))
	for i := range 16 {
		b := make([]byte, 32+16*i)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		f.Add(uint8(i), b)
	}
	f.Fuzz(func(t *testing.T, spec uint8, b []byte) {
		v := Versions()[int(spec)%len(Versions())]
		raw := genConfig(&choices{b: b}, v)
		refusalSameAsIgnition(t, raw, v)
		checkFirstDuplicate(t, raw, v)
	})
}

// checkFirstDuplicate: firstDuplicate of raw decoded into its spec's types
// and of its translation to the newest is the first entry of
// ValidateCustom with ValidateDups, or none when that has none.
func checkFirstDuplicate(t *testing.T, raw []byte, version string) {
	t.Helper()
	s := lookup(version)
	decoded, ok := decodedAs(s, raw)
	if !ok {
		return
	}
	for _, cfg := range decoded {
		want := vvalidate.ValidateCustom(cfg, "json", validate.ValidateDups)
		got, found := firstDuplicate(cfg)
		switch {
		case len(want.Entries) == 0 && found:
			t.Fatalf("%s\nfirstDuplicate %v; ValidateDups reports none", raw, got)
		case len(want.Entries) > 0 && (!found || !reflect.DeepEqual(got, want.Entries[0])):
			t.Fatalf("%s\nfirstDuplicate %v (%v); ValidateDups' first %v", raw, got, found, want.Entries[0])
		}
	}
}

// decodedAs is raw decoded with encoding/json into the types of spec s and
// into the newest spec's (the types a translated config has); false when
// encoding/json refuses it.
func decodedAs(s *Spec, raw []byte) ([]any, bool) {
	c := reflect.New(s.config)
	if json.Unmarshal(raw, c.Interface()) != nil {
		return nil, false
	}
	var newest Config
	if json.Unmarshal(raw, &newest) != nil {
		return nil, false
	}
	return []any{c.Elem().Interface(), newest}, true
}
