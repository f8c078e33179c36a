package ignspec

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/coreos/vcontext/report"
)

// shapeOf is a config of spec version of n small entries of a kind
// (shapes), all of one name when duplicate (n-1 duplicates); its files as
// BenchmarkLoadRefused's (package desired).
func shapeOf(version, kind string, n int, duplicate bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"ignition":{"version":"` + version + `"},` + shapes[kind][0])
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		p := i
		if duplicate {
			p = 0
		}
		fmt.Fprintf(&b, shapes[kind][1], p)
	}
	b.WriteString(shapes[kind][2] + "}\n")
	return b.Bytes()
}

// shapes are the lists shapeOf makes: what opens the list, an entry, what
// closes it.
var shapes = map[string][3]string{
	"files":   {`"storage":{"files":[`, `{"path":"/etc/shape/f%06d.conf","mode":420,"contents":{"source":"data:,x"}}`, `]}`},
	"units":   {`"systemd":{"units":[`, `{"name":"shape-%06d.service","enabled":true,"contents":"[Unit]"}`, `]}`},
	"dropins": {`"systemd":{"units":[{"name":"a.service","dropins":[`, `{"name":"d%06d.conf","contents":"[Unit]"}`, `]}]}`},
	"users":   {`"passwd":{"users":[`, `{"name":"user%06d","sshAuthorizedKeys":["ssh-ed25519 AAAA"]}`, `]}`},
	"groups":  {`"passwd":{"groups":[`, `{"name":"group%06d","gid":1000}`, `]}`},
}

// allocated is what f allocates on the heap: bytes and objects.
func allocated(f func()) (bytes, objects uint64) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc, m1.Mallocs - m0.Mallocs
}

// TestRefusalCostsNoMoreThanValid: refusing a config of many copies of one
// file, unit, dropin, user or group allocates no more, in bytes or
// objects, than parsing a valid config of the same shape and size; its
// report holds the first
// duplicate only, not one entry per copy (which, live through the rest of
// the validation, had the collector run far more often under a load's
// memory limit: BenchmarkLoadRefused in package desired measures the CPU
// time).
func TestRefusalCostsNoMoreThanValid(t *testing.T) {
	const n = 2000
	for _, v := range Versions() {
		for kind := range shapes {
			// Files in every spec; the rest in the newest (the quick
			// path's quickDecode) and one older (quickOlder).
			if kind != "files" && v != MaxVersion.String() && v != "3.3.0" {
				continue
			}
			t.Run(v+"/"+kind, func(t *testing.T) {
				refusalCost(t, shapeOf(v, kind, n, false), shapeOf(v, kind, n, true), v)
			})
		}
	}
}

// refusalCost: parsing valid succeeds, parsing dup fails with one fatal
// entry, and allocates no more than parsing valid (but for noise).
func refusalCost(t *testing.T, valid, dup []byte, v string) {
	// Once untimed each: what either path sets up once (a type's methods
	// looked up, a table built) is no cost of a parse.
	_, _, _ = ParseBytes(valid, v)
	_, _, _ = ParseBytes(dup, v)
	var err error
	vb, vo := allocated(func() { _, _, err = ParseBytes(valid, v) })
	if err != nil {
		t.Fatal(err)
	}
	var fatal int
	rb, ro := allocated(func() {
		var rpt report.Report
		_, rpt, err = ParseBytes(dup, v)
		for _, e := range rpt.Entries {
			if e.Kind.IsFatal() {
				fatal++
			}
		}
	})
	if err == nil {
		t.Fatal("a config of duplicates parsed")
	}
	t.Logf("refused/valid: %.2f of the bytes, %.2f of the objects", float64(rb)/float64(vb), float64(ro)/float64(vo))
	// The parse alone does the same work either way (the decoding, the
	// validation), the refusal's first duplicate and its place against the
	// valid config's list of every path: equal in objects but for a few,
	// and in bytes but for what the runtime's own caches, emptied by the
	// collection before each, take back (a tenth, from run to run). What a
	// refusal spares, the state derived from the config, is
	// BenchmarkLoadRefused's (package desired). A refusal that reported
	// every copy (five times the objects) or walked what the valid config
	// does not (eight times the bytes) fails.
	if float64(rb) > 1.3*float64(vb) || float64(ro) > 1.1*float64(vo) {
		t.Errorf("refusing allocated %d B in %d objects; parsing a valid config of the same size %d B in %d", rb, ro, vb, vo)
	}
	if fatal != 1 {
		t.Errorf("the report holds %d fatal entries: want the first duplicate only", fatal)
	}
}
