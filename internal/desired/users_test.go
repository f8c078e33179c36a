package desired

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestMachineConfigPasswords: a user a MachineConfig declares gets the
// password the MCD sets on every update, "*" when none is declared; a user
// of an Ignition config keeps an undeclared one unchecked.
func TestMachineConfigPasswords(t *testing.T) {
	mc := "kind: MachineConfig\nspec:\n  config:\n    ignition:\n      version: 3.2.0\n    passwd:\n      users:\n      - name: core\n        sshAuthorizedKeys: [\"ssh-ed25519 AAAA\"]\n"
	ign := `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"bob"},{"name":"carol","passwordHash":"$6$c"}]}}`
	st, err := deriveState("/", []string{"/a/99-core.yaml", "/a/50-users.ign"}, [][]byte{[]byte(mc), []byte(ign)}, [4][]byte{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range st.Entries {
		if e.Kind == model.KindUser {
			got[e.User] = "undeclared"
			if h := e.Account.PasswordHash; h != nil {
				got[e.User] = *h
			}
		}
	}
	want := map[string]string{"core": "*", "bob": "undeclared", "carol": "$6$c"}
	for u, w := range want {
		if got[u] != w {
			t.Errorf("%s's password: %q, want %q", u, got[u], w)
		}
	}
}
