package mcd

import (
	"regexp"
	"strconv"
	"strings"
)

// Kind is what one of the MCD's journal lines says.
type Kind int

// The lines the machine follows. Each is logged by the MCD's logSystem
// (machine-config-operator pkg/daemon/update.go, main and release-4.1 …
// release-4.23), at the place named.
const (
	None Kind = iota
	// Start: "Starting update from A to B: &{…}" (update.go:update, before
	// the drain and any write; no ": &{…}" suffix before 4.4).
	Start
	// Reboot: "initiating reboot: Node will reboot into config B"
	// (update.go:reboot, after currentconfig names B), or "Rebooting node"
	// just before it (performPostConfigChangeNodeDisruptionAction), which
	// names no config.
	Reboot
	// RebootFailed: "failed to run reboot: …" (update.go:reboot): the
	// systemd-run of machine-config-daemon-reboot.service failed.
	RebootFailed
	// Rebootless: "Node has Desired Config B, skipping reboot", "X config
	// reloaded|restarted successfully! Desired config B has been applied,
	// skipping reboot" (performPostConfigChangeNodeDisruptionAction, after
	// currentconfig names B and the services are reloaded).
	Rebootless
	// Done: "Update completed for config B and node has been successfully
	// uncordoned" (daemon.go:completeUpdate); also logged on every MCD
	// restart in a steady state.
	Done
	// Validated: "Validated on-disk state" (daemon.go:checkStateOnFirstRun,
	// after a boot or an MCD restart, against the on-disk currentconfig).
	Validated
	// Managing: "Starting to manage node: N" (daemon.go, every MCD start).
	Managing
)

var kindNames = map[Kind]string{None: "none", Start: "start", Reboot: "reboot", RebootFailed: "reboot-failed",
	Rebootless: "rebootless", Done: "done", Validated: "validated", Managing: "managing"}

func (k Kind) String() string { return kindNames[k] }

// Line is one MCD line, parsed.
type Line struct {
	Kind Kind
	// From and To are a Start's source and target; Config is the config a
	// Reboot, Rebootless or Done line names ("" when it names none).
	From, To, Config string
}

// prefix is what logSystem puts before every message it pipes to logger:
// "machine-config-daemon[PID]: ".
var prefix = regexp.MustCompile(`^machine-config-daemon\[[0-9]+\]: `)

// A config name is a Kubernetes object name (a DNS subdomain); the MCD's
// first boot uses "mco-empty-mc" as the source.
const name = `([A-Za-z0-9][-A-Za-z0-9._]*)`

var patterns = []struct {
	kind Kind
	re   *regexp.Regexp
}{
	{Start, regexp.MustCompile(`^Starting update from ` + name + ` to ` + name + `(?::.*)?$`)},
	{Reboot, regexp.MustCompile(`^initiating reboot: Node will reboot into config ` + name + `$`)},
	{Reboot, regexp.MustCompile(`^Rebooting node$`)},
	{RebootFailed, regexp.MustCompile(`^failed to run reboot: `)},
	{Rebootless, regexp.MustCompile(`^Node has Desired Config ` + name + `, skipping reboot$`)},
	{Rebootless, regexp.MustCompile(`^\S+ config (?:reloaded|restarted) successfully! Desired config ` + name + ` has been applied, skipping reboot$`)},
	{Done, regexp.MustCompile(`^Update completed for config ` + name + ` and node has been successfully uncordoned$`)},
	{Validated, regexp.MustCompile(`^Validated on-disk state$`)},
	{Managing, regexp.MustCompile(`^Starting to manage node: `)},
}

// Parse reads one journal MESSAGE as the MCD's logSystem writes it, in both
// of its forms: plain ("machine-config-daemon[42]: Starting update …", up to
// 4.14 and early 4.15/4.16) and Go-quoted ("machine-config-daemon[42]:
// \"Starting update …\"": logSystem's fmt.Sprintf("%q", message), on 4.17
// and later and backported to late 4.15/4.16 z-streams). ok is false for
// any other message, including MCD lines the machine does not follow.
func Parse(message string) (l Line, ok bool) {
	loc := prefix.FindStringIndex(message)
	if loc == nil {
		return Line{}, false
	}
	text := strings.TrimRight(message[loc[1]:], "\n")
	if strings.HasPrefix(text, `"`) {
		u, err := strconv.Unquote(text)
		if err != nil {
			return Line{}, false
		}
		text = u
	}
	for _, p := range patterns {
		m := p.re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		l.Kind = p.kind
		switch {
		case p.kind == Start:
			l.From, l.To = m[1], m[2]
		case len(m) > 1:
			l.Config = m[1]
		}
		return l, true
	}
	return Line{}, false
}

// RebootUnit is the transient unit the MCD reboots through
// (daemon.go:rebootCommand: systemd-run --unit machine-config-daemon-reboot
// --description "machine-config-daemon: Node will reboot into config B" …
// /bin/sh -c "systemctl reboot"), as systemd keeps its file.
const RebootUnit = "/run/systemd/transient/machine-config-daemon-reboot.service"

var rebootDescription = regexp.MustCompile(`^Description=machine-config-daemon: Node will reboot into config ` + name + `$`)

// ParseRebootUnit reads the reboot unit's file: a Reboot line naming the
// config of its Description; ok is false for any other unit.
func ParseRebootUnit(content []byte) (l Line, ok bool) {
	for _, line := range strings.Split(string(content), "\n") {
		if m := rebootDescription.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			return Line{Kind: Reboot, Config: m[1]}, true
		}
	}
	return Line{}, false
}
