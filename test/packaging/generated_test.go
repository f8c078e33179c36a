package packaging

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// TestCatalogIsGenerated: the catalog the package installs is exactly
// journal.CatalogText(), so that journalctl -x explains every record the
// daemon emits with the text the code has.
func TestCatalogIsGenerated(t *testing.T) {
	got, err := os.ReadFile(filepath.Join(harness.Repo(t, ""), "packaging/drift-monitor.catalog"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(journal.CatalogText(), string(got)); diff != "" {
		t.Errorf("packaging/drift-monitor.catalog is not journal.CatalogText(): run go run ./tools/gencatalog (-want +got):\n%s", diff)
	}
	for _, e := range journal.Catalog {
		if !strings.Contains(string(got), "\n-- "+e.ID+"\n") {
			t.Errorf("the catalog has no entry for %s (%s)", e.Name, e.ID)
		}
	}
}

// TestGeneratedFilesUpToDate runs the generator in check mode: the catalog
// and the man page's MESSAGE_ID list are what it would write.
func TestGeneratedFilesUpToDate(t *testing.T) {
	harness.RequireTools(t, "go")
	out, err := runStatus(harness.Repo(t, ""), "go", "run", "./tools/gencatalog", "-check")
	if err != nil {
		t.Errorf("go run ./tools/gencatalog -check: %v\n%s", err, out)
	}
}
