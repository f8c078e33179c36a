package desired_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/google/go-cmp/cmp"
)

// A root whose /etc, /etc/passwd or desired.d is an absolute symlink is read
// inside the root, as the host in it sees it: a lexical join of the root and
// the host path followed the link out to the running host's files (#12).
func TestLoadStateReadsInsideTheRoot(t *testing.T) {
	// hostSide stands for the running host: what each absolute link would
	// reach by a lexical join (its targets are written as the host's paths).
	hostSide := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(path string) string {
		return `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"` + path +
			`","user":{"name":"alice"}}]}}`
	}
	// Each link's target is an absolute path that exists both on the
	// running host (under hostSide, with the host's files) and inside the
	// root (with the root's): where the files are read from tells which
	// resolution was used. Only the root's give /root-file and uid 1000.
	hostPasswd := "alice:x:9999:9999::/home/alice:/bin/sh\n"
	rootPasswd := "alice:x:1000:1000::/home/alice:/bin/sh\n"
	for _, tc := range []struct {
		name  string
		build func(root string)
	}{
		{"/etc is an absolute link", func(root string) {
			target := filepath.Join(hostSide, "etc")
			write(filepath.Join(target, "passwd"), hostPasswd)
			write(filepath.Join(target, "drift-monitor/desired.d/10.ign"), cfg("/host-file"))
			write(filepath.Join(root, target, "passwd"), rootPasswd)
			write(filepath.Join(root, target, "drift-monitor/desired.d/10.ign"), cfg("/root-file"))
			link(target, filepath.Join(root, "etc"))
		}},
		{"/etc/passwd and desired.d are absolute links", func(root string) {
			passwd, dropins := filepath.Join(hostSide, "passwd"), filepath.Join(hostSide, "desired.d")
			write(passwd, hostPasswd)
			write(filepath.Join(dropins, "10.ign"), cfg("/host-file"))
			write(filepath.Join(root, passwd), rootPasswd)
			write(filepath.Join(root, dropins, "10.ign"), cfg("/root-file"))
			link(passwd, filepath.Join(root, "etc/passwd"))
			link(dropins, filepath.Join(root, "etc/drift-monitor/desired.d"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.build(dir)
			r := openRoot(t, dir)
			for _, c := range []*desired.StateCache{nil, {Dir: t.TempDir()}} {
				st, err := c.LoadState(r, nil)
				if err != nil {
					t.Fatal(err)
				}
				type got struct {
					Path string
					UID  int
				}
				var g []got
				for _, e := range st.Entries {
					uid := -1
					if e.UID != nil {
						uid = *e.UID
					}
					g = append(g, got{e.Path, uid})
				}
				if diff := cmp.Diff([]got{{"/root-file", 1000}}, g); diff != "" {
					t.Errorf("entries (-want +got):\n%s", diff)
				}
			}
		})
	}
}
