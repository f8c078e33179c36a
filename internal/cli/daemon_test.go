package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

// TestDaemonUsageExits proves that the daemon's usage and configuration
// errors exit with the statuses the unit's RestartPreventExitStatus= names
// (64, 78), never with 2, which the Go runtime uses for a panic, a fatal
// error and SIGABRT: those must be restarted.
func TestDaemonUsageExits(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		name   string
		args   []string
		want   int
		stderr string
	}{
		{"unknown flag", []string{"--no-such-flag"}, cli.ExitUsage, "flag provided but not defined: -no-such-flag"},
		{"bad flag value", []string{"--interval", "soon"}, cli.ExitUsage, `invalid value "soon" for flag -interval`},
		{"stray argument", []string{"--root", root, "extra"}, cli.ExitUsage, `unexpected argument "extra"`},
		{"metrics textfile node_exporter never reads", []string{"--root", root, "--metrics-textfile", "/run/x.txt"}, cli.ExitUsage, "want an absolute path ending in .prom"},
		{"exclusion not absolute", []string{"--root", root, "--exclude", "etc/x"}, cli.ExitUsage, `pattern "etc/x" is not an absolute path`},
		{"exclusion of an unknown kind", []string{"--root", root, "--exclude", "colour:/etc/x"}, cli.ExitUsage, `"colour" is not a kind of drift`},
		{"exclusion file not absolute", []string{"--root", root, "--exclude-from", "exclude.conf"}, cli.ExitUsage, `"exclude.conf" is not an absolute path`},
		{"mcd mode unknown", []string{"--root", root, "--mcd", "maybe"}, cli.ExitUsage, "--mcd maybe: want auto, on or off"},
		{"on-drift without systemd", []string{"--root", root, "--bus=false", "--on-drift", "x.service"}, cli.ExitConfig, "--on-drift needs systemd over D-Bus"},
		{"help", []string{"--help"}, 0, "-interval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := run(t, context.Background(), append([]string{"daemon"}, c.args...)...)
			if code != c.want || !strings.Contains(errOut, c.stderr) {
				t.Errorf("daemon %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, errOut, c.want, c.stderr)
			}
		})
	}
	if cli.ExitUsage == 2 || cli.ExitConfig == 2 {
		t.Errorf("a daemon usage status is 2, the Go runtime's after a panic")
	}
}
