package adopt

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestRecord: the record of an adopted config is written once, 0600 in a
// 0700 directory, and says what the config leaves to the node (here the
// mode of a directory declared without one); a second run keeps it, even
// when the node changed since; a node missing at the first boot is named
// as a problem and left out; a config's name is refused, since the daemon
// would load the record as a config.
func TestRecord(t *testing.T) {
	root := t.TempDir()
	const cfg = "/etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json"
	for _, d := range []string{"etc/drift-monitor/desired.d", "foo/bar"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "foo/bar"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := `{"ignition": {"version": "3.3.0"}, "storage": {"directories": [{"path": "/foo/bar"}, {"path": "/foo/missing"}]}}`
	if err := os.WriteFile(filepath.Join(root, cfg), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	key := []byte("0123456789abcdef0123456789abcdef")

	if _, _, err := Record(r, cfg, "/etc/drift-monitor/desired.d/record.json", key, nil); err == nil || !strings.Contains(err.Error(), "config") {
		t.Errorf("Record to a config's name: %v, want it refused", err)
	}
	res, problems, err := Record(r, cfg, firstboot.DefaultPath, key, nil)
	if err != nil || res != Adopted {
		t.Fatalf("Record: %v, %v", res, err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "/foo/missing") || !strings.Contains(problems[0], "does not exist") {
		t.Errorf("problems %q, want /foo/missing named", problems)
	}
	p := filepath.Join(root, firstboot.DefaultPath)
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil || st.Mode&0o7777 != 0o600 {
		t.Errorf("the record: mode %04o, %v; want 0600", st.Mode&0o7777, err)
	}
	first, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := firstboot.Parse(first)
	if err != nil || len(rec.Nodes) != 1 || rec.Nodes[0].Path != "/foo/bar" || rec.Nodes[0].Mode != "0755" || rec.Config != cfg {
		t.Errorf("the record: %+v, %v; want /foo/bar 0755 of %s", rec, err, cfg)
	}

	if err := os.Chmod(filepath.Join(root, "foo/bar"), 0o700); err != nil {
		t.Fatal(err)
	}
	if res, _, err := Record(r, cfg, firstboot.DefaultPath, key, nil); err != nil || res != Kept {
		t.Errorf("Record again: %v, %v; want Kept", res, err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(first) {
		t.Errorf("Record again rewrote the record:\n%s", again)
	}
}
