package journal

import (
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// MESSAGE_IDs, one per record type. They were generated once with
// `journalctl --new-id128` and must never change: admins filter on them
// (`journalctl MESSAGE_ID=…`) and the catalog is keyed by them.
const (
	// MsgStarted: the daemon started and is loading its desired state.
	MsgStarted = "8b0b39fbb9b249ac86ffc0286dff375a"
	// MsgReady: the first full check is done (READY=1 was sent).
	MsgReady = "e8dfcfc985ce42489b66712d946e4a75"
	// MsgDriftResolved: an entry that drifted matches again.
	MsgDriftResolved = "b18cc3fb8eed46159699a7acbb8c0764"
	// MsgReloaded: the desired state was re-read (SIGHUP, systemctl reload,
	// the last inhibitor released).
	MsgReloaded = "cf5e743c6b274f0b899d2ddd43d6a0ab"
	// MsgLoadFailed: the desired state or the exclusions could not be
	// loaded; the last good one stays in force.
	MsgLoadFailed = "caa901836f56409eaf593ca3c63f64e7"
	// MsgLoadSlow: loading the desired state took long (it names the
	// largest config file); the daemon kept checking meanwhile.
	MsgLoadSlow = "80ed750a34534bdfb2c7c56102891828"
	// MsgWatchesExhausted: inotify watches ran out; some paths are polled.
	MsgWatchesExhausted = "e351ea282f9b47caac4ae2f832c85719"
	// MsgWatchesRestored: every directory is watched again; polling stopped.
	MsgWatchesRestored = "754f294c407544c99e3fa417f86e651e"
	// MsgQueueOverflow: the inotify queue overflowed; a full check follows.
	MsgQueueOverflow = "f66f7d5cb417444a82b9e039579ad67f"
	// MsgInhibited: an inhibitor was taken; drift is not reported meanwhile.
	MsgInhibited = "6715476f77304f95829d61c3e13b9ce7"
	// MsgResumed: the last inhibitor was released; monitoring resumed.
	MsgResumed = "c2585180d8b94e96a8ddc5ba2a2cfd1c"
	// MsgStopping: the daemon is shutting down.
	MsgStopping = "5b1ec22f3ee24526bcd9728bc485c97a"
	// MsgHookFailed: the on-drift unit could not be started.
	MsgHookFailed = "65967b676b2c4957b58a49d55c7eb400"
	// MsgCheckFailed: a check (or part of one) could not be done.
	MsgCheckFailed = "32bc281c85da42438efffa441666fd57"
	// MsgBusLost: a connection to the system bus was lost (BUS_LINK:
	// systemd or api); the daemon reconnects.
	MsgBusLost = "68ba40b2f56244cdaa2dee8d2c5b06fa"
	// MsgBusRestored: that connection is back.
	MsgBusRestored = "29e509fc37324813b3c7b972547784a4"
	// MsgConfigUnwatched: the desired-state locations cannot be watched;
	// changes to them apply on reload only.
	MsgConfigUnwatched = "4e2fbabfa2214bdc8802dd91fdee3b74"
	// MsgInhibitorsUnwatched: the inhibitor lock files cannot be followed;
	// update tools cannot inhibit monitoring.
	MsgInhibitorsUnwatched = "66dfe467a72a46b79034c08b1e0a1e26"
	// MsgInhibitorsRewatched: the inhibitor directory was removed or
	// replaced and the daemon follows the new one; or it follows the
	// directory again after it could not.
	MsgInhibitorsRewatched = "1f2393e7ffa04a159bed229bae376beb"
	// MsgNotice: something declared is not checked, or not fully (DRIFT_KIND
	// unverifiable, not-checked, not-applicable), or takes effect at the
	// next boot (reboot-pending), or can never be done (cannot-enable); or a
	// fact about the OS image (same-image, finalization-failed), or what a
	// staged deployment's /etc merge will undo (merge-loss).
	MsgNotice = "a094d4906b084c73bb73fef724cd195b"
	// MsgReconciled: `drift-monitor reconcile` released its inhibitor
	// and drift the daemon knew of is gone: it was repaired.
	MsgReconciled = "6de2f04fd46148ba9b38c78757a2fed8"
	// MsgMetricsFailed: the metrics textfile could not be written
	// (METRICS_FILE); said once until a write succeeds again.
	MsgMetricsFailed = "0cca72b05fee42498754884e4b671551"
	// MsgConfigIgnored: a file in a desired-state directory is not loaded
	// (its name says it is no config); logged once per file.
	MsgConfigIgnored = "4371585d763144b78d04d38b56da5a3a"
	// MsgNothingToWatch: no config file at all: nothing is declared, nothing
	// is watched, and the state is "unconfigured", not clean.
	MsgNothingToWatch = "e2318ddbe00c48e489fdc0de81db0771"
	// MsgMCD: what the follower of the machine-config daemon's updates has
	// to say: a phase that timed out, a rollback, a journal it cannot read.
	MsgMCD = "0979dabaa67b467995d4fc6c3d204d4b"
	// MsgAttribution: the state of --attribution=audit changed
	// (ATTRIBUTION_STATE), or its audit rules were removed and added again.
	MsgAttribution = "aa8b2d101a354031a9476fa770a58277"
	// MsgChangeDenied: an audited write to a declared path was denied
	// (--attribution=audit): nothing changed, someone tried.
	MsgChangeDenied = "5943f7f8e3b64a67a7dfc381cfa579f6"
	// MsgUndeclared: a path of /etc differs from the OS image's /etc and
	// no config declares it (DRIFT_KIND undeclared), a notice;
	// MsgUndeclaredGone: it no longer does. Under --image=drift it is
	// drift instead, with the drift records of model.KindUndeclared.
	MsgUndeclared     = "5ea6c596359c4d5ab7c1abb524279e15"
	MsgUndeclaredGone = "700af2fa3c1e453ea8870bfbbb232209"
	// MsgImage: what the comparison with the OS image has to say of
	// itself: the baseline found or unavailable, re-read after an OS
	// update, an rpm transaction or a confext refresh, reports held while
	// a transaction runs, directories it cannot watch.
	MsgImage = "4237923fbbd34d5ba171981be3fc4509"
)

// Catalog header values shared by every entry.
const (
	CatalogDefinedBy     = "drift-monitor"
	CatalogSupport       = "https://github.com/drift-monitor/drift-monitor/issues"
	CatalogDocumentation = "man:drift-monitor(8)"
)

// CatalogEntry describes one record type for journalctl -x.
type CatalogEntry struct {
	ID   string // the MESSAGE_ID
	Name string // the Go constant (or the row of model.Kinds), for humans and tests
	// Record is the record's type (FieldRecord): the same for the drift
	// of every kind of entry, which has a MESSAGE_ID of its own.
	Record  string
	Subject string // one line; may use @FIELD@ of the record
	Body    string // paragraphs separated by blank lines; may use @FIELD@
}

// The record types the daemon's drift records have (FieldRecord), each
// the same for every kind of entry: what a consumer selects drift by.
const (
	RecordDriftDetected = "drift-detected"
	RecordDriftResolved = "drift-resolved"
	RecordNotice        = "notice"
)

// Catalog lists every record type: the constants' in their order, with,
// after MsgReady, the drift of each kind of entry (model.Kinds).
var Catalog = catalog(records)

// DriftDetected is the MESSAGE_ID of the record of a drift of an entry of
// kind k: one per kind, so that journalctl -x explains the kind at hand
// (journalctl looks the catalog up by the record's MESSAGE_ID alone:
// systemd's man/sd_journal_get_catalog.xml, "by using the MESSAGE_ID=
// field of the current journal entry"). Consumers that want every drift
// select it by FieldRecord.
func DriftDetected(k model.Kind) string { return k.Means().MessageID }

// recordOf maps every MESSAGE_ID of Catalog to its record type.
var recordOf = func() map[string]string {
	m := make(map[string]string, len(Catalog))
	for _, e := range Catalog {
		m[e.ID] = e.Record
	}
	return m
}()

// RecordOf is the record type of the MESSAGE_ID id ("" for none of
// Catalog's).
func RecordOf(id string) string { return recordOf[id] }

// catalog completes the fixed records with their types and adds, after
// MsgReady, one record per kind of entry that reports drift.
func catalog(fixed []CatalogEntry) []CatalogEntry {
	var out []CatalogEntry
	for _, e := range fixed {
		e.Record = recordName(strings.TrimPrefix(e.Name, "Msg"))
		out = append(out, e)
		if e.ID != MsgReady {
			continue
		}
		for i := range model.Kinds {
			if m := &model.Kinds[i]; m.MessageID != "" {
				out = append(out, CatalogEntry{ID: m.MessageID, Name: "model.Kinds[" + string(m.Kind) + "]",
					Record: RecordDriftDetected, Subject: m.Subject, Body: kindBody(m)})
			}
		}
	}
	return out
}

// recordName is a constant's name in lower case, words joined by "-",
// an acronym one word: DriftResolved is drift-resolved, MCD is mcd.
func recordName(name string) string {
	upper := func(i int) bool { return i >= 0 && i < len(name) && name[i] >= 'A' && name[i] <= 'Z' }
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if upper(i) && i > 0 && (!upper(i-1) || i+1 < len(name) && !upper(i+1)) {
			b.WriteByte('-')
		}
		b.WriteByte(strings.ToLower(name[i : i+1])[0])
	}
	return b.String()
}

// kindBody is the catalog text of a kind's drift: its row's, then what to
// do, which its row says too, filled to lines of catalogWidth.
func kindBody(m *model.Meaning) string {
	do := `Find out what changed it (an admin, a package, a tool), then either restore the desired state ("drift-monitor reconcile @DRIFT_PATH@" ` +
		m.Repair.String() + `) or change the desired configuration under /etc/drift-monitor/desired.d/ and run "systemctl reload drift-monitor".`
	switch m.Repair {
	case model.NoRepair:
		do = `"drift-monitor reconcile" leaves it: ` + m.NotRepaired + `.`
	case model.RepairNamed:
		do = `Find out who changed it, then either declare it (a config under /etc/drift-monitor/desired.d/, and "systemctl reload drift-monitor") or put back the image's default ("drift-monitor reconcile --image @DRIFT_PATH@"; a plain reconcile never does).`
	}
	if m.Source == model.FromNode || m.Source == model.FromImage {
		do += ` A kind of difference expected at some paths is excluded there with a KIND:PATTERN line in /etc/drift-monitor/exclude.conf.`
	}
	do += ` Update tools wrap planned changes in "drift-monitor inhibit", so that they are not reported.`
	class := `Every drift record, whatever the kind of entry, has DRIFT_MONITOR_RECORD=drift-detected; it is logged once more when it is resolved (drift-resolved).`
	return strings.TrimSpace(m.Body) + "\n\n" + fill(do) + "\n\n" + fill(class)
}

// catalogWidth is the width the catalog's composed paragraphs are filled to.
const catalogWidth = 76

// fill breaks a paragraph into lines of at most catalogWidth bytes (a
// longer word stands alone).
func fill(p string) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(p) {
		switch {
		case n == 0:
		case n+1+len(w) > catalogWidth:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// records are the record types of the constants, in their order.
var records = []CatalogEntry{
	{
		ID: MsgStarted, Name: "MsgStarted",
		Subject: "drift-monitor started",
		Body: `The drift-monitor daemon started. It loads the desired configuration from
/usr/lib/drift-monitor/desired.d/ and /etc/drift-monitor/desired.d/ (or the
--config paths in its command line), starts watching the declared paths and
units, and runs a first full check.

The service reports that it is ready once that first check is done.`,
	},
	{
		ID: MsgReady, Name: "MsgReady",
		Subject: "First full check done",
		Body: `drift-monitor finished its first full check of the machine against the
desired configuration and told systemd that it is ready. From now on each
drift is logged once when it appears and once when it is resolved.

The status line of "systemctl status drift-monitor" shows the current
summary; "drift-monitor check" prints the full report.`,
	},
	{
		ID: MsgDriftResolved, Name: "MsgDriftResolved",
		Subject: "Configuration drift resolved: @DRIFT_PATH@",
		Body: `@DRIFT_PATH@ matches the machine's desired configuration again: the
drift reported earlier for it is resolved, either because the entry was
restored or because the desired configuration changed.

No action is needed.`,
	},
	{
		ID: MsgReloaded, Name: "MsgReloaded",
		Subject: "Desired configuration reloaded",
		Body: `drift-monitor re-read its desired configuration, because it was asked to
("systemctl reload drift-monitor", SIGHUP), because the desired-state
directories changed, or because the last inhibitor was released, and ran a
full check against it.

No action is needed.`,
	},
	{
		ID: MsgLoadFailed, Name: "MsgLoadFailed",
		Subject: "Desired configuration could not be loaded",
		Body: `drift-monitor could not load its desired configuration, or its exclusion
file (/etc/drift-monitor/exclude.conf). The record's message names the file,
the line for a bad pattern, and what is wrong. The daemon keeps checking
against the last configuration that loaded. When this happens at start (a
restart with the bad file in place), that is the last configuration an
earlier run loaded, which the state cache keeps; the record says so, or
that there is none and nothing is checked. For a refused exclusion file,
it checks against the new configuration with the last good exclusions (at
start, only those of --exclude: every other declared path is watched and
reported).

Fix the named file ("drift-monitor check --config FILE" shows the same
error, "drift-monitor check" the exclusion file's); the daemon reloads when
the file is written.`,
	},
	{
		ID: MsgLoadSlow, Name: "MsgLoadSlow",
		Subject: "Loading the desired configuration took long",
		Body: `Reading, parsing and deriving the desired configuration took longer than
a large configuration needs. The record names the largest configuration file
and says whether the configuration was loaded or refused. A reload runs beside
the daemon's checks, which go on against the configuration in force until it
is done.

If it happens at every reload, look at the file named: a configuration of
very many entries, or one that is not what it should be.`,
	},
	{
		ID: MsgWatchesExhausted, Name: "MsgWatchesExhausted",
		Subject: "inotify watches exhausted: polling instead",
		Body: `drift-monitor could not place all the inotify watches it needs because the
per-user limit fs.inotify.max_user_watches was reached. It polls the
directories it could not watch instead, so changes there are seen later and
at a higher cost, but they are still seen.

Raise the limit, for example with a file in /etc/sysctl.d/ that sets
fs.inotify.max_user_watches, and apply it with "sysctl --system". The daemon
places the missing watches by itself when it can.`,
	},
	{
		ID: MsgWatchesRestored, Name: "MsgWatchesRestored",
		Subject: "All paths are watched again",
		Body: `Every directory drift-monitor needs is watched with inotify again; it stopped
polling.

No action is needed.`,
	},
	{
		ID: MsgQueueOverflow, Name: "MsgQueueOverflow",
		Subject: "inotify queue overflowed: full check",
		Body: `The kernel dropped inotify events for drift-monitor because its event queue
overflowed (fs.inotify.max_queued_events), usually during a burst of file
changes. Because events were lost, drift-monitor runs a full check, so no
drift is missed.

If this happens often, raise fs.inotify.max_queued_events.`,
	},
	{
		ID: MsgInhibited, Name: "MsgInhibited",
		Subject: "Drift monitoring inhibited",
		Body: `An update tool took an inhibitor ("drift-monitor inhibit"): while any
inhibitor is held, drift is neither reported nor acted on, so that the
transition is not mistaken for drift. The record and the status line say who
holds it and why.

An inhibitor is released when its holder exits, even when it is killed.`,
	},
	{
		ID: MsgResumed, Name: "MsgResumed",
		Subject: "Drift monitoring resumed",
		Body: `The last inhibitor was released. drift-monitor re-read its desired
configuration, since the transition may have changed it, and ran a full
check.

No action is needed.`,
	},
	{
		ID: MsgStopping, Name: "MsgStopping",
		Subject: "drift-monitor stopping",
		Body: `The drift-monitor daemon is shutting down. Until it runs again, drift on this
machine is not detected.`,
	},
	{
		ID: MsgHookFailed, Name: "MsgHookFailed",
		Subject: "On-drift unit @DRIFT_UNIT@ could not be started",
		Body: `drift-monitor is configured to start a unit when drift appears, and starting
@DRIFT_UNIT@ failed. The record's message has the reason.

Check the unit with "systemctl status @DRIFT_UNIT@" and
"journalctl -u @DRIFT_UNIT@".`,
	},
	{
		ID: MsgCheckFailed, Name: "MsgCheckFailed",
		Subject: "Check could not be done",
		Body: `drift-monitor could not check part of the machine, for example because a
path could not be read, systemd could not be asked about a unit, or watching
failed. The record's message names what failed. Entries that could not be
checked are neither reported as drift nor as clean.

Fix the cause named in the message; the next check retries.`,
	},
	{
		ID: MsgBusLost, Name: "MsgBusLost",
		Subject: "Lost the system bus (@BUS_LINK@)",
		Body: `drift-monitor lost a connection to the system bus, usually because
dbus-daemon (or dbus-broker) was restarted. BUS_LINK says which: "systemd"
is the connection used to ask systemd about unit enablement, and while it is
down the enablement of units is not checked (what was known stays; a bus
error is never reported as drift); "api" is the daemon's own D-Bus API, and
while it is down "drift-monitor status" cannot reach the daemon. The status
line says so meanwhile.

The daemon keeps running and reconnects by itself, with a backoff of at most
a few seconds between attempts. If the bus stays away, start it again
("systemctl start dbus").`,
	},
	{
		ID: MsgBusRestored, Name: "MsgBusRestored",
		Subject: "Back on the system bus (@BUS_LINK@)",
		Body: `drift-monitor is connected to the system bus again. For the "systemd"
connection it subscribed to systemd's signals again and checks the enablement
of every declared unit at once, since a change made while it was away went
unseen; for the "api" connection it claimed its bus name again.

No action is needed.`,
	},
	{
		ID: MsgConfigUnwatched, Name: "MsgConfigUnwatched",
		Subject: "Desired configuration not watched",
		Body: `drift-monitor could not watch the locations of its desired configuration
(/usr/lib/drift-monitor/desired.d/, /etc/drift-monitor/desired.d/, the
--config paths and the exclusion file). The record's message says why. It
keeps monitoring against the configuration it loaded, but a change to those
files is applied only when it is reloaded.

Run "systemctl reload drift-monitor" after changing the desired
configuration, and fix the cause named in the message (often the inotify
limits, fs.inotify.max_user_instances or fs.inotify.max_user_watches).`,
	},
	{
		ID: MsgInhibitorsUnwatched, Name: "MsgInhibitorsUnwatched",
		Subject: "Inhibitors cannot be followed",
		Body: `drift-monitor could not follow the inhibitor lock files in its --inhibit-dir
(by default /run/drift-monitor/inhibit.d). The record's message names the
directory and the error. Meanwhile "drift-monitor inhibit" has no effect on
it: a planned change made by an update tool is reported as drift. When the
directory went wrong while the daemon ran (it was removed or replaced by
something it cannot follow), the daemon tries again every second and says
when it follows the directory again; when it went wrong at start, it tries
no more.

Fix the cause named in the message (and, if it was at start, restart
drift-monitor).`,
	},
	{
		ID: MsgInhibitorsRewatched, Name: "MsgInhibitorsRewatched",
		Subject: "Inhibitor directory followed anew",
		Body: `The directory of inhibitor lock files (--inhibit-dir, by default
/run/drift-monitor/inhibit.d) was removed, renamed away or replaced while
drift-monitor ran, and drift-monitor now follows the directory that has its
name (making it again, root's and mode 0700, if it was gone); or it follows
the directory again after it could not. Locks held in a directory that no
longer has the name no longer count: their inhibitors are released.

Nothing but root can remove or replace the directory. If no update tool or
administrator did it on purpose, find out who did.`,
	},
	{
		ID: MsgNotice, Name: "MsgNotice",
		Subject: "Not fully checked: @DRIFT_PATH@ (@DRIFT_KIND@)",
		Body: `Part of the desired configuration for @DRIFT_PATH@ is not checked, or not
fully, and this is not drift. DRIFT_KIND says why: "unverifiable" when the
declared content cannot be verified offline (a remote source without a
verification hash, a child config that was never fetched, kernel arguments
outside the live host), so only what else is declared (type, mode, owner) is
compared; "reboot-pending" when the next boot's kernel command line (or, for
a MachineConfig's osImageURL, kernelType or extensions, the next boot's
ostree deployment) already has what is declared but the running system does
not; "not-checked" for a MachineConfig's file that the machine-config
daemon's certificate writer owns (--check-mcd-certificates checks it);
"not-applicable" for a MachineConfig's OS fields on a host not booted
through ostree; "same-image" when the booted OS image is the declared one
under another name (the same manifest digest); "finalization-failed" when
the previous boot's ostree finalization failed, so the host did not boot the
deployment staged for it (the record's message has ostree's error; see
"journalctl -b -1 -u ostree-finalize-staged.service"); "merge-loss" when an
OS update is staged and the next boot's /etc merge will undo what is
declared: it will replace a declared file that is the booted image's default
with the new image's default (or remove it, where the new image has none),
keep a whole old file whose mode or owner only is declared, reset a
declared directory's mode or owner, or fail on a declared file where the
new image has a directory (the message says which,
and names the staged deployment; after the reboot the drift record of such
a file says that the merge replaced it); "cannot-enable" when
a unit declared enabled is disabled (or linked, or enabled in /run only)
and enabling it, as Ignition's preset does, would make no link that systemd
counts (a template without DefaultInstance= or Alias= wanted by plain
targets only, an instance of a template whose [Install] has only Alias=, an
Alias= name that is a link to another unit): it is so on a freshly
provisioned host too (where the first-boot record says that the unit was
enabled then, it is drift instead; without a record, the message says
that it cannot tell); "kept-metadata" when a
file declared without contents, which Ignition keeps as it finds it, carries
ACLs, extended attributes or chattr flags that are not Ignition's to set,
or when a file the machine-config daemon writes (it never relabels) has a
label other than the policy's default ("restorecon -F" sets it).
trusted.* extended attributes are listed only to a process with
CAP_SYS_ADMIN: without it they are "unverifiable", never clean.

The notice is logged once when it appears (again after a restart);
"drift-monitor check" lists every notice. To have the content checked,
declare it inline or give its source a verification hash; a pending reboot
resolves itself when the host is rebooted; for a template, declare the
instances to enable (foo@bar.service) or give it a DefaultInstance=; to keep
a declaration through the merge, declare it as a drop-in or with content
that differs from the image's default.`,
	},
	{
		ID: MsgReconciled, Name: "MsgReconciled",
		Subject: "Drift repaired by @INHIBIT_WHO@",
		Body: `"drift-monitor reconcile" put declared entries back the way Ignition would
have written them, and the drift the daemon had reported for them is gone.
The record's message lists what was repaired; INHIBIT_WHY says who ran it.

While it wrote, it held an inhibitor, so that the repair in flight was not
reported as drift; the daemon then re-read its desired configuration and
checked everything.

No action is needed. What it could not repair is still reported as drift.`,
	},
	{
		ID: MsgMetricsFailed, Name: "MsgMetricsFailed",
		Subject: "Metrics could not be written to @METRICS_FILE@",
		Body: `drift-monitor was asked (--metrics-textfile) to write its Prometheus metrics
to @METRICS_FILE@ for node_exporter's textfile collector, and writing failed;
the record's message has the reason. Monitoring goes on. The file it last
wrote is removed, since it no longer says how the host is: its series are
gone, which the shipped rule DriftMonitorDown reports. The record is written
once per cause (the operation and the system's error), until a write
succeeds again.

Check that the directory exists and that the unit may write to it
(ReadWritePaths=, see the drop-in shipped as an example in
/usr/share/doc/drift-monitor/).`,
	},
	{
		ID: MsgConfigIgnored, Name: "MsgConfigIgnored",
		Subject: "A file in a desired-state directory is not loaded",
		Body: `A file in /usr/lib/drift-monitor/desired.d/ or /etc/drift-monitor/desired.d/
(or a directory given with --config) is not read as part of the desired
configuration: its name is not that of a config. The record's message names
it and says why: a hidden file, a backup or a package manager's copy (x.ign~,
x.ign.rpmnew), a directory (they are not read recursively), or an extension
that is not loaded. Only *.ign, *.json, *.yaml and *.yml files are configs
(*.child files supply remote child configs).

Whatever the file declares is not checked. If it is meant as a config, rename
it; if not, move it out of the directory. Each file is logged once, when it
appears (again after a restart).`,
	},
	{
		ID: MsgNothingToWatch, Name: "MsgNothingToWatch",
		Subject: "No desired configuration: nothing to watch",
		Body: `drift-monitor found no config file in its desired-state locations
(/usr/lib/drift-monitor/desired.d/ and /etc/drift-monitor/desired.d/, or the
paths given with --config). Nothing is declared, so nothing is checked: the
daemon's state is "unconfigured", not "clean", and "drift-monitor status"
says so (exit status 1).

Install a config (an Ignition config, a MachineConfig, or Ignition's own
config cache: see drift-monitor-adopt.service) and run "systemctl reload
drift-monitor", or let the daemon notice it by itself. Files in those
directories that are not loaded are named in their own records.`,
	},
	{
		ID: MsgMCD, Name: "MsgMCD",
		Subject: "Following the machine-config daemon's update",
		Body: `On an OpenShift node whose desired state is the machine-config daemon's
/etc/machine-config-daemon/currentconfig, drift-monitor holds its reports
while the MCD applies an update (the internal inhibitor
"machine-config-daemon", from the MCD's "Starting update from A to B" to
the end it announces, through a reboot), and checks everything against the
new currentconfig at the release. This record says something about that:
a phase that did not end in time (a stuck or failed MCD: reports resume,
against currentconfig as it is), a rollback of currentconfig, or a journal
it cannot read (then only the renames of currentconfig are followed, each
held a few seconds, and an update whose writing takes longer is reported as
drift until its rename).

If the MCD is stuck, see "oc describe node" and the machine-config daemon's
pod log. See drift-monitor(8), "MACHINE-CONFIG DAEMON".`,
	},
	{
		ID: MsgAttribution, Name: "MsgAttribution",
		Subject: "Attribution of drift to its writers: @ATTRIBUTION_STATE@",
		Body: `drift-monitor runs with --attribution=audit: it adds audit watch rules
(key drift-monitor) for the declared paths and reads the kernel's audit
records, so that each drift names the process and login user that wrote it.

ATTRIBUTION_STATE says what it can claim: "ok"; "audit-disabled" (the
kernel's audit is off: auditctl -e 1); "rules-missing" (the rules could not
be added: locked with -e 2, then install "drift-monitor audit-rules" under
/etc/audit/rules.d/); "never-task" (an "-a never,task" rule exempts tasks
from auditing); "records-lost" (the kernel's lost counter grew, or
drift-monitor's audit socket overflowed: records came faster than it read
them, and a larger net.core.rmem_max gives the socket more room);
"unavailable" (no audit netlink: the service needs CAP_AUDIT_READ,
CAP_AUDIT_CONTROL, AF_NETLINK and the host's network namespace, see the
attribution.conf drop-in). Until it is "ok", drift says its writer is
unknown and why.

When rules of drift-monitor are removed under it (auditctl -D), it adds
them again and says so with this record.`,
	},
	{
		ID: MsgUndeclared, Name: "MsgUndeclared",
		Subject: "Undeclared change to the image's /etc: @DRIFT_PATH@",
		Body: `@DRIFT_PATH@ differs from the OS image's /etc (DRIFT_UNDECLARED says
how: the attributes that differ, or added, or removed) and no desired config
declares it. The image's /etc is the booted deployment's /usr/etc on ostree
hosts (Fedora CoreOS, RHEL CoreOS, OpenShift nodes, bootc), the image's own
/etc on bootc's composefs backend, and the rpm database on hosts managed with
dnf, compared as "ostree admin config-diff" and "rpm -V" compare. Paths the
OS writes while it runs, what a merged confext provides, and what the first
boot left (drift-monitor adopt --image) are not reported.

By default this is a notice: the host is not "drifted". With
--image=drift it is drift (and reported with the drift records too). A
content is never shown: only what differs, and sizes.

Find out who changed it. Then declare it (a config under
/etc/drift-monitor/desired.d/), put back the image's default
("drift-monitor reconcile --image @DRIFT_PATH@"), or quiet the path with a
line "undeclared:@DRIFT_PATH@" in /etc/drift-monitor/exclude.conf. See
drift-monitor(8), "THE IMAGE".`,
	},
	{
		ID: MsgUndeclaredGone, Name: "MsgUndeclaredGone",
		Subject: "No longer an undeclared change: @DRIFT_PATH@",
		Body: `@DRIFT_PATH@ is again as the OS image has it, or a config now declares
it, or it is excluded: the undeclared change reported earlier is gone.`,
	},
	{
		ID: MsgImage, Name: "MsgImage",
		Subject: "Comparison with the OS image's /etc",
		Body: `What drift-monitor's comparison of /etc with the OS image has to say of
itself: which baseline it found (or why there is none: bootc's composefs
backend without the privilege to read the image's /etc, an rpm database
rpm cannot read), that it read the baseline again after an OS update, an rpm
transaction or a confext refresh, that it holds undeclared reports while an
rpm transaction (rpm's lock) or an ostree transaction (the sysroot's lock,
which rpm-ostree and bootc take) runs and compares everything at its end, or
that directories of /etc cannot be watched (inotify watches exhausted: full
checks find their changes). See drift-monitor(8), "THE IMAGE".`,
	},
	{
		ID: MsgChangeDenied, Name: "MsgChangeDenied",
		Subject: "Attempted change denied: @DRIFT_PATH@",
		Body: `A process tried to change @DRIFT_PATH@ and the kernel denied it (the audit
record says success=no). Nothing changed, so this is no drift. The
DRIFT_WRITER_* fields name the process and its login user (DRIFT_WRITER_AUID,
kept across sudo, su and setpriv).`,
	},
}

// CatalogText renders Catalog in systemd's message catalog format
// (systemd.catalog(7)), ready to be installed as
// /usr/lib/systemd/catalog/drift-monitor.catalog and picked up by
// `journalctl --update-catalog`.
func CatalogText() string {
	var b strings.Builder
	b.WriteString("# Message catalog for drift-monitor's journal records (see systemd.catalog(7)).\n")
	b.WriteString("# Generated from internal/journal.Catalog; do not edit by hand.\n")
	for _, e := range Catalog {
		b.WriteString("\n-- " + e.ID + "\n")
		b.WriteString("Subject: " + e.Subject + "\n")
		b.WriteString("Defined-By: " + CatalogDefinedBy + "\n")
		b.WriteString("Support: " + CatalogSupport + "\n")
		b.WriteString("Documentation: " + CatalogDocumentation + "\n")
		b.WriteString("\n")
		b.WriteString(strings.TrimSpace(e.Body) + "\n")
	}
	return b.String()
}
