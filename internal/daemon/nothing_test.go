package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// dirDaemon is a daemon whose desired state is the directory dir under a
// fresh root (--config DIR), its state loaded, not running.
func dirDaemon(t *testing.T) (d *Daemon, dir string, log *records) {
	t.Helper()
	dir = t.TempDir()
	d, _, log = loadedDaemon(t, Options{Root: t.TempDir(), Configs: []string{dir}})
	d.ready = true
	return d, dir, log
}

func messages(log *records, id string) []string {
	log.mu.Lock()
	defer log.mu.Unlock()
	var out []string
	for _, m := range log.got {
		if is(m, id) {
			out = append(out, m["MESSAGE"])
		}
	}
	return out
}

// TestNothingToWatch: no config file at all is its own state, not clean:
// the bus, the metrics and the status line say so, and a config that
// appears ends it.
func TestNothingToWatch(t *testing.T) {
	d, dir, log := dirDaemon(t)
	if got := d.snapshotState(); got != dbusapi.StateUnconfigured {
		t.Errorf("state with no config file = %q, want %q", got, dbusapi.StateUnconfigured)
	}
	if got := d.metricsSnapshot().State; got != dbusapi.StateUnconfigured {
		t.Errorf("metrics state = %q, want %q", got, dbusapi.StateUnconfigured)
	}
	want := "Nothing to watch: no config file in " + dir
	if got := d.status(); got != want {
		t.Errorf("status line %q, want %q", got, want)
	}
	if got := messages(log, journal.MsgNothingToWatch); len(got) != 1 || !strings.Contains(got[0], dir) {
		t.Errorf("MsgNothingToWatch records %q; want one naming %s", got, dir)
	}
	// Said once, not at every reload.
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := messages(log, journal.MsgNothingToWatch); len(got) != 1 {
		t.Errorf("after a second load: MsgNothingToWatch records %q; want still one", got)
	}

	writeFile(t, filepath.Join(dir, "a.ign"), []byte(`{"ignition":{"version":"3.6.0"}}`))
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := d.snapshotState(); got != dbusapi.StateClean {
		t.Errorf("state with a config file = %q, want %q", got, dbusapi.StateClean)
	}
	if got := d.status(); !strings.HasPrefix(got, "No drift: watching") {
		t.Errorf("status line with a config file: %q", got)
	}
}

// TestIgnoredFilesNoticed: each file of a desired-state directory that is
// not loaded is journaled once, by name, when it appears.
func TestIgnoredFilesNoticed(t *testing.T) {
	d, dir, log := dirDaemon(t)
	writeFile(t, filepath.Join(dir, "a.ign"), []byte(`{"ignition":{"version":"3.6.0"}}`))
	writeFile(t, filepath.Join(dir, "a.ign~"), []byte(`{}`))
	writeFile(t, filepath.Join(dir, ".hidden.ign"), []byte(`{}`))
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := messages(log, journal.MsgConfigIgnored)
	if len(got) != 2 || !strings.HasPrefix(got[0], filepath.Join(dir, ".hidden.ign")+": not loaded: a hidden file") ||
		!strings.HasPrefix(got[1], filepath.Join(dir, "a.ign~")+": not loaded: a backup") {
		t.Fatalf("MsgConfigIgnored records %q; want the hidden file's and the backup's", got)
	}
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := messages(log, journal.MsgConfigIgnored); len(got) != 2 {
		t.Errorf("after a second load: %q; want each file once", got)
	}
	if err := os.Remove(filepath.Join(dir, "a.ign~")); err != nil {
		t.Fatal(err)
	}
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.ign~"), []byte(`{}`))
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := messages(log, journal.MsgConfigIgnored); len(got) != 3 {
		t.Errorf("a file that went and came back: %q; want it noticed again", got)
	}
}

// TestConfigWatchSeesFilesNotLoaded: a file that is not a fragment, added
// to a desired-state directory, causes a reload (which names it); a hidden
// one, an editor's or a writer's temporary, does not.
func TestConfigWatchSeesFilesNotLoaded(t *testing.T) {
	c := &configWatch{targets: []string{"/etc/drift-monitor/desired.d"}}
	for name, want := range map[string]bool{
		"/etc/drift-monitor/desired.d/a.ign":      true,
		"/etc/drift-monitor/desired.d/a.ign~":     true,
		"/etc/drift-monitor/desired.d/b.bu":       true,
		"/etc/drift-monitor/desired.d/.a.ign.swp": false,
		"/etc/drift-monitor/other":                false,
	} {
		if got := c.relevant(name); got != want {
			t.Errorf("relevant(%s) = %v, want %v", name, got, want)
		}
	}
}
