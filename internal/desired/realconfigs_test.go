package desired

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
)

// realConfigsCopy holds the real MachineConfigs of ../shared/real-configs
// (see its SOURCES.md), copied so that this test stands alone.
const realConfigsCopy = "testdata/real-configs"

// sharedRealConfigs is ../shared/real-configs from the repository root: the
// collection the copy came from, where more may be added.
const sharedRealConfigs = "../../../shared/real-configs"

// TestRealConfigs: every real config loads — check exits 0 or 1 on them,
// never 2 — and the copy is the shared collection's.
func TestRealConfigs(t *testing.T) {
	files := configFiles(t, realConfigsCopy)
	if len(files) < 5 {
		t.Fatalf("%s holds %d configs, want the 5 of SOURCES.md", realConfigsCopy, len(files))
	}
	shared, err := os.ReadDir(sharedRealConfigs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Logf("%s is absent: loading the copy in %s only", sharedRealConfigs, realConfigsCopy)
	case err != nil:
		t.Fatal(err)
	default:
		for _, e := range shared {
			p := filepath.Join(sharedRealConfigs, e.Name())
			if !discover.IsFragmentName(e.Name()) {
				continue
			}
			mine, err := os.ReadFile(filepath.Join(realConfigsCopy, e.Name()))
			theirs, err2 := os.ReadFile(p)
			if err2 != nil {
				t.Fatal(err2)
			}
			if err != nil || !bytes.Equal(mine, theirs) {
				// Load it anyway: it must load too.
				t.Errorf("%s differs from (or is missing in) %s: copy it there with SOURCES.md's row", p, realConfigsCopy)
				files = append(files, p)
			}
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			st, err := LoadState(dirHost(t.TempDir()), []string{f})
			if err != nil {
				t.Fatalf("does not load: %v", err)
			}
			if len(st.Entries) == 0 {
				t.Errorf("no entries: a real config declares something")
			}
		})
	}
}

func configFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		if discover.IsFragmentName(e.Name()) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files
}
