package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdoptRecordsOnlyAtTheFirstBoot: the first-boot record says what the
// nodes were as Ignition left them, which only the first boot knows; its
// mark is Ignition's config cache in /run, gone after the first reboot. An
// `adopt` run later (by hand, after an upgrade to a version that records)
// finds the config adopted and no cache: it must not take the nodes as they
// are now — a directory chmod'ed since, an append-only file that lost its
// fragment — for Ignition's result, which would make that drift the
// baseline. It says so, and writes no record.
func TestAdoptRecordsOnlyAtTheFirstBoot(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", t.TempDir()) // the digest key: not the machine's
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json")
	for p, mode := range map[string]os.FileMode{"etc/drift-monitor/desired.d": 0o700, "var/kept": 0o700} {
		if err := os.MkdirAll(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	// Adopted at the first boot, whose /run is gone; /var/kept was made
	// 0755 by Ignition and chmod'ed 0700 since.
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"directories":[{"path":"/var/kept"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, context.Background(), "adopt", "--root", root)
	record := filepath.Join(root, "etc/drift-monitor/desired.d/10-firstboot.record")
	if _, err := os.Lstat(record); err == nil {
		raw, _ := os.ReadFile(record)
		t.Errorf("adopt after the first boot wrote a first-boot record of the nodes as they are now:\n%s", raw)
	}
	if code != 0 || !strings.Contains(errs, "/run/ignition.json") || !strings.Contains(errs, "not recorded") {
		t.Errorf("adopt: exit %d, want 0 and a warning naming the missing cache and saying nothing is recorded\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestCheckKnowsItsOwnFiles: the first-boot record adopt writes beside the
// config it adopts is drift-monitor's own file: check never names it as a
// file of the desired-state directory it does not load; a damaged record
// is still refused, with its name and what is wrong, and the check goes on
// without it.
func TestCheckKnowsItsOwnFiles(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", t.TempDir()) // the digest key: not the machine's
	root := t.TempDir()
	for _, d := range []string{"run", "var/kept"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := `{"ignition":{"version":"3.4.0"},"storage":{"directories":[{"path":"/var/kept"}]}}`
	if err := os.WriteFile(filepath.Join(root, "run/ignition.json"), []byte(cache), 0o640); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, context.Background(), "adopt", "--root", root); code != 0 {
		t.Fatalf("adopt: exit %d\n%s%s", code, out, errs)
	}
	record := filepath.Join(root, "etc/drift-monitor/desired.d/10-firstboot.record")
	if _, err := os.Stat(record); err != nil {
		t.Fatalf("adopt wrote no record: %v", err)
	}
	for _, c := range []struct {
		name    string
		damage  func() error
		refused string // in stderr, "" for none
	}{
		{"as adopt wrote it", func() error { return nil }, ""},
		{"not a record", func() error { return os.WriteFile(record, []byte("not JSON\n"), 0o600) }, "not used"},
		{"others may write it", func() error { return os.Chmod(record, 0o666) }, "lets others at it: not used"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.damage(); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, context.Background(), "check", "--root", root)
			if strings.Contains(errs, "not loaded") {
				t.Errorf("check names drift-monitor's own file as not loaded:\n%s", errs)
			}
			if code != 0 {
				t.Errorf("check: exit %d, want 0 (the nodes are as adopted)\n%s%s", code, out, errs)
			}
			refusal := "first-boot record " + record + ": "
			if c.refused == "" && strings.Contains(errs, refusal) {
				t.Errorf("the record as adopt wrote it is refused:\n%s", errs)
			}
			if c.refused != "" && (!strings.Contains(errs, refusal) || !strings.Contains(errs, c.refused)) {
				t.Errorf("stderr does not refuse the damaged record, naming it (%q) and why (%q):\n%s", refusal, c.refused, errs)
			}
		})
	}
}
