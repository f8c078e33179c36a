package enablement

import (
	"fmt"
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
// Also=, a specifier, a vendor unit, a template with DefaultInstance=, one
// without (template targets only), and an instance's template alias.
func TestEnableDisableLinksAsSystemctl(t *testing.T) {
	requireSystemctl(t)
	units := map[string]string{
		etc + "/a.service":     "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\nRequiredBy=x.target\nAlias=a-alias.service\nAlso=b.service\n",
		usr + "/b.service":     "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=%N.target\n",
		usr + "/t@.service":    "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\nDefaultInstance=one\n",
		etc + "/keep.service":  "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
		etc + "/plain.service": "[Service]\nExecStart=/bin/true\n",
		// No DefaultInstance=: linked into template targets only.
		usr + "/tt@.service": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target x@.target x@one.target\n",
		// An instance gives a template alias its instance; a self-alias makes no link.
		usr + "/ia@.service": "[Service]\nExecStart=/bin/true\n[Install]\nAlias=other@.service ia@.service\nWantedBy=multi-user.target\n",
	}
	for _, unit := range []string{"a.service", "b.service", "t@.service", "t@two.service", "tt@.service", "ia@two.service", "ia@.service"} {
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
			tree, err := openTree(t, byHand)
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

			tree, err = openTree(t, byHand)
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

// TestCannotEnableAsIgnitionsPreset: Enabling says why exactly for the
// units that the first boot's `systemctl preset-all` leaves disabled when
// Ignition declared them enabled (its preset line, as
// createSystemdPresetFile of Ignition v2.27.0 writes it, over a vendor
// "disable *").
func TestCannotEnableAsIgnitionsPreset(t *testing.T) {
	requireSystemctl(t)
	const (
		svc      = "[Service]\nExecStart=/bin/true\n[Install]\n"
		presetTo = "/etc/systemd/system-preset/20-ignition.preset"
	)
	cases := []struct {
		unit, preset string
		files        map[string]string
		cannot       bool
	}{
		{unit: "w@.service", preset: "enable w@.service ", cannot: true,
			files: map[string]string{usr + "w@.service": svc + "WantedBy=multi-user.target\n"}},
		{unit: "w@.service", preset: "enable w@.service ", cannot: true,
			files: map[string]string{usr + "w@.service": svc + "RequiredBy=multi-user.target\nAlso=b.service\n", usr + "b.service": svc + "WantedBy=multi-user.target\n"}},
		// A template target gets the template's link (install_info_symlink_wants).
		{unit: "tt@.service", preset: "enable tt@.service ",
			files: map[string]string{usr + "tt@.service": svc + "WantedBy=%N.target\n"}},
		{unit: "d@.service", preset: "enable d@.service ",
			files: map[string]string{usr + "d@.service": svc + "WantedBy=multi-user.target\nDefaultInstance=one\n"}},
		{unit: "al@.service", preset: "enable al@.service ",
			files: map[string]string{usr + "al@.service": svc + "Alias=other@.service\n"}},
		{unit: "w@bar.service", preset: "enable w@.service bar",
			files: map[string]string{usr + "w@.service": svc + "WantedBy=multi-user.target\n"}},
		{unit: "al@bar.service", preset: "enable al@.service bar", cannot: true,
			files: map[string]string{usr + "al@.service": svc + "Alias=other@.service\n"}},
		{unit: "al@bar.service", preset: "enable al@.service bar", cannot: true,
			files: map[string]string{usr + "al@.service": svc + "Alias=other@.service\nDefaultInstance=bar\n"}},
		{unit: "wa@bar.service", preset: "enable wa@.service bar",
			files: map[string]string{usr + "wa@.service": svc + "Alias=other@.service\nWantedBy=multi-user.target\n"}},
		{unit: "own@bar.service", preset: "enable own@.service bar",
			files: map[string]string{usr + "own@bar.service": svc + "Alias=other@bar.service\n"}},
		{unit: "plain.service", preset: "enable plain.service",
			files: map[string]string{usr + "plain.service": svc + "WantedBy=multi-user.target\n"}},
	}
	for k, tc := range cases {
		t.Run(fmt.Sprintf("%d:%s", k, tc.unit), func(t *testing.T) {
			files := map[string]string{presetTo: tc.preset + "\n", "/usr/lib/systemd/system-preset/99-default.preset": "disable *\n"}
			for p, c := range tc.files {
				files[p] = c
			}
			root := buildRoot(t, fixture{files: files, systemctl: [][]string{{"preset-all"}}})
			after := systemctlIsEnabled(t, root, tc.unit)
			tree, err := openTree(t, root)
			if err != nil {
				t.Fatal(err)
			}
			en, err := tree.Enabling(tc.unit)
			if err != nil {
				t.Fatal(err)
			}
			if (en.Why != "") != tc.cannot || (after == StateDisabled) != tc.cannot {
				t.Errorf("after the preset %q: is-enabled %s = %q; Enabling = %+v, want Why empty: %v", tc.preset, tc.unit, after, en, !tc.cannot)
			}
		})
	}
}
