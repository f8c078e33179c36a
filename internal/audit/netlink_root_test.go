package audit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// testKey keeps this test's rules apart from a running daemon's.
func testKey(t *testing.T) string {
	k := fmt.Sprintf("drift-monitor-test-%d", os.Getpid())
	harness.AuditHost(t, k)
	return k
}

func dial(t *testing.T) *Conn {
	t.Helper()
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStatusAndRules(t *testing.T) {
	key := testKey(t)
	c := dial(t)
	st, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Enabled != 1 {
		t.Fatalf("status enabled = %d after auditctl -e 1", st.Enabled)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "motd")
	missing := filepath.Join(dir, "notyet") // a file watch needs only its parent
	rules := []Rule{WatchRule(file, false, key), WatchRule(missing, false, key), WatchRule(dir, true, key)}
	os.WriteFile(file, []byte("x"), 0o644)
	for _, r := range rules {
		if err := c.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddRule(rules[0]); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("adding a rule twice: %v, want EEXIST", err)
	}
	// auditctl reads ours back as the -w rules it would have added.
	listed := harness.AuditCommand(t, "-l", "-k", key)
	for _, want := range []string{
		"-w " + file + " -p wa -k " + key,
		"-w " + missing + " -p wa -k " + key,
		"-w " + dir + " -p wa -k " + key,
	} {
		if !strings.Contains(listed, want+"\n") {
			t.Errorf("auditctl -l lacks %q:\n%s", want, listed)
		}
	}
	got, err := c.ListRules()
	if err != nil {
		t.Fatal(err)
	}
	ours := 0
	for _, r := range got {
		if p, d, k, ok := r.Watch(); ok && k == key {
			ours++
			if (p == dir) != d {
				t.Errorf("rule %s: dir = %v", r, d)
			}
		}
	}
	if ours != 3 {
		t.Errorf("ListRules: %d rules with our key, want 3: %v", ours, got)
	}
	// A rule auditctl added is one we can delete, and ours auditctl can.
	harness.AuditCommand(t, "-W", file, "-p", "wa", "-k", key)
	if err := c.DelRule(rules[1]); err != nil {
		t.Error(err)
	}
	if err := c.DelRule(rules[1]); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("deleting a rule twice: %v, want ENOENT", err)
	}
	if listed := harness.AuditCommand(t, "-l", "-k", key); strings.Count(listed, "-w ") != 1 {
		t.Errorf("after deleting two, auditctl -l:\n%s", listed)
	}

	// auditctl takes no key on the task list: a field marks ours.
	never := []string{"never,task", "-F", "uid=3999999"}
	harness.AuditCommand(t, append([]string{"-a"}, never...)...)
	t.Cleanup(func() { harness.AuditCommand(t, append([]string{"-d"}, never...)...) })
	if got, err = c.ListRules(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range got {
		found = found || r.NeverTask() && strings.Contains(r.String(), "=3999999")
	}
	if !found {
		t.Errorf("ListRules did not show the never,task rule: %v", got)
	}
}

// records collects assembled events from a reader until stop.
type records struct {
	ch  chan Event
	err chan error

	mu    sync.Mutex
	other map[uint16]int // records of types the reader did not ask for
}

// listen reads the kernel's audit records of the types events are made
// of, which it sends only to readers in the initial network namespace.
func listen(t *testing.T) *records {
	t.Helper()
	harness.RequireInitialNetNS(t, "reading the kernel's audit records")
	r, err := Listen(EventTypes...)
	if err != nil {
		t.Fatal(err)
	}
	rs := &records{ch: make(chan Event, 1024), err: make(chan error, 1), other: map[uint16]int{}}
	done := make(chan struct{})
	t.Cleanup(func() { r.Close(); <-done })
	go func() {
		defer close(done)
		a := NewAssembler()
		for {
			recs, err := r.Read()
			if err != nil && !errors.Is(err, ErrOverrun) {
				rs.err <- err
				return
			}
			for _, rec := range recs {
				if !slices.Contains(EventTypes, rec.Type) {
					rs.mu.Lock()
					rs.other[rec.Type]++
					rs.mu.Unlock()
				}
				for _, e := range a.Add(rec, time.Now()) {
					rs.ch <- e
				}
			}
		}
	}()
	return rs
}

// await returns the first event (of key) for which match holds, within 5 s.
func (rs *records) await(t *testing.T, key, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(5 * time.Second)
	var seen []string
	for {
		select {
		case e := <-rs.ch:
			if testing.Verbose() {
				t.Logf("event %+v", e)
			}
			if e.Key != key {
				continue
			}
			if match(e) {
				return e
			}
			seen = append(seen, fmt.Sprintf("%+v", e))
		case err := <-rs.err:
			t.Fatalf("reader: %v", err)
		case <-deadline:
			t.Fatalf("no event for %s within 5 s; ours seen: %v", what, seen)
		}
	}
}

func TestReaderAttributesAWriter(t *testing.T) {
	key := testKey(t)
	c := dial(t)
	rs := listen(t)
	// Nobody must reach the file for the open to be denied at it (a
	// lookup denied on the way is no write to a watched inode).
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	file := filepath.Join(dir, "motd")
	os.WriteFile(file, []byte("x"), 0o644)
	if err := c.AddRule(WatchRule(file, false, key)); err != nil {
		t.Fatal(err)
	}
	// A login uid set, then dropped to nobody: the write is denied, and
	// the record names the login user all the same.
	cmd := exec.Command("sh", "-c", `echo 1000 > /proc/self/loginuid && exec setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'echo y >> "$0"' "$1"`, "sh", file)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("nobody appended to a 0644 root file: %s", out)
	}
	e := rs.await(t, key, "the denied append", func(e Event) bool { return e.Writer.AUID == 1000 })
	if e.Writer.Success || e.Writer.UID != 65534 || e.Writer.PID != cmd.Process.Pid || e.Writer.Comm != "sh" {
		t.Errorf("writer %+v, want a failed write by uid 65534, pid %d, comm sh", e.Writer, cmd.Process.Pid)
	}
	if len(e.Paths) == 0 || e.Paths[len(e.Paths)-1].Path != file {
		t.Errorf("paths %+v, want %s", e.Paths, file)
	}

	// sed -i renames a temporary file over it: the rename names the old
	// inode DELETEd and the new one CREATEd under the parent.
	var st syscall.Stat_t
	syscall.Stat(file, &st)
	oldIno := Inode{DevString(uint64(st.Dev)), st.Ino}
	if out, err := exec.Command("sed", "-i", "s/x/z/", file).CombinedOutput(); err != nil {
		t.Fatalf("sed: %v: %s", err, out)
	}
	e = rs.await(t, key, "sed's rename", func(e Event) bool { return strings.HasPrefix(e.Writer.Syscall, "rename") })
	r := NewRing(16)
	r.Add(e)
	if got := r.Find(Query{Former: []Inode{oldIno}}); len(got) != 1 || got[0].Writer.Comm != "sed" {
		t.Errorf("by the old inode %v: %+v (event %+v)", oldIno, got, e)
	}
	if got := r.Find(Query{Path: file}); len(got) != 1 {
		t.Errorf("by path %s: %+v (event %+v)", file, got, e)
	}

	// Rules removed under us say so on the same stream.
	harness.AuditCommand(t, "-D", "-k", key)
	e = rs.await(t, key, "the rule's removal", func(e Event) bool { return e.Config != nil })
	if e.Config.Op != "remove_rule" {
		t.Errorf("config change %+v, want op remove_rule", e.Config)
	}
	// Every audited system call above came with a PROCTITLE record, which
	// the socket's filter kept from the reader.
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.other) > 0 {
		t.Errorf("the reader got records of types it did not ask for (type: count): %v", rs.other)
	}
}

func TestRulesSync(t *testing.T) {
	key := testKey(t)
	rules := Rules{Conn: dial(t), Key: key}
	dir := t.TempDir()
	want, err := PlanWatches([]string{filepath.Join(dir, "a"), filepath.Join(dir, "x/y"), dir}, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	added, removed, err := rules.Sync(want)
	if err != nil || len(added) != 3 || len(removed) != 0 {
		t.Fatalf("first sync: added %v removed %v: %v", added, removed, err)
	}
	if added, _, err := rules.Sync(want); err != nil || len(added) != 0 {
		t.Errorf("second sync added %v: %v", added, err)
	}
	// Removed under us: missing, then restored; a rule no longer wanted
	// goes.
	harness.AuditCommand(t, "-W", filepath.Join(dir, "a"), "-p", "wa", "-k", key)
	if m, err := rules.Missing(want); err != nil || len(m) != 1 {
		t.Errorf("missing %v: %v", m, err)
	}
	added, removed, err = rules.Sync(want[1:])
	if err != nil || len(removed) != 1 {
		t.Errorf("sync: added %v removed %v: %v", added, removed, err)
	}
	if err := rules.Clear(); err != nil {
		t.Fatal(err)
	}
	// auditctl -l -k prints "No rules" when the kernel has none at all,
	// nothing when it has only others' (a host's auditd, another test).
	if out := harness.AuditCommand(t, "-l", "-k", key); strings.Contains(out, key) {
		t.Errorf("after Clear, rules of %s are left: %s", key, out)
	}
}

// TestRuleFileLoadsAsPlanned: what drift-monitor audit-rules prints for a
// directory, loaded by the real auditctl -R as /etc/audit/rules.d is at
// boot, is the watch of that one node the daemon adds (AUDIT_WATCH), not
// a watch of the tree below it (AUDIT_DIR, what -w would have made).
func TestRuleFileLoadsAsPlanned(t *testing.T) {
	key := testKey(t)
	c := dial(t)
	dir := t.TempDir()
	want, err := PlanWatches([]string{dir}, key, nil)
	if err != nil || len(want) != 1 {
		t.Fatalf("planned %v", want)
	}
	file := filepath.Join(t.TempDir(), "70-drift-monitor.rules")
	if err := os.WriteFile(file, []byte(want[0].File()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { harness.AuditCommand(t, "-D", "-k", key) })
	harness.AuditCommand(t, "-R", file)
	got, err := c.ListRules()
	if err != nil {
		t.Fatal(err)
	}
	var ours []Rule
	for _, r := range got {
		if r.HasKey(key) {
			ours = append(ours, r)
		}
	}
	if len(ours) != 1 {
		t.Fatalf("after auditctl -R of %q: %d rules with our key: %v", want[0].File(), len(ours), ours)
	}
	if p, d, _, ok := ours[0].Watch(); !ok || p != dir || d {
		t.Errorf("auditctl -R loaded %s (watch %v, dir %v), want the watch of the node %s", ours[0], ok, d, dir)
	}
	if missing, err := (Rules{Conn: c, Key: key}).Missing(want); err != nil || len(missing) != 0 {
		t.Errorf("the loaded rule is not the planned one: missing %v, %v", missing, err)
	}
}
