package enablement

import "testing"

func TestOfflineChangedBy(t *testing.T) {
	for p, want := range map[string]bool{
		"/etc/systemd/system": true,
		"/etc/systemd/system/multi-user.target.wants/x.service": true,
		"/etc/systemd/system-generators":                        false,
		"/etc/systemd":                                          false,
		"/etc/chrony.conf":                                      false,
	} {
		if got := (Offline{}).ChangedBy(p); got != want {
			t.Errorf("ChangedBy(%q) = %v, want %v", p, got, want)
		}
	}
}
