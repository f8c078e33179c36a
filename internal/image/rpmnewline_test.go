package image

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRPMQueryLinkTargetNewline: a package outside /etc whose symlink's
// target holds a new line (rpmbuild accepts it: build/files.c's
// validFilename checks file names, not link targets) must not make the
// whole rpm baseline unreadable. The per-file format before b5edcea
// skipped the target's second line (not under /etc); the format with a
// package line takes it for one and fails the query.
func TestRPMQueryLinkTargetNewline(t *testing.T) {
	if _, err := exec.LookPath("rpmbuild"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	top := t.TempDir()
	spec := filepath.Join(top, "nl.spec")
	if err := os.WriteFile(spec, []byte(`Name: nllink
Version: 1
Release: 1
Summary: a symlink whose target holds a new line
License: MIT
BuildArch: noarch
%description
x
%install
mkdir -p %{buildroot}/opt %{buildroot}/etc
ln -s "$(printf 'a\nb')" %{buildroot}/opt/l
echo hi > %{buildroot}/etc/nl.conf
%files
/opt/l
%config /etc/nl.conf
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("rpmbuild", "--define", "_topdir "+top, "-bb", spec).CombinedOutput(); err != nil {
		t.Fatalf("rpmbuild: %v\n%s", err, out)
	}
	root, db := filepath.Join(top, "root"), "/db"
	pkg := filepath.Join(top, "RPMS", "noarch", "nllink-1-1.noarch.rpm")
	if out, err := exec.Command("rpm", "--root", root, "--dbpath", db, "-i", "--justdb", "--nodeps", "--noscripts", pkg).CombinedOutput(); err != nil {
		t.Fatalf("rpm -i: %v\n%s", err, out)
	}
	out, err := exec.Command("rpm", "--root", root, "--dbpath", db, "-qa", "--qf", rpmQueryFormat).Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseRPMQuery(bytes.NewReader(out), nil)
	if err != nil {
		t.Fatalf("parseRPMQuery of %q: %v", out, err)
	}
	if fs := b.Files["/etc/nl.conf"]; len(fs) != 1 || fs[0].pkg != "nllink" {
		t.Fatalf("/etc/nl.conf: %+v", b.Files)
	}
}
