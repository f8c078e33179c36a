package daemon

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
)

// status is the status line of the daemon as it is now.
func (d *Daemon) status() string {
	in := statusInput{drift: d.track.head(3), subjects: len(d.track.subjects),
		paths: d.ix.paths, units: d.ix.units, polled: len(d.polled()),
		starting: !d.ready, unitsDown: d.unitsDown, apiDown: d.apiDown, reading: d.reads.underWay()}
	if in.pending = d.reads.pendingCount(); in.pending > 0 {
		in.firstCheck = !d.judged
		for _, p := range d.reads.pending(3) {
			in.pendingPaths = append(in.pendingPaths, escape.Name(p))
		}
	}
	for _, h := range d.inhibitors {
		in.inhibitors = append(in.inhibitors, escape.Name(h.String()))
	}
	if d.loadErr != nil {
		in.loadFailed = escape.Name(d.loadErr.Error())
		in.noState, in.restored = !d.good.have, d.good.restored
	}
	in.loading = d.loads.running
	in.accountLock = d.accountLockStatus()
	in.configBlind = d.cfg.Blind()
	in.excluded = d.excl.paths
	if d.excl.refused != nil {
		in.exclRefused, in.exclKept = escape.Name(d.excl.refused.Error()), d.excl.good
	}
	in.nothing = escape.Name(d.nothing)
	in.parts = d.partCaveats()
	return statusLine(in)
}

// updateStatus sends the status line once the daemon is ready (until then
// it says it is starting).
func (d *Daemon) updateStatus() {
	if d.ready {
		d.setStatus(d.status())
	}
}

// setStatus sends s to systemd unless it was the last one sent.
func (d *Daemon) setStatus(s string) {
	if s == d.lastStatus {
		return
	}
	d.lastStatus = s
	if d.o.Notify != nil {
		d.o.Notify.Status(s)
	}
}

// statusInput is everything the status line says.
type statusInput struct {
	// drift is the first of the drift known, in order: at least every
	// drift of the three subjects the line names (tracker.head); subjects
	// is how many subjects all of it has (0: count those of drift).
	drift      []drift.Drift
	subjects   int
	paths      int
	units      int
	polled     int
	loadFailed string // why the last reload was refused ("" when it was not)
	// noState: with loadFailed, no state is in force (none was ever
	// loaded, and there is no last good one): nothing is checked.
	// restored: the state in force is an earlier run's last good one.
	noState, restored bool
	// loading: a reload is under way (the state in force is checked
	// meanwhile).
	loading bool
	// accountLock names the lock on the account files that the user and
	// group entries wait for ("": none).
	accountLock string
	// nothing says where no config file was found: nothing to watch ("" when
	// the state has a config file).
	nothing string
	// configBlind: the desired-state files could not be watched.
	configBlind bool
	// excluded counts the declared paths the exclusions leave alone;
	// exclRefused says why the exclusion file is refused ("" : it is not),
	// and exclKept whether the last good rules are kept (else only
	// --exclude's apply).
	excluded    int
	exclRefused string
	exclKept    bool
	inhibitors  []string
	starting    bool
	// reading counts the files whose content is being compared in the
	// background (too large for the loop).
	reading int
	// pending counts those of them not judged yet on this version of the
	// file (their drift is not known: the check is not done), and
	// pendingPaths names the first (escaped); firstCheck: they are the
	// first check's.
	pending      int
	pendingPaths []string
	firstCheck   bool
	// unitsDown: systemd cannot be reached over D-Bus; apiDown: the
	// daemon's own API is off the bus.
	unitsDown, apiDown bool
	// parts: what the parts add (part.Caveat; "" : nothing).
	parts string
}

// statusLine renders systemctl status's STATUS= line:
//
//	No drift: watching 42 paths, 6 units
//	Nothing to watch: no config file in /usr/lib/drift-monitor/desired.d or /etc/drift-monitor/desired.d
//	Drift: 2 paths differ (/etc/chrony.conf: content; /etc/x: mode, owner)
//	Inhibited by my-updater (pid 4711): applying config v42
//	No drift: watching 42 paths, 6 units; 2 declared paths excluded
func statusLine(in statusInput) string {
	var b strings.Builder
	writeState(&b, in)
	writeCaveats(&b, in)
	return b.String()
}

// writeState writes what the status line leads with: the daemon's state, or
// the drift it knows.
func writeState(b *strings.Builder, in statusInput) {
	switch {
	case in.starting:
		fmt.Fprintf(b, "Starting: first check of %s, %s", plural(in.paths, "path"), plural(in.units, "unit"))
	case len(in.inhibitors) > 0:
		fmt.Fprintf(b, "Inhibited by %s", strings.Join(in.inhibitors, "; "))
	case in.loadFailed != "" && in.noState:
		// Not "No drift": nothing is known, and nothing is checked.
		fmt.Fprintf(b, "Not checking: config refused (%s), and no earlier config to check against", in.loadFailed)
	case in.nothing != "" && len(in.drift) == 0:
		fmt.Fprintf(b, "Nothing to watch: %s", in.nothing)
	case len(in.drift) == 0 && in.pending > 0 && in.firstCheck:
		// Ready, but not done: no drift known is not no drift.
		fmt.Fprintf(b, "Starting: first check of %s, %s", plural(in.paths, "path"), plural(in.units, "unit"))
	case len(in.drift) == 0 && (in.pending > 0 || in.accountLock != ""):
		fmt.Fprintf(b, "Checking: watching %s, %s", plural(in.paths, "path"), plural(in.units, "unit"))
	case len(in.drift) == 0:
		fmt.Fprintf(b, "No drift: watching %s, %s", plural(in.paths, "path"), plural(in.units, "unit"))
	default:
		writeDrift(b, in)
	}
}

// writeDrift summarises the drift: how many paths differ, the first three
// with their kinds.
func writeDrift(b *strings.Builder, in statusInput) {
	var subjects []string
	kinds := map[string][]string{}
	for i := range in.drift {
		s := in.drift[i].Subject()
		if _, ok := kinds[s]; !ok {
			subjects = append(subjects, s)
		}
		kinds[s] = append(kinds[s], string(in.drift[i].Kind))
	}
	n := max(in.subjects, len(subjects))
	verb := "differ"
	if n == 1 {
		verb = "differs"
	}
	fmt.Fprintf(b, "Drift: %s %s (", plural(n, "path"), verb)
	for i, s := range subjects[:min(3, len(subjects))] {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(b, "%s: %s", shorten(s, maxSubject), strings.Join(kinds[s], ", "))
	}
	if n > 3 {
		b.WriteString("; …")
	}
	b.WriteString(")")
}

// writeCaveats adds what limits the state just written: files still being
// verified, watches exhausted, a refused config, a lost bus.
func writeCaveats(b *strings.Builder, in statusInput) {
	switch {
	case in.pending > 0:
		fmt.Fprintf(b, "; verifying %s (", plural(in.pending, "large file"))
		for i, p := range in.pendingPaths {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(shorten(p, maxPending))
		}
		if in.pending > len(in.pendingPaths) {
			b.WriteString(", …")
		}
		b.WriteString(")")
	case in.reading > 0:
		// Versions already judged, read again (a periodic check): what
		// is known of them holds meanwhile.
		fmt.Fprintf(b, "; reading %s", plural(in.reading, "large file"))
	}
	if in.accountLock != "" {
		fmt.Fprintf(b, "; users and groups wait for their writer's lock %s", in.accountLock)
	}
	if in.polled > 0 {
		fmt.Fprintf(b, "; polling %s: inotify watches exhausted", plural(in.polled, "directory"))
	}
	if in.configBlind {
		b.WriteString("; desired-state files not watched (inotify watches exhausted): reload to apply changes")
	}
	if in.parts != "" {
		b.WriteString("; " + in.parts)
	}
	switch {
	case in.loadFailed != "" && in.noState:
		// Said where the line starts.
	case in.loadFailed != "" && in.restored:
		fmt.Fprintf(b, "; config refused (%s), checking against the last good one, from an earlier run", in.loadFailed)
	case in.loadFailed != "":
		fmt.Fprintf(b, "; new config refused (%s), checking against the last good one", in.loadFailed)
	}
	if in.loading {
		b.WriteString("; reading the desired state again")
	}
	if in.excluded > 0 {
		fmt.Fprintf(b, "; %s excluded", plural(in.excluded, "declared path"))
	}
	switch {
	case in.exclRefused != "" && in.exclKept:
		fmt.Fprintf(b, "; exclusions refused (%s), keeping the last good ones", in.exclRefused)
	case in.exclRefused != "":
		fmt.Fprintf(b, "; exclusions refused (%s): only --exclude applies", in.exclRefused)
	}
	switch {
	case in.unitsDown && in.apiDown:
		b.WriteString("; bus unavailable, reconnecting: unit enablement not checked, drift-monitor status cannot answer")
	case in.unitsDown:
		b.WriteString("; systemd unreachable over D-Bus, reconnecting: unit enablement not checked")
	case in.apiDown:
		b.WriteString("; D-Bus API off the bus, reconnecting: drift-monitor status cannot answer")
	}
}

// maxSubject bounds a subject in the status line: three long paths must
// leave room, in the 1024 bytes systemd is sent (notify.MaxStatus), for
// what follows them (polling, a refused config, a lost bus).
const maxSubject = 160

// maxPending bounds a path being verified in the status line, which names
// up to three after as many drifted subjects.
const maxPending = 80

// shorten cuts s to at most max bytes by taking out its middle: the start
// and the end of a path (its file name) tell most.
func shorten(s string, max int) string {
	const ellipsis = "…"
	if len(s) <= max {
		return s
	}
	head := (max - len(ellipsis)) / 3
	tail := len(s) - (max - len(ellipsis) - head)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + ellipsis + s[tail:]
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
