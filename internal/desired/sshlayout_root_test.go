package desired_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestSSHLayoutInsideTheRoot: the layout is told from what the root holds,
// its links followed as if it were / — here /home is an absolute link, as
// on hosts whose homes live under /var — so that alice's authorized_keys is
// found where her home really is, and the keys are checked there.
func TestSSHLayoutInsideTheRoot(t *testing.T) {
	t.Setenv(desired.SSHKeysEnv, "auto")
	dir := t.TempDir()
	keys := filepath.Join(dir, "var/home/alice/.ssh/authorized_keys")
	if err := os.MkdirAll(filepath.Dir(keys), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte("ssh-ed25519 AAAA alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/var/home", filepath.Join(dir, "home")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"alice","sshAuthorizedKeys":["ssh-ed25519 AAAA alice"]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := desired.LoadState(openRoot(t, dir), []string{cfg})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range st.Entries {
		if e.Kind == model.KindSSHKeys {
			got = append(got, e.Path)
		}
	}
	if want := "/home/alice/.ssh/authorized_keys"; len(got) != 1 || got[0] != want {
		t.Errorf("SSH keys entries at %q, want one at %s (the layout the root has)", got, want)
	}
}
