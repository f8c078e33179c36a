package dbusapi

import (
	"context"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/testbus"
	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// writersDaemon is a fakeDaemon that knows its drift's writers.
type writersDaemon struct {
	*fakeDaemon
	ex []DriftEx
}

func (w *writersDaemon) DriftPageEx(_ context.Context, offset, limit int) (uint64, int, []DriftEx, error) {
	offset = min(offset, len(w.ex))
	return 3, len(w.ex), w.ex[offset:min(offset+limit, len(w.ex))], nil
}

func u32(n uint32) *uint32 { return &n }

var writersFixture = []DriftEx{
	{Kind: "content", Entry: "file", Path: "/etc/a", Message: "content mismatch changed by alice (auid 1000, session 3) running sed (pid 4242) with rename",
		Writers: []Writer{
			{LoginUser: "alice", AUID: u32(1000), Session: u32(3), UID: 1000, PID: 4242, Comm: "sed", Exe: "/usr/bin/sed", Syscall: "rename", Unit: "session-3.scope"},
			{UID: 0, PID: 9, Comm: "rpm", Exe: "/usr/bin/rpm", Syscall: "openat", Own: true},
		}},
	{Kind: "mode", Entry: "file", Path: "/etc/b", Message: "mode mismatch (writer unknown: not covered by audit)", WriterUnknown: "not covered by audit"},
	{Kind: "missing", Entry: "file", Path: "/etc/c", Message: "file does not exist"},
}

// servedWriters serves writersFixture on a new bus, its (sssss) in the
// properties.
func servedWriters(t *testing.T) (*testbus.Bus, *writersDaemon, []Drift) {
	t.Helper()
	bus := testbus.New(t)
	d := &writersDaemon{fakeDaemon: &fakeDaemon{}, ex: writersFixture}
	var plain []Drift
	for _, x := range writersFixture {
		plain = append(plain, x.Drift())
	}
	serve(t, bus, d).Update(d.set(plain, 3))
	return bus, d, plain
}

// TestGetDriftEx: the writers go on the bus as fields, typed, leaving out
// what is not known, and come back as they were; GetDrift's (sssss) is
// unchanged beside it.
func TestGetDriftEx(t *testing.T) {
	bus, d, plain := servedWriters(t)
	obj := bus.Conn().Object(BusName, Path)

	var gen uint64
	var total uint32
	var page []struct {
		Kind, Entry, Path, Unit, Message string
		Details                          map[string]dbus.Variant
	}
	// Stored as (sssssa{sv}): the reply has that signature
	// (TestIntrospection holds the declared one to it).
	if err := obj.Call(Interface+".GetDriftEx", 0, uint32(0), uint32(0)).Store(&gen, &total, &page); err != nil {
		t.Fatalf("GetDriftEx: %v", err)
	}
	if gen != 3 || total != 3 || len(page) != 3 {
		t.Fatalf("GetDriftEx: generation %d, total %d, %d items", gen, total, len(page))
	}
	ws := page[0].Details["writers"].Value().([]map[string]dbus.Variant)
	for k, want := range map[string]any{"login_user": "alice", "auid": uint32(1000), "session": uint32(3), "uid": uint32(1000),
		"pid": uint32(4242), "comm": "sed", "exe": "/usr/bin/sed", "syscall": "rename", "unit": "session-3.scope"} {
		if v, ok := ws[0][k]; !ok || v.Value() != want {
			t.Errorf("writers[0][%s] = %v, want %v (%T)", k, v, want, want)
		}
	}
	for _, k := range []string{"auid", "session", "login_user", "remote_host"} {
		if _, ok := ws[1][k]; ok {
			t.Errorf("writers[1] has %s, which is not known: %v", k, ws[1])
		}
	}
	if v := page[1].Details["writer_unknown"]; v.Value() != "not covered by audit" {
		t.Errorf("writer_unknown = %v", v)
	}
	if len(page[2].Details) != 0 {
		t.Errorf("a drift without attribution has details %v, want none", page[2].Details)
	}

	var got []DriftEx
	for _, w := range page {
		got = append(got, driftExWire(w).driftEx())
	}
	if diff := cmp.Diff(writersFixture, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	_, _, old, _ := d.DriftPage(context.Background(), 0, 10)
	if diff := cmp.Diff(plain, old); diff != "" {
		t.Errorf("GetDrift (-want +got):\n%s", diff)
	}
}

// TestReadStatusWithWriters: ReadStatus with All gives every drift with
// its writers; a daemon that knows none gives them without, and no
// warning.
func TestReadStatusWithWriters(t *testing.T) {
	bus, _, plain := servedWriters(t)
	st, err := ReadStatus(context.Background(), ReadOptions{Address: bus.Addr(), All: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(writersFixture, st.Drift); diff != "" || st.Warning != "" || st.Truncated {
		t.Errorf("ReadStatus (-want +got):\n%s\nwarning %q, truncated %v", diff, st.Warning, st.Truncated)
	}

	other := testbus.New(t)
	f := &fakeDaemon{}
	serve(t, other, f).Update(f.set(plain, 1))
	st, err = ReadStatus(context.Background(), ReadOptions{Address: other.Addr(), All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Drift) != 3 || st.Drift[0].Writers != nil || st.Warning != "" {
		t.Errorf("from a daemon without writers: %+v, warning %q", st.Drift, st.Warning)
	}
}

// TestDriftExBounded: a page of GetDriftEx stays within MaxBytes, however
// long the writers' strings.
func TestDriftExBounded(t *testing.T) {
	long := strings.Repeat("x", MaxField+10)
	var ds []DriftEx
	for range 200 {
		ds = append(ds, DriftEx{Kind: "content", Path: "/etc/a", Writers: []Writer{{Exe: long, Comm: long}}})
	}
	page := boundEx(ds)
	size := 0
	for _, w := range page {
		size += w.size()
		for _, x := range w.Details["writers"].Value().([]map[string]dbus.Variant) {
			if n := len(x["exe"].Value().(string)); n > MaxField {
				t.Fatalf("an exe of %d bytes on the bus", n)
			}
		}
	}
	if len(page) == 0 || len(page) == len(ds) || size > MaxBytes+page[len(page)-1].size() {
		t.Errorf("%d of %d drifts in a page of %d bytes (MaxBytes %d)", len(page), len(ds), size, MaxBytes)
	}
}
