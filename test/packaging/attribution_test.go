package packaging

import (
	"os"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestAttributionDropIn: the shipped drop-in gives exactly what audit
// attribution needs (research A2, A3) and weakens nothing else: the
// unit's IPAddressDeny=any and system call filter stay.
func TestAttributionDropIn(t *testing.T) {
	conf := readRepoFile(t, harness.Repo(t, "packaging/attribution/attribution.conf"))
	for _, want := range []string{
		"[Service]\n",
		"Environment=DRIFT_MONITOR_ATTRIBUTION=audit\n",
		"CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_AUDIT_READ CAP_AUDIT_CONTROL\n",
		"AmbientCapabilities=CAP_AUDIT_READ CAP_AUDIT_CONTROL\n",
		"RestrictAddressFamilies=AF_UNIX AF_NETLINK\n",
		"PrivateNetwork=no\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("attribution.conf lacks %q", want)
		}
	}
	for _, never := range []string{"IPAddressDeny", "IPAddressAllow", "SystemCallFilter", "ExecStart"} {
		for _, line := range strings.Split(conf, "\n") {
			if strings.HasPrefix(line, never) {
				t.Errorf("attribution.conf sets %s (line %q): the unit's must stay, and other drop-ins replace ExecStart", never, line)
			}
		}
	}
	unit := readRepoFile(t, harness.Repo(t, "units/drift-monitor.service"))
	if !strings.Contains(unit, "IPAddressDeny=any\n") || !strings.Contains(unit, "StateDirectory=drift-monitor\n") {
		t.Error("the unit no longer has IPAddressDeny=any and the state directory the canary lives in")
	}
}

func readRepoFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
