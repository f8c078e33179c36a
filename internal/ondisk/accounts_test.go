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
// younger than StaleAccountLock, read as shadow-utils writes and reads it
// (the pid and its NUL: vipw's "138\0" was taken for garbage, and vipw's
// lock ignored); a dead writer's, one shadow-utils would not read as a pid,
// and an old one are stale.
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
		{"a live writer, as shadow-utils writes it", strconv.Itoa(os.Getpid()) + "\x00", 0, true},
		{"a live writer, without the NUL", strconv.Itoa(os.Getpid()), 0, true},
		{"a live writer, what follows the NUL unread", strconv.Itoa(os.Getpid()) + "\x00garbage", 0, true},
		{"a dead writer", strconv.Itoa(dead.Process.Pid) + "\x00", 0, false},
		{"not a pid", "garbage", 0, false},
		{"a pid and a new line, which shadow-utils refuses", strconv.Itoa(os.Getpid()) + "\n", 0, false},
		{"a signed pid", "+" + strconv.Itoa(os.Getpid()), 0, false},
		{"pid 0", "0\x00", 0, false},
		{"beyond pid_t", "99999999999\x00", 0, false},
		{"empty", "", 0, false},
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
			got := r.ObserveAccounts().Lock
			if (got != nil) != tt.held {
				t.Errorf("Lock = %+v, want held %v", got, tt.held)
			}
			if got != nil && (got.File != "/etc/group.lock" || got.PID != os.Getpid()) {
				t.Errorf("Lock = %+v, want /etc/group.lock held by %d", got, os.Getpid())
			}
		})
	}
}
