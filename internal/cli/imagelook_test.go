package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The image's comparison runs beside the declared check; a check that
// fails first closes it, which kills its rpm query and waits for it, so
// that no rpm outlives the check, and not for what rpm started.
func TestImageLookClosedKillsTheQuery(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, "var/lib/rpm/rpmdb.sqlite")
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// An rpm that starts a process holding its output (which killing rpm
	// does not end), says its process ID and that process's, then blocks
	// as one waiting for its database's lock would.
	bin := t.TempDir()
	pidFile := filepath.Join(bin, "pid")
	script := "#!/bin/sh\nsleep 600 &\necho $$ $! >" + pidFile + ".new && mv " + pidFile + ".new " + pidFile + "\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(bin, "rpm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	look := startImage(context.Background(), r, imageFlag{list: true})
	var pid, child int
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			f := strings.Fields(string(b))
			if len(f) != 2 {
				t.Fatalf("the fake rpm wrote %q", b)
			}
			pid, _ = strconv.Atoi(f[0])
			child, _ = strconv.Atoi(f[1])
			t.Cleanup(func() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				_ = syscall.Kill(child, syscall.SIGKILL)
			})
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rpm query did not start in a minute")
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { look.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("closing the comparison did not stop its rpm query")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("rpm (process %d) outlived the comparison: kill -0 = %v", pid, err)
	}
	if look.err == nil {
		t.Errorf("a comparison stopped half-way has no error")
	}
}
