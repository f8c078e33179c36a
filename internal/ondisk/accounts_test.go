package ondisk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestAccountLock: a lock is held while the pid it holds lives and it is
// younger than StaleAccountLock; a dead writer's, a garbled one and an old
// one are stale.
func TestAccountLock(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content string
		age     time.Duration
		held    bool
	}{
		{"a live writer", strconv.Itoa(os.Getpid()), 0, true},
		{"a dead writer", strconv.Itoa(dead.Process.Pid), 0, false},
		{"not a pid", "garbage", 0, false},
		{"a live pid, but too old to be its writer's", strconv.Itoa(os.Getpid()), 2 * StaleAccountLock, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			lock := filepath.Join(root, "etc/group.lock")
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(lock, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.age > 0 {
				old := time.Now().Add(-tt.age)
				if err := os.Chtimes(lock, old, old); err != nil {
					t.Fatal(err)
				}
			}
			r, err := OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := r.ObserveAccounts().Locked
			if (got != "") != tt.held {
				t.Errorf("Locked = %q, want held %v", got, tt.held)
			}
		})
	}
}
