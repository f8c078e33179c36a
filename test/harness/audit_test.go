package harness

import (
	"reflect"
	"sort"
	"testing"
)

func TestRulesChanged(t *testing.T) {
	host := "-w /etc/shadow -p wa -k identity\n"
	ours := "-w /tmp/x/etc/a -p wa -k drift-monitor\n-a always,exit -F arch=b64 -S openat -F path=/tmp/x/b -F perm=wa -F key=drift-monitor\n"
	other := "-w /tmp/y -p wa -k drift-monitor-test-7\n"
	for _, tc := range []struct {
		name, before, after string
		lost, left          []string
	}{
		{"restored", host, host, nil, nil},
		{"ours came and went", host + ours, host, nil, nil},
		{"empty", "No rules\n", "No rules\n", nil, nil},
		{"someone else's added", host, host + other, nil, nil},
		{"the host's lost", host, "No rules", []string{"-w /etc/shadow -p wa -k identity"}, nil},
		{"ours left", host, host + ours, nil, []string{
			"-a always,exit -F arch=b64 -S openat -F path=/tmp/x/b -F perm=wa -F key=drift-monitor",
			"-w /tmp/x/etc/a -p wa -k drift-monitor"}},
	} {
		lost, left := RulesChanged(tc.before, tc.after, "drift-monitor")
		sort.Strings(lost)
		sort.Strings(left)
		if !reflect.DeepEqual(lost, tc.lost) || !reflect.DeepEqual(left, tc.left) {
			t.Errorf("%s: lost %q left %q, want %q %q", tc.name, lost, left, tc.lost, tc.left)
		}
	}
}
