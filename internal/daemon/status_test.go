package daemon

import (
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

func TestStatusLine(t *testing.T) {
	chrony := dr("file:/etc/chrony.conf", "/etc/chrony.conf", drift.Content)
	x1, x2 := dr("file:/etc/x", "/etc/x", drift.Mode), dr("file:/etc/x", "/etc/x", drift.Owner)
	nl := dr("file:/etc/a\nb", "/etc/a\nb", drift.Missing)
	cases := []struct {
		name string
		in   statusInput
		want string
	}{
		{"clean", statusInput{paths: 42, units: 6}, "No drift: watching 42 paths, 6 units"},
		{"singular", statusInput{paths: 1, units: 1}, "No drift: watching 1 path, 1 unit"},
		{"drift", statusInput{paths: 42, drift: []drift.Drift{chrony, x1, x2}},
			"Drift: 2 paths differ (/etc/chrony.conf: content; /etc/x: mode, owner)"},
		{"one path", statusInput{drift: []drift.Drift{chrony}}, "Drift: 1 path differs (/etc/chrony.conf: content)"},
		{"control characters escaped", statusInput{drift: []drift.Drift{nl}}, `Drift: 1 path differs (/etc/a\nb: missing)`},
		{"many", statusInput{drift: []drift.Drift{
			dr("1", "/a", drift.Mode), dr("2", "/b", drift.Mode), dr("3", "/c", drift.Mode), dr("4", "/d", drift.Mode)}},
			"Drift: 4 paths differ (/a: mode; /b: mode; /c: mode; …)"},
		{"the first of many", statusInput{subjects: 100000, drift: []drift.Drift{
			dr("1", "/a", drift.Mode), dr("1", "/a", drift.Owner), dr("2", "/b", drift.Mode), dr("3", "/c", drift.Mode)}},
			"Drift: 100000 paths differ (/a: mode, owner; /b: mode; /c: mode; …)"},
		{"three shown of more", statusInput{subjects: 4, drift: []drift.Drift{
			dr("1", "/a", drift.Mode), dr("2", "/b", drift.Mode), dr("3", "/c", drift.Mode)}},
			"Drift: 4 paths differ (/a: mode; /b: mode; /c: mode; …)"},
		{"long paths are shortened in the middle", statusInput{drift: []drift.Drift{
			dr("1", "/etc/"+strings.Repeat("d", 300)+"/f-1", drift.Missing)}, paths: 1, unitsDown: true},
			"Drift: 1 path differs (/etc/" + strings.Repeat("d", 47) + "…" + strings.Repeat("d", 101) + "/f-1: missing)" +
				"; systemd unreachable over D-Bus, reconnecting: unit enablement not checked"},
		{"starting", statusInput{starting: true, paths: 5, units: 1}, "Starting: first check of 5 paths, 1 unit"},
		{"nothing to watch", statusInput{nothing: "no config file in /usr/lib/drift-monitor/desired.d or /etc/drift-monitor/desired.d"},
			"Nothing to watch: no config file in /usr/lib/drift-monitor/desired.d or /etc/drift-monitor/desired.d"},
		{"nothing to watch, a config refused", statusInput{nothing: "no config file in /d", loadFailed: "/d/x.ign: bad"},
			"Nothing to watch: no config file in /d; new config refused (/d/x.ign: bad), checking against the last good one"},
		{"bus gone", statusInput{paths: 3, unitsDown: true, apiDown: true},
			"No drift: watching 3 paths, 0 units; bus unavailable, reconnecting: unit enablement not checked, drift-monitor status cannot answer"},
		{"systemd gone", statusInput{paths: 3, unitsDown: true},
			"No drift: watching 3 paths, 0 units; systemd unreachable over D-Bus, reconnecting: unit enablement not checked"},
		{"API gone", statusInput{paths: 3, apiDown: true},
			"No drift: watching 3 paths, 0 units; D-Bus API off the bus, reconnecting: drift-monitor status cannot answer"},
		{"inhibited", statusInput{inhibitors: []string{"my-updater (pid 4711): applying config v42"}},
			"Inhibited by my-updater (pid 4711): applying config v42"},
		{"polling", statusInput{paths: 3, polled: 2}, "No drift: watching 3 paths, 0 units; polling 2 directories: inotify watches exhausted"},
		{"reading", statusInput{paths: 3, reading: 1}, "No drift: watching 3 paths, 0 units; reading 1 large file"},
		{"reading, drifted", statusInput{drift: []drift.Drift{chrony}, reading: 2}, "Drift: 1 path differs (/etc/chrony.conf: content); reading 2 large files"},
		{"excluded", statusInput{paths: 3, excluded: 1}, "No drift: watching 3 paths, 0 units; 1 declared path excluded"},
		{"exclusions refused at start", statusInput{paths: 3, exclRefused: "/etc/drift-monitor/exclude.conf:2: bad"},
			"No drift: watching 3 paths, 0 units; exclusions refused (/etc/drift-monitor/exclude.conf:2: bad): only --exclude applies"},
		{"exclusions refused, kept", statusInput{drift: []drift.Drift{chrony}, excluded: 2, exclRefused: "x:1: bad", exclKept: true},
			"Drift: 1 path differs (/etc/chrony.conf: content); 2 declared paths excluded; exclusions refused (x:1: bad), keeping the last good ones"},
		{"refused config", statusInput{paths: 3, loadFailed: "/etc/drift-monitor/desired.d/x.ign: bad"},
			"No drift: watching 3 paths, 0 units; new config refused (/etc/drift-monitor/desired.d/x.ign: bad), checking against the last good one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := statusLine(c.in); got != c.want {
				t.Errorf("statusLine:\nwant %q\ngot  %q", c.want, got)
			}
		})
	}
}

func TestShorten(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/etc/short", "/etc/short"},
		{"/ééééééééééé/x", "/é…éé/x"}, // never inside a character
	} {
		if got := shorten(c.in, 12); got != c.want || len(got) > 12 && len(c.in) > 12 {
			t.Errorf("shorten(%q, 12) = %q (%d bytes), want %q", c.in, got, len(got), c.want)
		}
	}
}
