package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestConfigWatchWaitsForTheWriter: a config file written with a pause
// half-way (curl -o on a slow link) signals a reload once its writer closes
// it, not before (the reload read the first half); one whose writer keeps
// it open, once it has been quiet for the settle time. Meanwhile the watch
// says a write is in progress.
func TestConfigWatchWaitsForTheWriter(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "desired.d")
	if err := os.Mkdir(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	const settle = 2 * time.Second
	c, err := newConfigWatch(root, []string{cfgDir}, "", settle)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	noSignal := func(what string, d time.Duration) {
		t.Helper()
		select {
		case <-c.Changed():
			t.Fatalf("a reload signalled %s", what)
		case <-time.After(d): // the window in which none may come: the behaviour under test
		}
	}
	signal := func(what string) {
		t.Helper()
		select {
		case <-c.Changed():
		case <-time.After(20 * time.Second):
			t.Fatalf("no reload signalled %s within 20s", what)
		}
	}
	writing := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for c.Writing() != want {
			if time.Now().After(deadline) {
				t.Fatalf("Writing() = %v for 10s, want %v", !want, want)
			}
			time.Sleep(5 * time.Millisecond) // a poll interval inside a bounded wait
		}
	}

	f, err := os.Create(filepath.Join(cfgDir, "a.ign"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ignition":{"version":"3.4.0"},`)
	writing(true)
	noSignal("while the writer pauses half-way", settle/2)
	f.WriteString(`"storage":{}}`)
	noSignal("before the writer closed the file", 4*configDebounce)
	f.Close()
	signal("once the writer closed the file")
	writing(false)

	f, err = os.OpenFile(filepath.Join(cfgDir, "b.ign"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"ignition":{"version":"3.4.0"}}`)
	writing(true)
	noSignal("before the file was quiet for the settle time", settle/2)
	signal("once the open file was quiet for the settle time")
	writing(false)
}

// TestRefusedWhileWritingIsPutOff: a reload refused while a config file is
// being written is neither journaled nor counted as a failure, nor does it
// change what the status line says; the same refusal once every write is
// complete is.
func TestRefusedWhileWritingIsPutOff(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	d.cfg = &configWatch{}
	d.cfg.writing.Store(1)
	writeFile(t, d.o.Configs[0], []byte(`{"ignition":{"version":"3.4.0"},`))
	d.reload(ctx, "test")
	reloadApplied(t, d)
	if got := log.find(journal.MsgLoadFailed, ""); len(got) != 0 || d.loadErr != nil || d.m.loadFailures != 0 {
		t.Errorf("refused while being written: records %v, loadErr %v, %d failures; want none", got, d.loadErr, d.m.loadFailures)
	}
	if got, want := d.status(), "No drift: watching 3 paths, 1 unit"; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
	d.cfg.writing.Store(0)
	d.reload(ctx, "test")
	reloadApplied(t, d)
	if got := log.find(journal.MsgLoadFailed, ""); len(got) != 1 || d.loadErr == nil || d.m.loadFailures != 1 {
		t.Errorf("refused once written: records %v, loadErr %v, %d failures; want one", got, d.loadErr, d.m.loadFailures)
	}
}
