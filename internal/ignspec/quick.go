package ignspec

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"reflect"
	"strings"
	"sync"

	"github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/report"
	vvalidate "github.com/coreos/vcontext/validate"
)

// The quick path: a config Ignition has nothing to say on, decoded without
// Ignition's position tree.
//
// Ignition builds that tree for every config (config/validate/validate.go,
// ValidateWithContext with the raw bytes: vcontext's json.UnmarshalToContext)
// only to place report entries on a line and to find unused keys: at 10,000
// files it was a third of a cold load's time and most of its memory peak.
// Everything else the quick path does is Ignition's own: the same
// encoding/json decoding into the spec's types (config/util/parsingErrors.go,
// HandleParseErrors), the same version check (config/vX_Y/config.go, Parse),
// and the same validation functions ValidateWithContext runs without raw
// bytes (vcontext's Validate, then Ignition's ValidateDups), run side by
// side. Unused keys, which the tree finds, are found by a key scanner
// (exactKeys) that says only "none": any key it does not expect hands the
// config to Ignition. Whenever Ignition would report anything at all (a
// syntax or type error, an invalid value, a warning, an unused key), or the
// quick path cannot tell, it answers false and Parse asks Ignition, which
// reports it with its line and column.

// quickDecode decodes the bytes src holds, a config of spec version whose
// config type is C, as that spec's Parse does, when Ignition would report
// nothing at all on them: then the result is the same config (ok). Once the
// bytes are decoded and hold nothing to report on their keys, quickDecode
// lets src drop them (see Bytes).
//
// When the validation has something to say, it returns its report: for a
// config of the newest spec that is the report of Ignition's validation
// but for the positions and unused keys (it refuses the config when an
// entry is fatal: see refuse.go), since the keys are exact and the
// placeholder below is accepted as the source it stands for. A config with
// storage nodes of one path it leaves to the refusal path, whose report
// stops at the first duplicate (duplicateNodes, refuse.go: firstFatal).
func quickDecode(src *Bytes, version string) (Config, report.Report, bool) {
	c, ok := decodeExact[Config](src, version, reflect.TypeFor[Config]())
	if !ok {
		return Config{}, report.Report{}, false
	}
	if duplicateNodes(&c) {
		return Config{}, firstDuplicateReport(&c), false
	}
	if r := quickReport(&c); len(r.Entries) > 0 {
		return Config{}, r, false
	}
	return c, report.Report{}, true
}

// validQuick: Ignition's validation without the position tree
// (validateNoTree) has nothing to say on cfg.
//
// A file's contents that are a base64 data URL of the shape Ignition's
// tools write are validated by Base64DataURL, not by dataurl's lexer (a
// fifth of a cold load): while vcontext's walks run, such a source is
// replaced with "data:,", which Resource.Validate accepts as it accepts
// the source (config/v3_6/types/resource.go and url.go: for a data URL,
// url.Parse then dataurl.DecodeString, which FuzzBase64DataURL shows
// succeed where Base64DataURL does; the other rules on a source see the
// same scheme and a source that is set), and restored after. Contents are
// one resource per file, in no list: ValidateDups does not see them.
func validQuick(cfg *Config) bool { return len(quickReport(cfg).Entries) == 0 }

// quickReport is the report of validQuick's validation of cfg, which
// repeats no node path or name: its callers (quickDecode, quickOlder) have
// found none (duplicateNodes) before. validatesClean answers first for a
// config it has nothing to say on, without vcontext's walk of the whole
// config (with no duplicate node, that is validFast); the walk gives the
// report when there is one.
func quickReport(cfg *Config) report.Report {
	if validatesClean(cfg, true) {
		return report.Report{}
	}
	var swapped []int
	var saved []*string
	var scratch []byte
	placeholder := "data:,"
	for i := range cfg.Storage.Files {
		src := cfg.Storage.Files[i].Contents.Source
		if src == nil {
			continue
		}
		var ok bool
		if scratch, ok = validBase64DataURL(*src, scratch); ok {
			swapped, saved = append(swapped, i), append(saved, src)
			cfg.Storage.Files[i].Contents.Source = &placeholder
		}
	}
	r := validateNoTree(*cfg)
	for k, i := range swapped {
		cfg.Storage.Files[i].Contents.Source = saved[k]
	}
	return r
}

// direct lists what a config of an older spec must not hold for quickOlder
// to decode it straight into the newest spec's types; each is a rule of the
// older spec that the newest one does not have.
type direct struct {
	// noARN: no source URL of scheme arn, which config/v3_4/types/url.go
	// first accepts (an S3 access point); older specs refuse it.
	noARN bool
	// noGS: no source URL of scheme gs, which config/v3_2/types/url.go
	// first accepts.
	noGS bool
	// versionOnly: the ignition section holds the version only: spec 3.0.0's
	// config references, CA references and timeouts are other types, which
	// config/v3_1/translate converts by hand (translateConfigReference,
	// translateCAReference: an absent CA source becomes "").
	versionOnly bool
}

// quickOlder is quickDecode of a config of the older spec version, whose
// types are C, followed by Ignition's translations up to the newest spec and
// the newest spec's validation (Parse), in one: the config is decoded
// straight into the newest spec's types and validated with the newest
// spec's rules only. Translating was a quarter of a cold load, validating
// twice a third.
//
// It is the same for a config that passes these guards, checked in
// v2.27.0's sources (config/v3_N/types against config/v3_6/types, and each
// config/v3_N/translate/translate.go):
//
//   - every key is a field of C, spelt exactly (exactKeys with C's type):
//     so the newest types, a superset of C's by name and JSON shape for
//     every field kept (TestOlderTypesAreNewest's), decode what C would;
//   - no disks, raid, filesystems nor luks: their translations convert by
//     hand (a raid level, a clevis custom pin, a tang advertisement dropped
//     by config/v3_5/translate) and their rules changed (3.6.0 accepts any
//     clevis custom pin); every other Translate copies field by field;
//   - no setuid, setgid or sticky bit: config/v3_6/translate masks them,
//     and the older specs warn of them (ErrModeSpecialBits), so Ignition has
//     something to say anyway;
//   - the guards of the spec's entry (direct) on what else its rules refuse
//     that the newest ones accept: the other differences of the types'
//     validation are rules the newest spec adds (a link's target required,
//     an S3 versionId not empty), which refuse what the older spec would
//     accept and translate into a config the newest one refuses again;
//   - the newest spec's validation has nothing to say: then neither has the
//     older spec's, whose rules on these sections are the same code but for
//     those guarded.
func quickOlder[C any](src *Bytes, version string, d direct) (Config, report.Report, bool) {
	cfg, ok := decodeExact[Config](src, version, reflect.TypeFor[C]())
	if !ok {
		return Config{}, report.Report{}, false
	}
	s := &cfg.Storage
	if len(s.Disks) > 0 || len(s.Raid) > 0 || len(s.Filesystems) > 0 || len(s.Luks) > 0 {
		return Config{}, report.Report{}, false
	}
	for _, f := range s.Files {
		if f.Mode != nil && *f.Mode&0o7000 != 0 {
			return Config{}, report.Report{}, false
		}
	}
	for _, dir := range s.Directories {
		if dir.Mode != nil && *dir.Mode&0o7000 != 0 {
			return Config{}, report.Report{}, false
		}
	}
	if d.versionOnly {
		ign := cfg.Ignition
		ign.Version = ""
		if !reflect.DeepEqual(ign, Config{}.Ignition) {
			return Config{}, report.Report{}, false
		}
	}
	if (d.noARN || d.noGS) && !sourcesAllowed(cfg, d) {
		return Config{}, report.Report{}, false
	}
	cfg.Ignition.Version = MaxVersion.String()
	if duplicateNodes(&cfg) {
		// The older spec's walks meet the same fields in the same order
		// (the spec's types are the newest ones' by name and JSON shape,
		// in the order of their schema), and ValidateDups is one function
		// of every spec's lists: TestRefusalOfGeneratedConfigs holds the
		// entry to Ignition's in every spec.
		return Config{}, firstDuplicateReport(&cfg), false
	}
	if !validQuick(&cfg) {
		return Config{}, report.Report{}, false
	}
	return cfg, report.Report{}, true
}

// firstDuplicateReport is the refusal of cfg, which repeats a node path or
// a unit, dropin, user or group name (duplicateNodes), when that is all
// Ignition's validation has to say of it but for more duplicates
// (validatesClean): its first duplicate's entry, which is the first fatal
// entry of Ignition's report (ValidateWithContext: the Validate walk's
// entries, none here, then the ValidateDups walk's, in order). Else the
// empty report, and the refusal path decides (refuse.go).
func firstDuplicateReport(cfg *Config) report.Report {
	if !validatesClean(cfg, false) {
		return report.Report{}
	}
	dup, ok := firstDuplicate(*cfg)
	if !ok {
		return report.Report{}
	}
	return report.Report{Entries: []report.Entry{dup}}
}

// duplicateNodes reports whether two of the storage nodes (files,
// directories, links) have one path, or two units, dropins, users or groups
// one name (duplicateNames): Ignition's ValidateDups refuses them
// (config/vX_Y/types/storage.go: MergedKeys puts the three lists in one key
// space, Node's Key is its path, in every spec), so the quick path would
// walk the whole config for nothing, and gather an entry for every
// duplicate. It only saves that walk: the refusal
// path (refuse.go) decides what is reported, and were it wrong, Ignition's.
func duplicateNodes(cfg *Config) bool {
	s := &cfg.Storage
	seen := make(map[string]struct{}, len(s.Files)+len(s.Directories)+len(s.Links))
	dup := func(p string) bool {
		if _, ok := seen[p]; ok {
			return true
		}
		seen[p] = struct{}{}
		return false
	}
	for i := range s.Files {
		if dup(s.Files[i].Path) {
			return true
		}
	}
	for i := range s.Directories {
		if dup(s.Directories[i].Path) {
			return true
		}
	}
	for i := range s.Links {
		if dup(s.Links[i].Path) {
			return true
		}
	}
	return duplicateNames(cfg)
}

// sourcesAllowed: no URL of the config has a scheme d excludes (url.Parse
// folds a scheme's case, config/v3_N/types/url.go switches on it).
func sourcesAllowed(cfg Config, d direct) bool {
	ok := func(src *string) bool {
		if src == nil {
			return true
		}
		scheme, _, found := strings.Cut(*src, ":")
		if !found {
			return true
		}
		scheme = strings.ToLower(scheme)
		return !(d.noARN && scheme == "arn") && !(d.noGS && scheme == "gs")
	}
	res := func(r Resource) bool { return ok(r.Source) }
	for _, f := range cfg.Storage.Files {
		if !res(f.Contents) {
			return false
		}
		for _, a := range f.Append {
			if !res(a) {
				return false
			}
		}
	}
	ic := cfg.Ignition
	if !res(ic.Config.Replace) {
		return false
	}
	for _, r := range ic.Config.Merge {
		if !res(r) {
			return false
		}
	}
	for _, r := range ic.Security.TLS.CertificateAuthorities {
		if !res(r) {
			return false
		}
	}
	return true
}

// filesDeclared counts the elements of raw's storage.files, keys spelt
// exactly so; 0 when it cannot tell. Repeated, the longest list counts.
func filesDeclared(raw []byte) int {
	s := keyScan{b: raw}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return 0
	}
	n := 0
	s.members(func(key []byte) bool {
		s.space()
		if string(key) != "storage" || s.i >= len(s.b) || s.b[s.i] != '{' {
			return s.skip()
		}
		return s.members(func(key []byte) bool {
			s.space()
			if string(key) != "files" || s.i >= len(s.b) || s.b[s.i] != '[' {
				return s.skip()
			}
			count := 0
			ok := s.elements(func() bool { count++; return s.skip() })
			n = max(n, count)
			return ok
		})
	})
	return n
}

// decodeExact decodes the bytes src holds into C as Ignition's Parse does
// (config/util/parsingErrors.go, HandleParseErrors: encoding/json), when
// they declare version and every key is the exact name of a field of keys
// (exactKeys): then src drops them. ok false: Ignition's Parse must read
// them.
func decodeExact[C any](src *Bytes, version string, keys reflect.Type) (c C, ok bool) {
	if len(src.b) == 0 {
		return c, false
	}
	if n := filesDeclared(src.b); n > 0 {
		// encoding/json appends a list's elements to the slice it finds
		// (decode.go, array: it grows it only past its capacity): one of
		// the right size spares the copies of doubling and up to half a
		// list of unused capacity, the largest list of a large config, at
		// the peak of its load. The values decoded are the same.
		reflect.ValueOf(&c).Elem().FieldByName("Storage").FieldByName("Files").Set(
			reflect.MakeSlice(reflect.ValueOf(c).FieldByName("Storage").FieldByName("Files").Type(), 0, n))
	}
	if cfg, isConfig := any(&c).(*Config); isConfig {
		// Before raw is taken from src: a variable holding it would keep
		// the bytes that the lean decoding lets go.
		if tried, ok := decodeLean(src, cfg, version, keys, leanMin); tried {
			return c, ok
		}
	}
	raw := src.b
	if json.Unmarshal(raw, &c) != nil {
		return c, false
	}
	// Parse compares the decoded ignition.version with its MaxVersion as a
	// semver; the exact string of that version is equal to it.
	if reflect.ValueOf(c).FieldByName("Ignition").FieldByName("Version").String() != version {
		return c, false
	}
	if !exactKeys(raw, keys) {
		return c, false
	}
	src.drop()
	return c, true
}

// Bytes are the bytes of a config file being parsed, or of a part of one
// (a MachineConfig's spec.config). A parse that has decoded them lets them
// go (drop) when they can be read again (reopen), so that the bytes and the
// config decoded from them are not both alive through its validation,
// which allocates several times the config's size: the live heap is
// smaller by the bytes, and the memory peak by twice that. Should
// Ignition's report need the bytes after all (to place an entry on a
// line), Bytes reads them again and refuses a file that changed in
// between, which the decoded config no longer describes.
type Bytes struct {
	b      []byte
	reopen Reopen // nil: the bytes are never dropped
	// file, if not nil, is the whole file reopen opens, of which b is
	// file[from:from+len(b)].
	file []byte
	from int
	// Of the file whose bytes were dropped: its length and CRC-32C, to
	// know it again, and the length of the part.
	dropped bool
	n       int
	sum     uint32
	partLen int
}

// NewBytes holds b; reopen, if not nil, opens them again (and the caller
// should then hold no reference to b: the parse may let it go).
func NewBytes(b []byte, reopen Reopen) *Bytes {
	return &Bytes{b: b, reopen: reopen}
}

// NewRangeBytes is NewBytes of file[from:to], a part of the file whose
// bytes are file, which reopen opens again (the caller should then hold no
// reference to file).
func NewRangeBytes(file []byte, from, to int, reopen Reopen) *Bytes {
	return &Bytes{b: file[from:to], reopen: reopen, file: file, from: from}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// drop lets the bytes go if they can be read again.
func (c *Bytes) drop() {
	if c.reopen == nil || c.dropped {
		return
	}
	whole := c.b
	if c.file != nil {
		whole = c.file
	}
	c.dropped, c.n, c.sum, c.partLen = true, len(whole), crc32.Checksum(whole, castagnoli), len(c.b)
	c.b, c.file = nil, nil
}

// Bytes are the config's bytes, read again if they were dropped: the whole
// file, which must be the one dropped, and of it the part they were.
func (c *Bytes) Bytes() ([]byte, error) {
	if !c.dropped {
		return c.b, nil
	}
	b, err := c.reopen.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(b) != c.n || crc32.Checksum(b, castagnoli) != c.sum {
		return nil, errChanged
	}
	c.b, c.dropped = b, false
	if c.from != 0 || c.partLen != len(b) {
		c.file, c.b = b, b[c.from:c.from+c.partLen]
	}
	return c.b, nil
}

// validateNoTree is Ignition's validate.ValidateWithContext(cfg, nil)
// (config/validate/validate.go): vcontext's Validate, then ValidateDups,
// their reports merged in that order; the two walks run side by side.
func validateNoTree(cfg any) report.Report {
	var dups report.Report
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		dups = vvalidate.ValidateCustom(cfg, "json", validate.ValidateDups)
	}()
	r := vvalidate.Validate(cfg, "json")
	wg.Wait()
	r.Merge(dups)
	return r
}

// exactKeys reports whether every object key in raw, a JSON document that
// encoding/json decoded into a value of type t, is the exact name of a field
// of the struct it decoded into, with no escapes, and no value is null:
// then Ignition's ValidateUnusedKeys (config/validate/validate.go) has
// nothing to report on it. That check compares a struct's keys in the
// position tree with its fields' json names exactly, where encoding/json
// decoded a key of another case ("Path") into the field, or ignored an
// unknown one; and a struct decoded from null is no object in the tree, a
// warning there. Anything else it does not expect (a key that is not a
// field, a value of an unexpected shape) is a false: Ignition decides.
func exactKeys(raw []byte, t reflect.Type) bool {
	s := keyScan{b: raw}
	if !s.value(t) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// keyScan walks a JSON document that encoding/json has accepted, so it
// checks the structure it relies on, not the whole grammar.
type keyScan struct {
	b []byte
	i int
}

func (s *keyScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value that decodes into type t.
func (s *keyScan) value(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '{':
		if t.Kind() != reflect.Struct {
			return false // Ignition's types have no maps nor interfaces
		}
		return s.object(fieldsOf(t))
	case '[':
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return false
		}
		return s.elements(func() bool { return s.value(t.Elem()) })
	case '"':
		_, ok := s.str()
		return ok
	case 'n':
		return false
	default: // a number, true or false
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return true
			}
			s.i++
		}
		return true
	}
}

func (s *keyScan) object(fields map[string]reflect.Type) bool {
	return s.members(func(key []byte) bool {
		ft, ok := fields[string(key)]
		return ok && s.value(ft)
	})
}

// members scans an object, calling member after each key's colon to scan
// its value; member false stops the scan with false.
func (s *keyScan) members(member func(key []byte) bool) bool {
	if s.open('}') {
		return true
	}
	for {
		s.space()
		key, ok := s.str()
		if !ok || !printableASCII(key) || bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		if more, ok := s.after('}'); !more {
			return ok
		}
	}
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// elements scans an array, calling elem to scan each element; elem false
// stops the scan with false.
func (s *keyScan) elements(elem func() bool) bool {
	if s.open(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if more, ok := s.after(']'); !more {
			return ok
		}
	}
}

// open steps over an object's or array's opening byte; empty: closing
// follows, and is stepped over too.
func (s *keyScan) open(closing byte) (empty bool) {
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == closing {
		s.i++
		return true
	}
	return false
}

// after scans what follows a member or an element: more after a comma,
// not more but ok after the closing byte.
func (s *keyScan) after(closing byte) (more, ok bool) {
	s.space()
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return true, true
	case closing:
		s.i++
		return false, true
	}
	return false, false
}

// str scans a string and returns its bytes between the quotes, undecoded.
func (s *keyScan) str() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; ; {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, false
		}
		j += k
		backslashes := 0
		for p := j - 1; p >= start && s.b[p] == '\\'; p-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			s.i = j + 1
			return s.b[start:j], true
		}
		j++
	}
}

// fieldsOf maps the json names of a struct's fields, embedded structs
// flattened, to their types: the names vcontext's GetFields and FieldName
// give (vcontext validate/validate.go), for exported fields that
// encoding/json decodes. A field without a json name is left out, so a key
// for it makes exactKeys false.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				add(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			m[name] = f.Type
		}
	}
	add(t)
	fieldCache.Store(t, m)
	return m
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// PlainIgnitionVersion is what internal/desired's MachineConfig probe,
// encoding/json decoding raw into a struct of kind, ignition.version and
// spec, reads of a plain Ignition config, found without a decoder: ok when raw is one JSON
// object without a key that encoding/json would match with kind or spec (it
// matches keys without regard to ASCII case), whose ignition keys, if any,
// hold objects, and whose version keys in those hold strings; version is
// then the last of these (encoding/json decodes a repeated key into the same
// struct). A key or version with an escape or a byte outside ASCII, or
// anything else, is not ok: the probe decides.
//
// It does not check the whole grammar, as the probe does first; for bytes
// that are not JSON it may give a version where the probe gives none. The
// parse of that version then reports the same syntax error as the parse
// without one would: encoding/json checks the syntax before decoding
// anything, whatever the target (config/util/parsingErrors.go).
func PlainIgnitionVersion(raw []byte) (version string, ok bool) {
	s := keyScan{b: raw}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return "", false
	}
	ok = s.members(func(key []byte) bool {
		switch {
		case asciiKey(key, "kind"), asciiKey(key, "spec"):
			return false
		case asciiKey(key, "ignition"):
			s.space()
			if s.i >= len(s.b) || s.b[s.i] != '{' {
				return false
			}
			return s.members(func(key []byte) bool {
				if !asciiKey(key, "version") {
					return s.skip()
				}
				s.space()
				v, ok := s.str()
				if !ok || bytes.IndexByte(v, '\\') >= 0 || !printableASCII(v) {
					return false
				}
				version = string(v)
				return true
			})
		default:
			return s.skip()
		}
	})
	s.space()
	return version, ok && s.i == len(s.b)
}

// PlainKind is the kind of a JSON object that declares one, found without a
// decoder: ok when raw is one JSON object whose keys are plain ASCII without
// escapes, with exactly one key that encoding/json would match with a field
// "kind" (ASCII case folded), whose value is a string without escapes, and
// none that it would match with "ignition"; kind is then that string. It
// does not check the whole grammar: a caller that decodes raw on its word
// must fall back where the decoding fails.
func PlainKind(raw []byte) (kind string, ok bool) {
	s := keyScan{b: raw}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return "", false
	}
	kinds := 0
	ok = s.members(func(key []byte) bool {
		switch {
		case asciiKey(key, "ignition"):
			return false
		case asciiKey(key, "kind"):
			s.space()
			v, ok := s.str()
			if !ok || bytes.IndexByte(v, '\\') >= 0 || !printableASCII(v) {
				return false
			}
			kind, kinds = string(v), kinds+1
			return true
		default:
			return s.skip()
		}
	})
	s.space()
	return kind, ok && kinds == 1 && s.i == len(s.b)
}

// asciiKey: key, plain ASCII without escapes (members gives no other), is
// name as encoding/json matches keys with field names (ASCII case folded).
func asciiKey(key []byte, name string) bool {
	return strings.EqualFold(string(key), name)
}

// skip scans one value of any kind.
func (s *keyScan) skip() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '{':
		return s.members(func([]byte) bool { return s.skip() })
	case '[':
		return s.elements(s.skip)
	case '"':
		_, ok := s.str()
		return ok
	default:
		return s.literal()
	}
}

// literal scans a number, true, false or null.
func (s *keyScan) literal() bool {
	start := s.i
	for s.i < len(s.b) && strings.IndexByte(",}] \t\n\r", s.b[s.i]) < 0 {
		s.i++
	}
	return s.i > start
}
