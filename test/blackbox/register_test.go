package blackbox

import (
	"os"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// The registered cases: data, the way Ignition's blackbox suite keeps its
// own (tests/register, tests/positive, tests/negative in
// github.com/coreos/ignition): each case is a desired config, the root as
// it was provisioned, and steps that change the root, each with what the
// daemon must write for it. TestRegistered runs every case on a fresh root
// with a daemon of its own. A case that needs assertions of its own (a
// record's message, the bus, inhibitors) stays a test function.

// caseType says what a case proves.
type caseType int

const (
	// positive: the root ends as declared; writing it so is no drift.
	positive caseType = iota
	// negative: the root drifts; every drift is reported, and resolved.
	negative
)

func (c caseType) String() string {
	if c == positive {
		return "positive"
	}
	return "negative"
}

// registered holds the cases, by type, in the order they were registered.
var registered = map[caseType][]blackboxCase{}

// register adds a case; the files of positive_test.go and negative_test.go
// call it from init.
func register(typ caseType, c blackboxCase) { registered[typ] = append(registered[typ], c) }

type blackboxCase struct {
	name   string
	config string   // the desired config, at desired.d/50-test.ign
	in     []node   // the root before the daemon starts
	args   []string // the daemon's flags after --root
	// status is the status line to wait for once the daemon is ready.
	status string
	steps  []step
}

// node is a file (or, with dir, a directory) of the root.
type node struct {
	path    string
	content string
	mode    os.FileMode
	dir     bool
}

// step changes the root, then waits for every record of want (after the
// change, in any order), then for status if set; then, if noDriftOn is
// set, proves with the sentinel that no drift of that path came after
// those records (noDriftBefore).
type step struct {
	do        func(t *testing.T, f *fixture)
	want      []want
	status    string
	noDriftOn string
}

// want is a record the daemon must write: its MESSAGE_ID and fields.
type want struct {
	id     string
	fields map[string]string
}

// detected is the drift record of path, of the kind ("" for any).
func detected(path, kind string) want { return drift(harness.DriftDetected, path, kind) }

// resolved is the record of path's drift resolved, of the kind ("" for any).
func resolved(path, kind string) want { return drift(harness.MsgDriftResolved, path, kind) }

func drift(id, path, kind string) want {
	w := want{id, map[string]string{"DRIFT_PATH": path}}
	if kind != "" {
		w.fields["DRIFT_KIND"] = kind
	}
	return w
}

// twoFilesRoot is the root cleanTwoFiles writes.
var twoFilesRoot = []node{
	{path: "/etc/etc-file", content: "hello world\n", mode: 0o644},
	{path: "/etc/sentinel", content: "s\n", mode: 0o644},
	{path: "/etc/secret", content: "TOPSECRET-WANT\n", mode: 0o600},
}

func TestRegistered(t *testing.T) {
	for _, typ := range []caseType{positive, negative} {
		for _, c := range registered[typ] {
			t.Run(typ.String()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t)
			})
		}
	}
}

func (c blackboxCase) run(t *testing.T) {
	f := newFixture(t, c.config)
	for _, n := range c.in {
		if n.dir {
			if err := os.MkdirAll(f.host(n.path), n.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f.host(n.path), n.mode); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f.write(n.path, n.content, n.mode)
	}
	d := startDaemon(t, f.root, c.args...)
	if c.status != "" {
		d.waitStatus(c.status)
	}
	for _, s := range c.steps {
		m := d.mark()
		if s.do != nil {
			s.do(t, f)
		}
		for _, w := range s.want {
			d.waitRecord(m, w.id, w.fields)
		}
		if s.status != "" {
			d.waitStatus(s.status)
		}
		if s.noDriftOn != "" {
			noDriftBefore(t, d, f, d.mark(), s.noDriftOn)
		}
	}
}
