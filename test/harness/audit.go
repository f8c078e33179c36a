package harness

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/auditlock"
)

// AuditHost prepares the kernel's audit subsystem for a test and restores
// the host's settings after it: audit is enabled (auditctl -e 1) for the
// test, and at cleanup the rules with key are deleted (auditctl -D -k key,
// never the host's others) and the previous enabled flag is set back. It
// calls Unavailable without root or auditctl (Debian's auditd package), and
// when the host's audit is locked (-e 2), which no test may change.
func AuditHost(t testing.TB, key string) {
	t.Helper()
	RequireRoot(t, "changing the kernel's audit rules")
	RequireTools(t, "auditctl")
	// One test (or benchmark) at a time changes the host's audit state.
	release, err := auditlock.Take()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release) // registered first: runs last, after the restore
	before, err := exec.Command("auditctl", "-s").CombinedOutput()
	if err != nil {
		Unavailable(t, "auditctl -s: %v: %s", err, before)
	}
	m := regexp.MustCompile(`(?m)^enabled (\d)`).FindSubmatch(before)
	if m == nil {
		t.Fatalf("auditctl -s printed no enabled line: %s", before)
	}
	enabled := string(m[1])
	if enabled == "2" {
		Unavailable(t, "the host's audit rules are locked (enabled 2)")
	}
	rules, _ := exec.Command("auditctl", "-l").CombinedOutput()
	t.Cleanup(func() {
		AuditCommand(t, "-D", "-k", key)
		AuditCommand(t, "-e", enabled)
		after, _ := exec.Command("auditctl", "-l").CombinedOutput()
		if lost, left := RulesChanged(string(rules), string(after), key); len(lost) > 0 || len(left) > 0 {
			t.Errorf("the host's audit rules changed across the test: lost %q, left behind %q\nbefore:\n%s\nafter:\n%s", lost, left, rules, after)
		}
	})
	AuditCommand(t, "-e", "1")
}

// RulesChanged compares two listings of auditctl -l around a test that
// owns the rules of key: lost are the host's other rules that went, left
// the rules of key that stayed. A rule of another key added meanwhile is
// someone else's (the host's auditd, augenrules) and no change by the test.
func RulesChanged(before, after, key string) (lost, left []string) {
	set := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "No rules" {
				m[l] = true
			}
		}
		return m
	}
	b, a := set(before), set(after)
	for l := range b {
		if !a[l] && !hasKey(l, key) {
			lost = append(lost, l)
		}
	}
	for l := range a {
		if hasKey(l, key) {
			left = append(left, l)
		}
	}
	return lost, left
}

// hasKey: an auditctl -l line carries -k key (or -F key=key).
func hasKey(line, key string) bool {
	for _, f := range strings.Fields(line) {
		if f == "key="+key {
			return true
		}
	}
	return strings.HasSuffix(line, " -k "+key) || strings.Contains(line, " -k "+key+" ")
}

// AuditCommand runs auditctl with args; a failure fails the test, except
// that deleting rules of a key that has none is no failure.
func AuditCommand(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("auditctl", args...).CombinedOutput()
	if err != nil && !(len(args) > 0 && args[0] == "-D" && strings.Contains(string(out), "No rules")) {
		t.Errorf("auditctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The MESSAGE_IDs of --attribution=audit's records (see contract.go).
const (
	MsgAttribution  = "aa8b2d101a354031a9476fa770a58277"
	MsgChangeDenied = "5943f7f8e3b64a67a7dfc381cfa579f6"
)
