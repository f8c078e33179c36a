package daemon

import (
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/watch"
	"github.com/google/go-cmp/cmp"
)

// TestWritesCompletes plays what writers look like to inotify, one event at
// a time, and says after each whether the file is to be checked now and
// whether a write is still in progress.
func TestWritesCompletes(t *testing.T) {
	type step struct {
		op      watch.Op
		regular bool // what is at the path when it was created
		check   bool // completes' answer
		writing bool // a write in progress afterwards
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"shell redirection: truncate, write, close", []step{
			{op: watch.Modify, check: false, writing: true},
			{op: watch.Modify, check: false, writing: true},
			{op: watch.Write, check: true, writing: false},
		}},
		{"new regular file waits for its close", []step{
			{op: watch.Create, regular: true, check: false, writing: true},
			{op: watch.Attrib, check: false, writing: true},
			{op: watch.Write, check: true, writing: false},
		}},
		{"new symlink is complete when it appears", []step{
			{op: watch.Create, regular: false, check: true, writing: false},
		}},
		{"rename into place completes a write", []step{
			{op: watch.Modify, check: false, writing: true},
			{op: watch.MovedTo, check: true, writing: false},
		}},
		{"removal while being written", []step{
			{op: watch.Create, regular: true, check: false, writing: true},
			{op: watch.Remove, check: true, writing: false},
		}},
		{"chmod of a file nobody writes", []step{
			{op: watch.Attrib, check: true, writing: false},
		}},
		{"close and create together: the close wins", []step{
			{op: watch.Create | watch.Write, regular: true, check: true, writing: false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			defer close(done)
			w := newWrites(time.Hour, done) // no timer fires during the test
			defer w.reset()
			const p = "/etc/f"
			var want, got []step
			for _, s := range c.steps {
				regular := func(q string) bool {
					if q != p {
						t.Errorf("regular(%q), want %q", q, p)
					}
					return s.regular
				}
				want = append(want, s)
				g := s
				g.check = w.completes(p, s.op, regular)
				g.writing = w.inProgress(p)
				got = append(got, g)
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWritesSettle: a write that goes quiet arrives on settled, once; a
// write that completed meanwhile is not checked again.
func TestWritesSettle(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	w := newWrites(10*time.Millisecond, done)
	w.arm("/etc/quiet")
	select {
	case p := <-w.settled:
		if p != "/etc/quiet" {
			t.Fatalf("settled %q, want /etc/quiet", p)
		}
		if !w.quiet(p) {
			t.Error("quiet(/etc/quiet) = false for a write still in progress")
		}
		if w.inProgress(p) || w.quiet(p) {
			t.Error("a settled write is still in progress")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a quiet write did not settle within 20s")
	}
	w.arm("/etc/closed")
	w.clear("/etc/closed")
	if w.quiet("/etc/closed") {
		t.Error("quiet(/etc/closed) = true for a write that completed")
	}
}
