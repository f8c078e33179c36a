package firstboot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// realConfig is the largest of the real configs (internal/desired's
// testdata/real-configs, see its SOURCES.md): the node-tuning operator's
// rendered MachineConfig, whose files leave their owners to the node.
const realConfig = "../desired/testdata/real-configs/nto-50-performance-manual.yaml"

// realRecord is the record Make writes on a host provisioned by Ignition
// with the real config's Ignition config (its spec.config): the nodes it
// leaves to the node made as Ignition makes them (it declares every mode,
// and writes its files whole: none), and its units' enablement.
func realRecord(t *testing.T) (Record, []byte) {
	t.Helper()
	mc, err := os.ReadFile(realConfig)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			Config json.RawMessage `json:"config"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(mc, &doc); err != nil || len(doc.Spec.Config) == 0 {
		t.Fatalf("%s: no spec.config: %v", realConfig, err)
	}
	root := t.TempDir()
	r, st := load(t, root, writeConfig(t, string(doc.Spec.Config)))
	n := 0
	for _, e := range st.Entries {
		p := filepath.Join(root, e.Path)
		switch {
		case Recorded(&e) && e.Kind == model.KindDirectory:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case Recorded(&e):
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("as Ignition wrote it\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			continue
		}
		n++
	}
	rec, problems := Make(r, st.Entries, "/etc/drift-monitor/desired.d/50-performance.yaml", testKey)
	if len(problems) != 0 || len(rec.Nodes) != n || len(rec.Units) == 0 {
		t.Fatalf("the record of %s: %d nodes of %d, %d units, problems %q", realConfig, len(rec.Nodes), n, len(rec.Units), problems)
	}
	raw, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return rec, raw
}

// TestRecordScales: reading a record is linear in its size, held at ten
// times the record of the largest real config (its nodes and units ten
// times over, under other names), and keeps every node and unit.
func TestRecordScales(t *testing.T) {
	base, raw := realRecord(t)
	ten := base
	ten.Nodes, ten.Units = nil, nil
	for k := range 10 {
		for _, n := range base.Nodes {
			n.Path = fmt.Sprintf("%s.%d", n.Path, k)
			ten.Nodes = append(ten.Nodes, n)
		}
		for _, u := range base.Units {
			u.Unit = fmt.Sprintf("copy%d-%s", k, u.Unit)
			ten.Units = append(ten.Units, u)
		}
	}
	rawTen, err := ten.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[int][]byte{1: raw, 10: rawTen}
	harness.Linear(t, "reading the first-boot record", func(scale int) {
		r, err := Parse(inputs[scale])
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Nodes) != scale*len(base.Nodes) || len(r.Units) != scale*len(base.Units) {
			t.Fatalf("%d nodes of %d, %d units of %d", len(r.Nodes), scale*len(base.Nodes), len(r.Units), scale*len(base.Units))
		}
	})
}

// TestRecordTooLarge: a record larger than any a host's config makes is
// not read whole, and is not used, with an error that says so.
func TestRecordTooLarge(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "record")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxRecord + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, _ := load(t, root, writeConfig(t, `{"ignition": {"version": "3.3.0"}}`))
	rec, err := (Use{Path: "/record"}).Load(r)
	if rec != nil || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes: not used", maxRecord)) || !strings.Contains(err.Error(), "record") {
		t.Errorf("Load of a record of %d bytes: %+v, %v", maxRecord+1, rec, err)
	}
}

func writeConfig(t *testing.T, cfg string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.ign")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzParseRecord: whatever bytes the record file holds, Parse never
// panics, and a record it accepts is written back (Marshal) as one it reads
// the same.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"version": 1, "config": "/x.ign", "ostree": false, "nodes": [{"path": "/etc/a", "type": "file", "mode": "0644", "uid": 0, "gid": 0}], "units": [{"unit": "a.service", "state": "enabled"}]}`))
	f.Add([]byte(`{"version": 1, "nodes": [{"path": "/etc/a", "type": "file", "mode": "0644", "base": {"size": 2, "digest": "hmac-sha256:` + strings.Repeat("00", 32) + `", "bytes": "eA=="}}]}`))
	f.Add([]byte(`{"version": 1, "nodes": [{"path": "/etc/a", "type": "directory", "mode": "4755", "base": {"unknown": "why"}}], "units": null}`))
	f.Add([]byte(`{"version": 2}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := Parse(raw)
		if err != nil {
			return
		}
		again, err := r.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed record: %v", err)
		}
		back, err := Parse(again)
		if err != nil {
			t.Fatalf("Parse of a record written back: %v\n%s", err, again)
		}
		if diff := cmp.Diff(r, back, cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })); diff != "" {
			t.Fatalf("round trip (-parsed +read back):\n%s", diff)
		}
	})
}
