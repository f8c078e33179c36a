package cli

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
)

// TestStatusSummary: the first words of the line say what the exit status
// says, within the 80 bytes node-problem-detector keeps.
func TestStatusSummary(t *testing.T) {
	for _, c := range []struct {
		name     string
		st       dbusapi.Status
		want     string
		wantExit int
	}{
		{"clean", dbusapi.Status{State: dbusapi.StateClean, StatusText: "No drift: watching 42 paths, 6 units"},
			"No drift: watching 42 paths, 6 units", ExitClean},
		{"drifted", dbusapi.Status{State: dbusapi.StateDrifted, DriftCount: 2, StatusText: "Drift: 2 paths differ (/etc/a: content; /etc/b: mode)"},
			"Drift: 2 paths differ (/etc/a: content; /etc/b: mode)", ExitDrift},
		{"inhibited, clean before", dbusapi.Status{State: dbusapi.StateInhibited, StatusText: "Inhibited by up (pid 7): v42"},
			"Inhibited by up (pid 7): v42", ExitClean},
		{"inhibited, drifted before", dbusapi.Status{State: dbusapi.StateInhibited, DriftCount: 1, StatusText: "Inhibited by up (pid 7): v42"},
			"Drift: 1 difference known; Inhibited by up (pid 7): v42", ExitDrift},
		{"starting", dbusapi.Status{State: dbusapi.StateStarting, StatusText: "Starting: first check of 4 paths, 0 units"},
			"Starting: first check of 4 paths, 0 units", ExitStarting},
		{"starting, no status yet", dbusapi.Status{State: dbusapi.StateStarting},
			"Starting: first full check not finished", ExitStarting},
		{"starting, a large file not verified yet", dbusapi.Status{State: dbusapi.StateStarting,
			StatusText: "Starting: first check of 4 paths, 0 units; verifying 1 large file (/var/big.img)"},
			"Starting: first check of 4 paths, 0 units; verifying 1 large file (/var/big.img)", ExitStarting},
		{"checking", dbusapi.Status{State: dbusapi.StateChecking, StatusText: "Checking: watching 4 paths, 0 units; verifying 1 large file (/var/big.img)"},
			"Checking: watching 4 paths, 0 units; verifying 1 large file (/var/big.img)", ExitStarting},
		{"checking, the line not yet", dbusapi.Status{State: dbusapi.StateChecking, StatusText: "No drift: watching 4 paths, 0 units"},
			"Checking: not every entry judged yet; No drift: watching 4 paths, 0 units", ExitStarting},
		{"error", dbusapi.Status{State: dbusapi.StateError, StatusText: "No drift: watching 0 paths, 0 units; new config refused (x)"},
			"Error: no desired state could be loaded; No drift: watching 0 paths, 0 units; new config refused (x)", ExitDrift},
		{"control characters", dbusapi.Status{State: dbusapi.StateDrifted, DriftCount: 1, StatusText: "Drift: 1 path differs (/etc/a\nb: mode)"},
			`Drift: 1 path differs (/etc/a\nb: mode)`, ExitDrift},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := statusSummary(&c.st); got != c.want {
				t.Errorf("statusSummary = %q, want %q", got, c.want)
			}
			if got := statusExit(&c.st); got != c.wantExit {
				t.Errorf("statusExit = %d, want %d", got, c.wantExit)
			}
		})
	}
}
