package enablement

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// links lists the symbolic links under root's /etc/systemd/system as
// "PATH -> TARGET", and its directories, sorted.
func links(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	base := filepath.Join(root, persistentConfig)
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root)
		switch {
		case d.Type() == fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, rel+"/")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestEnableDisableLinksAsSystemctl: the links EnableLinks computes are the
// ones `systemctl --root enable` creates, and DisableLinks the ones
// `systemctl --root disable` removes, for WantedBy=, RequiredBy=, Alias=,
// Also=, a specifier, a vendor unit and a template with DefaultInstance=.
func TestEnableDisableLinksAsSystemctl(t *testing.T) {
	requireSystemctl(t)
	units := map[string]string{
		etc + "/a.service":     "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\nRequiredBy=x.target\nAlias=a-alias.service\nAlso=b.service\n",
		usr + "/b.service":     "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=%N.target\n",
		usr + "/t@.service":    "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\nDefaultInstance=one\n",
		etc + "/keep.service":  "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
		etc + "/plain.service": "[Service]\nExecStart=/bin/true\n",
	}
	for _, unit := range []string{"a.service", "b.service", "t@.service", "t@two.service"} {
		t.Run(unit, func(t *testing.T) {
			byHand, bySystemctl := t.TempDir(), t.TempDir()
			for _, root := range []string{byHand, bySystemctl} {
				for _, d := range []string{etc, usr} {
					mustMkdir(t, filepath.Join(root, d))
				}
				for p, c := range units {
					if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				runSystemctl(t, root, "enable", "keep.service") // links that must stay
			}
			tree, err := Open(byHand)
			if err != nil {
				t.Fatal(err)
			}
			ls, err := tree.EnableLinks(unit)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				p := filepath.Join(byHand, l.Path)
				mustMkdir(t, filepath.Dir(p))
				if err := os.Symlink(l.Target, p); err != nil && !os.IsExist(err) {
					t.Fatal(err)
				}
			}
			runSystemctl(t, bySystemctl, "enable", unit)
			if diff := cmp.Diff(links(t, bySystemctl), links(t, byHand)); diff != "" {
				t.Errorf("links after enable (-systemctl +EnableLinks):\n%s", diff)
			}

			tree, err = Open(byHand)
			if err != nil {
				t.Fatal(err)
			}
			rm, err := tree.DisableLinks(unit)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rm {
				if err := os.Remove(filepath.Join(byHand, p)); err != nil {
					t.Fatal(err)
				}
				// systemctl removes the directories it empties.
				for d := filepath.Dir(p); IsConfigSubdir(d); d = filepath.Dir(d) {
					if os.Remove(filepath.Join(byHand, d)) != nil {
						break
					}
				}
			}
			runSystemctl(t, bySystemctl, "disable", unit)
			if diff := cmp.Diff(links(t, bySystemctl), links(t, byHand)); diff != "" {
				t.Errorf("links after disable (-systemctl +DisableLinks):\n%s", diff)
			}
		})
	}
}
