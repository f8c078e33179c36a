package systemd_test

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestConfigReadWhenClosed: a config rewritten in place by a writer that
// pauses a second half-way (curl -o on a slow link) is read once the writer
// closes it, as a declared file is. Read half-way, a two-file Butane config
// declared one file for that second (the other's drift "resolved", then
// reported again), and an Ignition config was refused as broken ("unexpected
// end of JSON input", a load failure counted). The cases share one booted
// host, on which both configs are in force, each with a drifted file.
func TestConfigReadWhenClosed(t *testing.T) {
	t.Parallel()
	const butane = "/etc/drift-monitor/desired.d/40-two.bu"
	const (
		buFirst = `variant: fcos
version: 1.5.0
storage:
  files:
    - path: /etc/bu/one.conf
      contents:
        inline: one
`
		buSecond = `    - path: /etc/bu/two.conf
      contents:
        inline: two
`
		ignFirst = `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}},
 {"path":"/etc/ign/one.conf","mode":420,"contents":{"source":"data:,one"}},`
		ignSecond = `
 {"path":"/etc/ign/two.conf","mode":420,"contents":{"source":"data:,two"}}]}}`
	)
	h := bootDaemon(t, setup{config: ignFirst + ignSecond, files: []file{sentinelFile,
		{butane, buFirst + buSecond, 0o644},
		{"/etc/bu/one.conf", "one", 0o644}, {"/etc/bu/two.conf", "wrong", 0o644},
		{"/etc/ign/one.conf", "one", 0o644}, {"/etc/ign/two.conf", "wrong", 0o644}}})
	const drifted = "Drift: 2 paths differ (/etc/bu/two.conf: content; /etc/ign/two.conf: content)"
	h.waitStatus(drifted)
	for _, c := range []struct {
		name, config, first, second string
	}{
		{"a Butane config", butane, buFirst, buSecond},
		{"an Ignition config", configPath, ignFirst, ignSecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := h.in(t)
			m := h.mark()
			// Rewritten in place, the same bytes, with a pause half-way.
			h.sh(`exec >"$1"; printf '%s' "$2"; sleep 1; printf '%s' "$3"`, c.config, c.first, c.second)
			_, at := h.waitRecord(m, harness.MsgReloaded, nil)
			h.noDriftSince(m, "/etc/bu/two.conf")
			end := h.mark()
			for _, p := range []string{"/etc/bu/two.conf", "/etc/ign/two.conf"} {
				if got := h.between(m, end, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": p}); len(got) > 0 {
					t.Errorf("the half-written config resolved %s: %s", p, got[0])
				}
			}
			if got := h.between(m, end, harness.MsgLoadFailed, nil); len(got) > 0 {
				t.Errorf("the half-written config was refused: %s", got[0])
			}
			if got := h.between(m, end, harness.MsgReloaded, nil); len(got) != 1 {
				t.Errorf("%d reloads for one write, want 1 (the first at record %d): %v", len(got), at, got)
			}
			h.waitStatus(drifted)
		})
	}
}
