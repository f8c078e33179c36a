package ignspec

import (
	"bytes"
	"encoding/json"
	"reflect"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/util"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
	"github.com/coreos/vcontext/tree"
	vvalidate "github.com/coreos/vcontext/validate"
)

// The refusal path: a config that decodes but that Ignition's validation
// refuses, refused without Ignition's position tree.
//
// Ignition's Parse of a spec (config/vX_Y/config.go) decodes the config
// with encoding/json (config/util/parsingErrors.go, HandleParseErrors),
// checks its version, then validates it with ValidateWithContext and the raw
// bytes (config/validate/validate.go), which builds a tree of every JSON
// value with its position (vcontext's json.UnmarshalToContext) to look for
// unused keys and to place each report entry (Report.Correlate). That tree
// costs tens of times the config's size: refusing a config of many entries
// (fifty thousand copies of one file: one "duplicate entry defined" each)
// held a live heap far above a load's memory bound, and the collector ran
// without a break. Yet a refused config's report is read for one thing:
// its first fatal entry, with the line and column where it is
// (internal/desired's LoadError).
//
// So, where Ignition's path would refuse a config in validation, refuse
// reaches the same verdict with the same functions, minus the tree: the
// same decoding, the same version check, Ignition's validation without raw
// bytes (ValidateWithContext(cfg, nil): vcontext's Validate, then
// ValidateDups over every struct, whose fatal entries are the tree's, in the
// same order: the tree only adds unused-key warnings and positions), and for
// a config of an older spec the translation and the newest spec's
// validation that Parse adds (parse.go, validated). Of that validation it
// keeps what decides the first fatal entry (firstFatal): Validate's report
// whole and, when it holds no fatal entry, the first duplicate that
// ValidateDups reports, without the others. The first fatal entry is then
// placed where Correlate would place it (place), by one scan of the bytes.
// What it leaves out: the unused-key warnings of a refused config, the
// duplicates after the first, and the positions of the entries after the
// first fatal one, which nothing shows. Anything else (bytes encoding/json
// refuses, another version, a config Ignition accepts, with or without
// warnings) goes Ignition's path.

// refuser is the refusal path of spec version, whose configs decode into C
// and which up translates to the newest spec: the report and true when
// Ignition's path would refuse raw with ErrInvalid in validation (see
// above), false when Ignition's path must decide.
func refuser[C any](version string, up func(C) Config) func(raw []byte) (report.Report, bool) {
	return func(raw []byte) (report.Report, bool) {
		var c C
		if len(raw) == 0 || json.Unmarshal(raw, &c) != nil {
			return report.Report{}, false
		}
		// Parse compares the decoded version with its spec's as a semver;
		// the exact string of that version is equal to it.
		if reflect.ValueOf(c).FieldByName("Ignition").FieldByName("Version").String() != version {
			return report.Report{}, false
		}
		if r := firstFatal(c); r.IsFatal() {
			placeFirstFatal(&r, raw)
			return r, true
		}
		if version == MaxVersion.String() {
			return report.Report{}, false
		}
		// Accepted by its own spec: Parse validates the translation with
		// the newest spec's rules, without positions (validated).
		if r := firstFatal(up(c)); r.IsFatal() {
			return r, true
		}
		return report.Report{}, false
	}
}

// firstFatal is the report of Ignition's validation of cfg without raw
// bytes (config/validate/validate.go, ValidateWithContext(cfg, nil):
// vcontext's Validate, then ValidateCustom with ValidateDups, the second
// report appended to the first) up to its first fatal entry: the same
// first fatal entry, if any, and no fatal entry when it has none.
//
// Validate's report comes first, whole: if it is fatal, its first fatal
// entry is the report's. If not, every entry of ValidateDups' report is an
// error (AddOnError), so the first fatal entry is its first entry: that of
// the first struct, in the order vcontext's walk visits them, at which
// ValidateDups finds a duplicate (firstDuplicate). ValidateDups would
// otherwise report every duplicate with its own context path (one per
// repeated entry: tens of thousands in a config of many copies), merged
// into the reports of every level above it while the rest of the walk
// runs: a load's memory limit (internal/memlimit) then has the collector
// run far more often than for a valid config of the same size.
func firstFatal(cfg any) report.Report {
	r := vvalidate.Validate(cfg, "json")
	if r.IsFatal() {
		return r
	}
	if dup, ok := firstDuplicate(cfg); ok {
		r.Entries = append(r.Entries, dup)
	}
	return r
}

// firstDuplicate is the first entry of ValidateCustom(cfg, "json",
// ValidateDups): vcontext's walk (vcontext validate/validate.go: validate,
// validateStruct, validateSlice) calls the validator on every value it
// reaches before walking into it, depth first: the fields of a struct in
// the order GetFields gives them (embedded structs flattened), under the
// name FieldName gives, the elements of a slice by index, what a non-nil
// pointer or interface holds. ValidateDups says nothing but of a struct's
// slice fields. So the walk below takes the same steps with the same
// context path, and calls Ignition's ValidateDups itself on each struct,
// until one reports: its first entry is the report's. The walk stops there,
// and builds no more than that struct's report (its own lists' duplicates).
// TestFirstDuplicateIsValidateDups and FuzzRefusal hold it to
// ValidateCustom.
func firstDuplicate(cfg any) (report.Entry, bool) {
	w := dupWalk{at: path.ContextPath{Tag: "json"}}
	if !w.value(reflect.ValueOf(cfg)) {
		return report.Entry{}, false
	}
	return w.first, true
}

// dupWalk is firstDuplicate's walk: at is the context path of the value
// being walked; first, once found, the first duplicate's entry.
type dupWalk struct {
	at    path.ContextPath
	first report.Entry
}

// value walks v; true once a duplicate is found.
func (w *dupWalk) value(v reflect.Value) bool {
	if !v.IsValid() {
		return false
	}
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return false
		}
		v = reflect.ValueOf(v.Interface())
	}
	switch v.Kind() {
	case reflect.Struct:
		if e, ok := firstDupOf(v, w.at); ok {
			w.first = e
			return true
		}
		for _, f := range vvalidate.GetFields(v) {
			if w.child(vvalidate.FieldName(f, w.at.Tag), f.Value) {
				return true
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if w.child(i, v.Index(i)) {
				return true
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return w.value(v.Elem())
		}
	}
	return false
}

// child walks v, the element el of the value at w.at.
func (w *dupWalk) child(el any, v reflect.Value) bool {
	n := len(w.at.Path)
	w.at.Path = append(w.at.Path, el)
	if w.value(v) {
		return true
	}
	w.at.Path = w.at.Path[:n]
	return false
}

// duplicateNames reports whether two units, two dropins of one unit, two
// users or two groups have one name: Ignition's ValidateDups refuses them
// (config/vX_Y/types/unit.go and passwd.go: the Key of each is its name, in
// every spec). As duplicateNodes (quick.go), which asks it, it only spares
// the quick path a validation that reports every duplicate: the refusal
// path decides.
func duplicateNames(cfg *Config) bool {
	dup := func(n int, name func(int) string) bool {
		if n < 2 {
			return false
		}
		seen := make(map[string]struct{}, n)
		for i := range n {
			if _, ok := seen[name(i)]; ok {
				return true
			}
			seen[name(i)] = struct{}{}
		}
		return false
	}
	units, p := cfg.Systemd.Units, cfg.Passwd
	if dup(len(units), func(i int) string { return units[i].Name }) ||
		dup(len(p.Users), func(i int) string { return p.Users[i].Name }) ||
		dup(len(p.Groups), func(i int) string { return p.Groups[i].Name }) {
		return true
	}
	for _, u := range units {
		if dup(len(u.Dropins), func(i int) string { return u.Dropins[i].Name }) {
			return true
		}
	}
	return false
}

// placeFirstFatal gives r's first fatal entry the marker Correlate gives it
// with the tree of raw: the start of the deepest JSON value on its context.
func placeFirstFatal(r *report.Report, raw []byte) {
	for i := range r.Entries {
		if !r.Entries[i].Kind.IsFatal() {
			continue
		}
		at := place(raw, r.Entries[i].Context)
		line, column := lineColumnAt(raw, at)
		r.Entries[i].Marker = tree.Marker{StartP: &tree.Pos{Index: int64(at), Line: line, Column: column}}
		return
	}
}

// place returns the index vcontext's tree of raw (JSON that encoding/json
// accepted) gives as the start of the deepest node on c, as Report.Correlate
// finds it (getDeepestNode: the longest prefix of c that Get resolves). The
// tree (vcontext json/json.go, fromJsonNode, over coreos/go-json's Node)
// starts an object or an array one byte after its opening brace, a literal
// at its first byte, and an object's key (a path element tree.Key) at its
// opening quote; a repeated key is its last occurrence (go-json decodes
// members into a map). A string element is a member's decoded name, an int
// an array's index; anything else, or an element that does not resolve,
// ends the path. TestPlaceIsCorrelates holds it to the tree itself.
func place(raw []byte, c path.ContextPath) int {
	s := keyScan{b: raw}
	s.space()
	at := s.i
	mark := nodeMark(raw, at)
	for _, el := range c.Path {
		if at >= len(raw) {
			return mark
		}
		switch el := el.(type) {
		case string:
			v, _, ok := member(raw, at, el)
			if !ok {
				return mark
			}
			at, mark = v, nodeMark(raw, v)
		case tree.Key:
			_, k, ok := member(raw, at, string(el))
			if !ok {
				return mark
			}
			return k // a leaf: nothing resolves below it
		case int:
			v, ok := element(raw, at, el)
			if !ok {
				return mark
			}
			at, mark = v, nodeMark(raw, v)
		default:
			return mark
		}
	}
	return mark
}

// nodeMark is where the tree starts the value at i (see place).
func nodeMark(raw []byte, i int) int {
	if i < len(raw) && (raw[i] == '{' || raw[i] == '[') {
		return i + 1
	}
	return i
}

// member finds the last member named name of the object at i: the index of
// its value and of its key's opening quote; false when i is no object or it
// has no such member.
func member(raw []byte, i int, name string) (value, key int, ok bool) {
	if raw[i] != '{' {
		return 0, 0, false
	}
	s := keyScan{b: raw, i: i}
	if s.open('}') {
		return 0, 0, false
	}
	for {
		s.space()
		k := s.i
		quoted, found := s.str()
		if !found {
			return value, key, ok
		}
		s.space()
		if s.i >= len(raw) || raw[s.i] != ':' {
			return value, key, ok
		}
		s.i++
		s.space()
		if keyIs(quoted, name) {
			value, key, ok = s.i, k, true
		}
		if !skipValue(&s) {
			return value, key, ok
		}
		if more, _ := s.after('}'); !more {
			return value, key, ok
		}
	}
}

// keyIs: the key whose bytes between the quotes are quoted decodes to name.
func keyIs(quoted []byte, name string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 && printableASCII(quoted) {
		return string(quoted) == name
	}
	var s string
	raw := make([]byte, 0, len(quoted)+2)
	raw = append(append(append(raw, '"'), quoted...), '"')
	return json.Unmarshal(raw, &s) == nil && s == name
}

// element finds the index of the n-th element of the array at i; false when
// i is no array or it is shorter.
func element(raw []byte, i, n int) (int, bool) {
	if raw[i] != '[' || n < 0 {
		return 0, false
	}
	s := keyScan{b: raw, i: i}
	if s.open(']') {
		return 0, false
	}
	for k := 0; ; k++ {
		s.space()
		if k == n {
			return s.i, true
		}
		if !skipValue(&s) {
			return 0, false
		}
		if more, _ := s.after(']'); !more {
			return 0, false
		}
	}
}

// skipValue steps over one value of any kind, without recursion (the
// nesting may be as deep as encoding/json allows).
func skipValue(s *keyScan) bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default:
		return s.literal()
	}
}

// lineColumnAt is the 1-based line and column (in bytes) of raw[i], as
// vcontext's tree.FixLineColumn counts them.
func lineColumnAt(raw []byte, i int) (line, column int64) {
	before := raw[:min(i, len(raw))]
	line = 1 + int64(bytes.Count(before, []byte("\n")))
	column = int64(len(before) - bytes.LastIndexByte(before, '\n'))
	return line, column
}

// firstDupOf is the first entry of Ignition's ValidateDups(v, c)
// (config/validate/validate.go), found as it finds its entries and
// reported as it reports them, without the entries after it: a struct's
// slice fields in GetFields' order but those it ignores (IgnoresDups), the
// fields MergesKeys names sharing one list of keys, each element's key
// (CallKey) a duplicate when an earlier one of its list has it. A list of
// many copies made ValidateDups build an entry for each.
func firstDupOf(v reflect.Value, c path.ContextPath) (report.Entry, bool) {
	if v.Kind() != reflect.Struct {
		return report.Entry{}, false
	}
	var ignore map[string]struct{}
	if i, ok := v.Interface().(util.IgnoresDups); ok {
		ignore = i.IgnoreDuplicates()
	}
	var merged map[string]string
	if m, ok := v.Interface().(util.MergesKeys); ok {
		merged = m.MergedKeys()
	}
	var lists map[string]map[string]struct{}
	for _, f := range vvalidate.GetFields(v) {
		// An empty list adds no key (ValidateDups makes its map of keys
		// all the same, which stays empty).
		if f.Type.Kind() != reflect.Slice || f.Value.Len() == 0 {
			continue
		}
		if _, ignored := ignore[f.Name]; ignored {
			continue
		}
		name := f.Name
		if m, ok := merged[f.Name]; ok {
			name = m
		}
		if lists == nil {
			lists = map[string]map[string]struct{}{}
		}
		seen := lists[name]
		if seen == nil {
			seen = make(map[string]struct{}, f.Value.Len())
			lists[name] = seen
		}
		for i := 0; i < f.Value.Len(); i++ {
			key := util.CallKey(f.Value.Index(i))
			if _, dup := seen[key]; dup {
				var r report.Report
				r.AddOnError(c.Append(vvalidate.FieldName(f, c.Tag), i), ignerrors.ErrDuplicate)
				return r.Entries[0], true
			}
			seen[key] = struct{}{}
		}
	}
	return report.Entry{}, false
}
