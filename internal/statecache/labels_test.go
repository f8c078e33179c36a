package statecache

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// TestLabelAnswers: the answers kept for a policy come back for it, and
// for no other; a file of answers that is damaged, or that another user
// could have written, gives none (a damaged one with a warning); in
// either mode a check or the daemon reads them.
func TestLabelAnswers(t *testing.T) {
	answers := []selinux.Answer{{Path: "/etc/a", Type: selinux.Regular, Context: "u:r:etc_t:s0", OK: true}, {Path: "/proc/x", Type: selinux.Regular}}
	var key, other selinux.PolicyKey
	key[0], other[0] = 1, 2
	for _, mode := range []Mode{ModeRead, ModeMap} {
		var logged bytes.Buffer
		c := &Cache{Dir: filepath.Join(t.TempDir(), "cache"), Mode: mode, Log: slog.New(slog.NewTextHandler(&logged, nil))}
		if c.LabelAnswers(key) != nil {
			t.Fatal("answers before any were kept")
		}
		c.KeepLabelAnswers(key, answers)
		a := c.LabelAnswers(key)
		if a.Len() != 2 {
			t.Fatalf("mode %d: %d answers kept, want 2", mode, a.Len())
		}
		if i, ok := a.Find("/etc/a", selinux.Regular); !ok || a.Answer(i) != answers[0] {
			t.Errorf("mode %d: /etc/a not answered as kept", mode)
		}
		if c.LabelAnswers(other) != nil {
			t.Errorf("mode %d: another policy's key is answered", mode)
		}
		name, _ := labelsName(key)
		p := filepath.Join(c.Dir, name)
		good, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []int{0, len(labelsMagic) + 3, len(good) / 2, len(good) - 1} {
			bad := bytes.Clone(good)
			bad[at] ^= 0x10
			if err := os.WriteFile(p, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			if c.LabelAnswers(key) != nil {
				t.Errorf("mode %d: answers with byte %d flipped are read", mode, at)
			}
		}
		if !strings.Contains(logged.String(), "ignoring the SELinux defaults kept in") {
			t.Errorf("mode %d: no warning of the damaged answers: %q", mode, logged.String())
		}
		if err := os.WriteFile(p, good, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o622); err != nil {
			t.Fatal(err)
		}
		if c.LabelAnswers(key) != nil {
			t.Errorf("mode %d: answers others could write are read", mode)
		}
	}
}

// TestLabelAnswersTrimmed: files of answers are trimmed with the entries,
// least recently used first.
func TestLabelAnswersTrimmed(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	os.Chmod(c.Dir, 0o700)
	var a, b selinux.PolicyKey
	a[0], b[0] = 1, 2
	c.KeepLabelAnswers(a, []selinux.Answer{{Path: "/etc/a", Type: selinux.Regular}})
	na, _ := labelsName(a)
	fi, err := os.Stat(filepath.Join(c.Dir, na))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(c.Dir, na), old, old)
	c.MaxBytes = fi.Size() + fi.Size()/2 // room for one
	c.KeepLabelAnswers(b, []selinux.Answer{{Path: "/etc/b", Type: selinux.Regular}})
	if c.LabelAnswers(a) != nil || c.LabelAnswers(b) == nil {
		t.Errorf("after trimming: the older answers stay or the newer went")
	}
}
