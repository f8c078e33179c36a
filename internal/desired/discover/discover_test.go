package discover

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/desiredtest"
)

var writeFile = desiredtest.WriteFile

type dirHost = desiredtest.DirHost

func TestFragments(t *testing.T) {
	root := t.TempDir()
	usr := filepath.Join(root, "usr/lib/drift-monitor/desired.d")
	etc := filepath.Join(root, "etc/drift-monitor/desired.d")
	for _, n := range []string{"10-base.ign", "30-mc.yaml", "50-shared.ign", "99-late.yml", "README", ".hidden.ign", "40-notes.txt"} {
		writeFile(t, filepath.Join(usr, n), "{}")
	}
	if err := os.Mkdir(filepath.Join(usr, "60-dir.ign"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"50-shared.ign", "20-etc.json", "70-x.ign~", ".#lock.ign", ".50-shared.ign.swp"} {
		writeFile(t, filepath.Join(etc, n), "{}")
	}

	t.Run("defaults", func(t *testing.T) {
		got, err := Fragments(dirHost(root), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			filepath.Join(usr, "10-base.ign"),
			filepath.Join(etc, "20-etc.json"),
			filepath.Join(usr, "30-mc.yaml"),
			filepath.Join(etc, "50-shared.ign"), // /etc masks /usr/lib
			filepath.Join(usr, "99-late.yml"),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Fragments (-want +got):\n%s", diff)
		}
	})
	t.Run("no default directories", func(t *testing.T) {
		got, err := Fragments(dirHost(t.TempDir()), nil)
		if err != nil || len(got) != 0 {
			t.Errorf("Fragments(empty root) = %q, %v; want nothing and no error", got, err)
		}
	})
	t.Run("only /etc", func(t *testing.T) {
		r := t.TempDir()
		writeFile(t, filepath.Join(r, "etc/drift-monitor/desired.d/a.ign"), "{}")
		got, err := Fragments(dirHost(r), nil)
		if diff := cmp.Diff([]string{filepath.Join(r, "etc/drift-monitor/desired.d/a.ign")}, got); err != nil || diff != "" {
			t.Errorf("Fragments: %v (-want +got):\n%s", err, diff)
		}
	})
	t.Run("default location is a file", func(t *testing.T) {
		r := t.TempDir()
		writeFile(t, filepath.Join(r, "etc/drift-monitor/desired.d"), "not a dir")
		_, err := Fragments(dirHost(r), nil)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(r, "etc/drift-monitor/desired.d")) {
			t.Errorf("Fragments = %v, want an error naming the directory", err)
		}
	})
	t.Run("explicit file and directory replace the defaults", func(t *testing.T) {
		other := t.TempDir()
		one := filepath.Join(other, "z-one.ign")
		writeFile(t, one, "{}")
		d := filepath.Join(other, "d")
		for _, n := range []string{"b.yaml", "a.json", ".c.ign", "notes"} {
			writeFile(t, filepath.Join(d, n), "{}")
		}
		got, err := Fragments(dirHost(root), []string{one, d})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{one, filepath.Join(d, "a.json"), filepath.Join(d, "b.yaml")}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Fragments (-want +got):\n%s", diff)
		}
		// An explicit file is read whatever its name.
		odd := filepath.Join(other, "config.txt")
		writeFile(t, odd, "{}")
		got, err = Fragments(dirHost(root), []string{odd})
		if diff := cmp.Diff([]string{odd}, got); err != nil || diff != "" {
			t.Errorf("Fragments(odd name): %v (-want +got):\n%s", err, diff)
		}
	})
	t.Run("missing explicit path", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.ign")
		_, err := Fragments(dirHost(root), []string{missing})
		var le *configerr.LoadError
		if !errors.As(err, &le) || le.File != missing || !errors.Is(err, fs.ErrNotExist) ||
			!strings.HasPrefix(err.Error(), missing+": ") {
			t.Errorf("Fragments(missing) = %v, want a LoadError naming %s", err, missing)
		}
	})
}
