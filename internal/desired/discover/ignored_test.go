package discover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestIgnoredFiles: every entry of a desired-state directory that Fragments
// does not load is listed, with why; a masked /usr/lib file, a fragment and
// a file named explicitly are not.
func TestIgnoredFiles(t *testing.T) {
	root := t.TempDir()
	write := func(p string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{
		model.VendorDir + "/10-a.ign", model.AdminDir + "/10-a.ign", // a mask: deliberate
		model.AdminDir + "/20-b.yaml", model.AdminDir + "/b.child",
		model.AdminDir + "/20-b.yaml~", model.AdminDir + "/.20-b.yaml.swp", model.AdminDir + "/c.ign.rpmnew",
		model.AdminDir + "/notes.txt", model.AdminDir + "/README", model.VendorDir + "/sub/x.ign",
	} {
		write(p)
	}
	var got []string
	for _, ig := range IgnoredFiles(dirHost(root), nil) {
		got = append(got, strings.TrimPrefix(ig.File, root)+": "+strings.SplitN(ig.Why, ";", 2)[0])
	}
	want := []string{
		model.AdminDir + "/.20-b.yaml.swp: a hidden file (an editor's or an atomic writer's temporary)",
		model.AdminDir + "/20-b.yaml~: a backup or a package manager's copy (~)",
		model.AdminDir + "/README: no extension",
		model.AdminDir + "/c.ign.rpmnew: a backup or a package manager's copy (.rpmnew)",
		model.AdminDir + `/notes.txt: extension ".txt"`,
		model.VendorDir + "/sub: a directory: desired-state directories are not read recursively",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("IgnoredFiles (-want +got):\n%s", diff)
	}

	// Explicit paths: a directory's entries are listed, a file named is
	// loaded whatever its name.
	dir := filepath.Join(root, model.AdminDir)
	ig := IgnoredFiles(dirHost(root), []string{filepath.Join(dir, "notes.txt"), filepath.Join(root, model.VendorDir)})
	if len(ig) != 1 || ig[0].File != filepath.Join(root, model.VendorDir, "sub") {
		t.Errorf("explicit: %v; want only the subdirectory of the directory given", ig)
	}
	if err := NoConfigError(dirHost(root), nil); !strings.Contains(err.Error(), "no config file in "+root+model.VendorDir+" or "+root+model.AdminDir) {
		t.Errorf("NoConfigError = %v", err)
	}
}

// TestOwnFilesNotIgnored: drift-monitor's own files in the admin's
// directory (the first-boot record adopt writes) are not named as files
// left alone, whether the directory is a default location or named as
// check --config names it; a file of the same kind of name that is not
// drift-monitor's, or in another place, still is.
func TestOwnFilesNotIgnored(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		model.AdminDir + "/10-firstboot.ignition-cache.json", model.FirstBootRecord,
		model.AdminDir + "/20-other.record", model.VendorDir + "/10-firstboot.record",
	} {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	names := func(igs []Ignored) []string {
		var out []string
		for _, ig := range igs {
			out = append(out, strings.TrimPrefix(ig.File, root))
		}
		return out
	}
	want := []string{model.AdminDir + "/20-other.record", model.VendorDir + "/10-firstboot.record"}
	if diff := cmp.Diff(want, names(IgnoredFiles(dirHost(root), nil))); diff != "" {
		t.Errorf("default locations (-want +got):\n%s", diff)
	}
	admin := filepath.Join(root, model.AdminDir)
	if diff := cmp.Diff(want[:1], names(IgnoredFiles(dirHost(root), []string{admin + "/"}))); diff != "" {
		t.Errorf("--config %s (-want +got):\n%s", admin, diff)
	}
	// Elsewhere the name is only a name: not the record any command reads.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "10-firstboot.record"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := IgnoredFiles(dirHost(root), []string{other}); len(got) != 1 {
		t.Errorf("--config %s: %v, want its 10-firstboot.record named", other, got)
	}
}
