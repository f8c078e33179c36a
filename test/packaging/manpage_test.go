package packaging

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/test/harness"
)

const manPage = "packaging/drift-monitor.8"

// renderMan renders the man page as plain text, without hyphenation and on
// lines long enough that an option and its argument stay on one line.
func renderMan(t *testing.T) string {
	t.Helper()
	harness.RequireTools(t, "groff")
	return run(t, harness.Repo(t, ""), "groff", "-man", "-Tascii", "-P-cbou", "-rHY=0", "-rLL=250n", manPage)
}

// TestManPageLint: groff reads the page without a warning, and its header
// names the package's version.
func TestManPageLint(t *testing.T) {
	harness.RequireTools(t, "groff")
	root := harness.Repo(t, "")
	if out, err := runStatus(root, "groff", "-man", "-ww", "-z", manPage); err != nil || out != "" {
		t.Errorf("groff -man -ww -z %s: %v\n%s", manPage, err, out)
	}
	page, err := os.ReadFile(filepath.Join(root, manPage))
	if err != nil {
		t.Fatal(err)
	}
	th := regexp.MustCompile(`(?m)^\.TH .*$`).FindString(string(page))
	if want := `"drift\-monitor ` + version(t) + `"`; !strings.Contains(th, want) {
		t.Errorf("%s: %q does not name the version: want %s", manPage, th, want)
	}
}

// flagLine is a flag in the output of a FlagSet's PrintDefaults:
// "  -name ARG" or "  -name" (a bool flag).
var flagLine = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9-]*)(?:[ \t]+(\S+))?`)

// commandLine is a command in drift-monitor's usage: "  drift-monitor NAME ...".
var commandLine = regexp.MustCompile(`^\s+drift-monitor ([a-z][a-z-]*)`)

// TestManPageCoversCLI: every command that `drift-monitor help` lists has a
// subsection in COMMANDS that names every flag its --help prints, with the
// flag's argument, and the synopsis names every command.
func TestManPageCoversCLI(t *testing.T) {
	bin := harness.Binary(t)
	text := renderMan(t)
	lines := strings.Split(text, "\n")
	synopsis := section(lines, "SYNOPSIS", "")

	usage := run(t, "", bin, "help")
	var commands []string
	for _, l := range strings.Split(usage, "\n") {
		if m := commandLine.FindStringSubmatch(l); m != nil {
			commands = append(commands, m[1])
		}
	}
	if len(commands) < 4 {
		t.Fatalf("drift-monitor help lists %q; want at least check, daemon, status, inhibit", commands)
	}
	for _, cmd := range commands {
		t.Run(cmd, func(t *testing.T) {
			if !strings.Contains(normalize(synopsis), "drift-monitor "+cmd) {
				t.Errorf("SYNOPSIS does not show drift-monitor %s:\n%s", cmd, synopsis)
			}
			doc := normalize(section(lines, "COMMANDS", cmd))
			if doc == "" {
				t.Fatalf("COMMANDS has no subsection %q", cmd)
			}
			help, err := runStatus("", bin, cmd, "--help")
			if err != nil {
				t.Fatalf("drift-monitor %s --help: %v\n%s", cmd, err, help)
			}
			n := 0
			for _, l := range strings.Split(help, "\n") {
				m := flagLine.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				n++
				// Go's flag package names the argument of a duration flag
				// "duration"; the page writes arguments in capitals.
				want := "--" + m[1]
				if m[2] != "" {
					want += " " + strings.ToUpper(m[2])
				}
				if !strings.Contains(doc, want) {
					t.Errorf("drift-monitor(8), COMMANDS, %s: no %q (drift-monitor %s --help: %q)", cmd, want, cmd, strings.TrimSpace(l))
				}
			}
			if n == 0 {
				t.Errorf("no flag found in drift-monitor %s --help:\n%s", cmd, help)
			}
			t.Logf("%s: %d flags documented", cmd, n)
		})
	}
	if doc := section(lines, "COMMANDS", "version"); doc == "" {
		t.Errorf("COMMANDS has no subsection version")
	}
}

// TestManPageCoversJournalAndFiles: the page lists every MESSAGE_ID with its
// subject, the journal fields, every file the package installs for admins,
// the exit statuses, the inhibitor protocol and the D-Bus interface.
func TestManPageCoversJournalAndFiles(t *testing.T) {
	text := renderMan(t)
	lines := strings.Split(text, "\n")
	flat := normalize(text)

	journalSection := normalize(section(lines, "JOURNAL", ""))
	for _, e := range journal.Catalog {
		subject := regexp.MustCompile(`@([A-Z0-9_]+)@`).ReplaceAllString(e.Subject, "$1")
		if !strings.Contains(journalSection, e.ID+" "+normalize(subject)) {
			t.Errorf("JOURNAL does not list %s (%s) with its subject %q", e.ID, e.Name, subject)
		}
	}
	for _, f := range []string{journal.FieldMessageID, journal.FieldPriority, journal.FieldDriftKind,
		journal.FieldDriftPath, journal.FieldDriftUnit, journal.FieldDriftEntry} {
		if !strings.Contains(journalSection, f) {
			t.Errorf("JOURNAL does not name the field %s", f)
		}
	}

	files := normalize(section(lines, "FILES", ""))
	for _, f := range []string{"/etc/drift-monitor/desired.d/", "/usr/lib/drift-monitor/desired.d/",
		"/etc/drift-monitor/exclude.conf", "/run/drift-monitor/inhibit.d/", "/var/lib/drift-monitor/digest.key",
		"/usr/lib/systemd/system/drift-monitor.service", "/usr/lib/systemd/system-preset/50-drift-monitor.preset",
		"/usr/lib/systemd/system/drift-monitor-adopt.service", "/run/ignition.json",
		"/usr/lib/systemd/system/drift-monitor-adopt-image.service", "/var/lib/drift-monitor/image-firstboot.json",
		"/etc/drift-monitor/desired.d/10-firstboot.record",
		"/usr/lib/systemd/system/drift-monitor-metrics.socket", "/usr/lib/systemd/system/drift-monitor-metrics.service",
		"/usr/share/dbus-1/system.d/org.driftmonitor.DriftMonitor1.conf",
		"/usr/lib/systemd/catalog/drift-monitor.catalog"} {
		if !strings.Contains(files, f) {
			t.Errorf("FILES does not name %s", f)
		}
	}

	for _, s := range []struct{ section, want string }{
		{"EXIT STATUS", "check 0 no drift; 1 drift found; 2 the check could not be done"},
		{"EXIT STATUS", "status 0 clean; 1 drift known"},
		{"EXIT STATUS", "3 the daemon is not running or not reachable"},
		{"EXIT STATUS", "inhibit COMMAND's exit status"},
		{"INHIBITOR PROTOCOL", "exec 9>/run/drift-monitor/inhibit.d/my-updater.lock"},
		{"INHIBITOR PROTOCOL", "flock 9"},
		{"INHIBITOR PROTOCOL", "Inhibit(who, why)"},
		{"D-BUS INTERFACE", "org.driftmonitor.DriftMonitor1"},
		{"D-BUS INTERFACE", "/org/driftmonitor/DriftMonitor1"},
		{"D-BUS INTERFACE", "Inhibit(s who, s why)"},
		{"D-BUS INTERFACE", "DriftChanged"},
	} {
		if !strings.Contains(normalize(section(lines, s.section, "")), s.want) {
			t.Errorf("%s does not say %q", s.section, s.want)
		}
	}
	for _, prop := range []string{"State", "StatusText", "Drift", "Inhibitors", "LastCheck", "WatchedPaths", "Units", "Version"} {
		if !strings.Contains(normalize(section(lines, "D-BUS INTERFACE", "")), prop+" ") {
			t.Errorf("D-BUS INTERFACE does not list the property %s", prop)
		}
	}
	if strings.Contains(flat, "@") && regexp.MustCompile(`@[A-Z_]+@`).MatchString(flat) {
		t.Errorf("the rendered page has an unexpanded @PLACEHOLDER@")
	}
}

// section returns the rendered lines of the section named title (a heading
// at column 0), or of its subsection sub (a heading indented by three
// spaces) when sub is not empty; "" if there is none.
func section(lines []string, title, sub string) string {
	start := -1
	for i, l := range lines {
		if l == title {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return ""
	}
	end := len(lines)
	for i := start; i < len(lines); i++ {
		if lines[i] != "" && lines[i][0] != ' ' {
			end = i
			break
		}
	}
	body := lines[start:end]
	if sub == "" {
		return strings.Join(body, "\n")
	}
	isHeading := func(l string) bool { return strings.HasPrefix(l, "   ") && len(l) > 3 && l[3] != ' ' }
	for i, l := range body {
		if isHeading(l) && strings.TrimSpace(l) == sub {
			for j := i + 1; j < len(body); j++ {
				if isHeading(body[j]) {
					return strings.Join(body[i+1:j], "\n")
				}
			}
			return strings.Join(body[i+1:], "\n")
		}
	}
	return ""
}

// normalize collapses white space, so that a phrase matches across line
// breaks and justification.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }
