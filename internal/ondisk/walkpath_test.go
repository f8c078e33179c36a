package ondisk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWalk: every node that decides where a path leads is visited, in
// order, as the resolution meets it: the root, each directory entered
// (a link's target's too, an absolute target from the root again), each
// link followed, the directory holding the last component (again after a
// link there) and the end; never a node outside the root.
func TestWalk(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc", "var/lib/dm/desired.d", "srv/real"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"etc/drift-monitor":            "../var/lib/dm",           // relative, a directory on the way
		"var/lib/dm/desired.d/a.ign":   "/srv/real/a.ign",         // absolute, the last component
		"var/lib/dm/desired.d/out.ign": "../../../../../../x.ign", // climbs no higher than the root
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"srv/real/a.ign", "x.ign"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	walk := func(p string) ([]string, error) {
		var got []string
		err := r.Walk(p, func(s Step) error {
			got = append(got, strconv.Itoa(int(s.Kind))+" "+s.Path)
			return nil
		})
		return got, err
	}
	const dir, link, holder, end = "0 ", "1 ", "2 ", "3 "
	got, err := walk("/etc/drift-monitor/desired.d/a.ign")
	want := []string{
		dir + "/", dir + "/etc", link + "/etc/drift-monitor", dir + "/var", dir + "/var/lib", dir + "/var/lib/dm",
		dir + "/var/lib/dm/desired.d", holder + "/var/lib/dm/desired.d", link + "/var/lib/dm/desired.d/a.ign",
		dir + "/srv", dir + "/srv/real", holder + "/srv/real", end + "/srv/real/a.ign",
	}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("walk: %v; steps (-want +got):\n%s", err, diff)
	}
	got, err = walk("/etc/drift-monitor/desired.d/out.ign")
	if err != nil || len(got) == 0 || got[len(got)-1] != end+"/x.ign" || got[len(got)-2] != holder+"/" {
		t.Errorf("a link climbing out: %v, %q; want it to end at /x.ign, held by the root", err, got)
	}
	got, err = walk("/etc")
	if diff := cmp.Diff([]string{dir + "/", holder + "/", end + "/etc"}, got); err != nil || diff != "" {
		t.Errorf("walk of a directory: %v; steps (-want +got):\n%s", err, diff)
	}
	if _, err := walk("/etc/missing/file"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory on the way: %v, want ENOENT", err)
	}
	stop := errors.New("stop")
	n := 0
	if err := r.Walk("/etc/drift-monitor/desired.d/a.ign", func(Step) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("visit's error: %v after %d steps, want it at once", err, n)
	}
}
