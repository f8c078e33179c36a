// Package metrics turns the daemon's state into Prometheus metrics, through
// the Prometheus client library's registry and text exposition (never by
// hand), and writes them for node_exporter's textfile collector.
//
// It promises: every metric is a low-cardinality gauge or counter — no label
// ever carries a path, a unit or a user, whatever the number of declared
// paths; every state of drift_monitor_state is always present (0 or 1), and
// so is every kind of drift_monitor_drift_entries that an entry the desired
// state declares can report (its kind's row of model.Kinds), so that an
// alert on a series never sees it vanish while the desired state stays the
// same; a kind no declared entry can report has no series (it would only
// ever say 0), unless it is counted; and no sample carries a client-side
// timestamp (node_exporter refuses them in textfiles).
//
// It does not decide when the state is true enough to publish: the daemon
// writes nothing before its first full check, so that a restarted daemon on
// a drifted host never says "clean" (see internal/daemon/metrics.go).
package metrics

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Snapshot is the state the metrics show; the daemon fills it on its event
// loop.
type Snapshot struct {
	State string // one of dbusapi.States
	// Drift counts the current drift entries by kind; kinds not in it are 0.
	Drift map[drift.Kind]int
	// Declared are the kinds of entry the desired state declares: the
	// kinds of drift they can report have a series, 0 or not.
	Declared []model.Kind
	// LastCheck is when the last full check ended, LastChange when the set
	// of drift last changed; zero: not yet (the metric is then left out).
	LastCheck, LastChange time.Time
	WatchedPaths          int
	Units                 int
	ExcludedPaths         int  // declared paths the exclusions leave alone
	PolledDirs            int  // directories polled because inotify watches ran out
	WatchesExhausted      bool // the inotify watch limit was reached
	Inhibitors            int
	// InternalInhibitors are those of Inhibitors that drift-monitor's own
	// parts hold (the machine-config daemon's follower), each bounded by
	// its timeouts: the alert on a tool's inhibitor held too long leaves
	// them to an alert of their own.
	InternalInhibitors int
	LoadFailing        bool   // the last load of the desired state or the exclusions failed
	LoadFailures       uint64 // loads that failed since the daemon started
	// Attribution is the state of daemon --attribution=audit (one of
	// AttributionStates); "" with attribution off: no metric.
	Attribution string
}

// AttributionStates are the values of drift_monitor_attribution_state's
// label (internal/daemon/attribution.go says what each means).
var AttributionStates = []string{"ok", "unavailable", "audit-disabled", "rules-missing", "never-task", "records-lost", "canary-failed"}

const ns = "drift_monitor"

// The descriptions, one per metric; units in the names as Prometheus'
// naming conventions ask (https://prometheus.io/docs/practices/naming/).
var (
	descBuild = prometheus.NewDesc(ns+"_build_info",
		"A constant 1 labelled with the running drift-monitor's version and Go version.", []string{"version", "goversion"}, nil)
	descState = prometheus.NewDesc(ns+"_state",
		"1 for the monitor's current state, 0 for every other: "+strings.Join(dbusapi.States, ", ")+".", []string{"state"}, nil)
	descDrift = prometheus.NewDesc(ns+"_drift_entries",
		"Current drift entries by kind of difference, for each kind an entry the desired state declares can report; these kinds are notices, not drift: "+noticeKinds()+".", []string{"kind"}, nil)
	descLastCheck = prometheus.NewDesc(ns+"_last_full_check_timestamp_seconds",
		"When the last full check of every declared entry ended, in seconds since the epoch.", nil, nil)
	descLastChange = prometheus.NewDesc(ns+"_last_change_timestamp_seconds",
		"When the set of drift last changed (or the first check ended), in seconds since the epoch.", nil, nil)
	descWatched = prometheus.NewDesc(ns+"_watched_paths",
		"Declared paths the monitor checks.", nil, nil)
	descUnits = prometheus.NewDesc(ns+"_units",
		"Declared systemd units the monitor checks.", nil, nil)
	descExcluded = prometheus.NewDesc(ns+"_excluded_paths",
		"Declared paths the exclusions (exclude.conf, --exclude) leave alone: neither watched, checked nor reported.", nil, nil)
	descPolled = prometheus.NewDesc(ns+"_polled_directories",
		"Directories polled instead of watched because inotify watches ran out.", nil, nil)
	descExhausted = prometheus.NewDesc(ns+"_inotify_watches_exhausted",
		"1 while the inotify watch limit (fs.inotify.max_user_watches) keeps some directories polled.", nil, nil)
	descInhibitors = prometheus.NewDesc(ns+"_inhibitors",
		"Inhibitors held: while any is, drift is not reported.", nil, nil)
	descInternalInhibitors = prometheus.NewDesc(ns+"_internal_inhibitors",
		"Of the inhibitors held, those drift-monitor holds itself (the machine-config daemon's follower, while an update of the MCD is under way), each bounded by its timeouts.", nil, nil)
	descLoadFailing = prometheus.NewDesc(ns+"_desired_load_failing",
		"1 while the last load of the desired state or of the exclusions failed (the last good one is kept).", nil, nil)
	descAttribution = prometheus.NewDesc(ns+"_attribution_state",
		"With --attribution=audit: 1 for what attribution of drift to its writers can claim, 0 for every other: ok, unavailable, audit-disabled, rules-missing, never-task, records-lost, canary-failed.", []string{"state"}, nil)
	descLoadFailures = prometheus.NewDesc(ns+"_desired_load_failures_total",
		"Loads of the desired state that failed since the daemon started.", nil, nil)
)

// Registry is a Prometheus registry holding exactly one snapshot's metrics.
func Registry(s Snapshot, version string) *prometheus.Registry {
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(collector{s: s, version: version})
	return r
}

// collector emits one snapshot: the daemon's state is a value computed on
// its loop, so a const collector is all there is to it.
type collector struct {
	s       Snapshot
	version string
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuild, descState, descDrift, descLastCheck, descLastChange,
		descWatched, descUnits, descExcluded, descPolled, descExhausted, descInhibitors, descInternalInhibitors, descLoadFailing, descLoadFailures, descAttribution} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descBuild, 1, c.version, runtime.Version())
	for _, st := range dbusapi.States {
		gauge(descState, b2f(st == s.State), st)
	}
	for _, k := range Series(s.Declared, s.Drift) {
		gauge(descDrift, float64(s.Drift[k]), string(k))
	}
	if !s.LastCheck.IsZero() {
		gauge(descLastCheck, seconds(s.LastCheck))
	}
	if !s.LastChange.IsZero() {
		gauge(descLastChange, seconds(s.LastChange))
	}
	gauge(descWatched, float64(s.WatchedPaths))
	gauge(descUnits, float64(s.Units))
	gauge(descExcluded, float64(s.ExcludedPaths))
	gauge(descPolled, float64(s.PolledDirs))
	gauge(descExhausted, b2f(s.WatchesExhausted))
	gauge(descInhibitors, float64(s.Inhibitors))
	gauge(descInternalInhibitors, float64(s.InternalInhibitors))
	gauge(descLoadFailing, b2f(s.LoadFailing))
	ch <- prometheus.MustNewConstMetric(descLoadFailures, prometheus.CounterValue, float64(s.LoadFailures))
	if s.Attribution != "" {
		for _, st := range AttributionStates {
			gauge(descAttribution, b2f(st == s.Attribution), st)
		}
	}
}

// Series are the kinds of drift_monitor_drift_entries a state that
// declares entries of the kinds declared exports, in drift.Kinds' order:
// those the rows of declared report (model.Kinds), and any counted.
func Series(declared []model.Kind, counted map[drift.Kind]int) []drift.Kind {
	reported := map[drift.Kind]bool{}
	for _, k := range declared {
		for _, d := range k.Means().Drift {
			reported[drift.Kind(d)] = true
		}
	}
	var out []drift.Kind
	for _, k := range drift.Kinds {
		if reported[k] || counted[k] > 0 {
			out = append(out, k)
		}
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func seconds(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

// WriteTextfile writes the snapshot's metrics to path for node_exporter's
// textfile collector: to a temporary name in the same directory that does
// not end in ".prom" (the collector reads only *.prom), made mode 0644
// whatever the umask, then renamed into place, so that the collector never
// reads half a file. prometheus.WriteToTextfile does exactly that
// (client_golang prometheus/registry.go: os.CreateTemp with the file's name
// as the prefix, so a random suffix follows ".prom"; Chmod 0o644; Rename).
func WriteTextfile(path string, s Snapshot, version string) error {
	if err := prometheus.WriteToTextfile(path, Registry(s, version)); err != nil {
		return fmt.Errorf("writing metrics to %s: %w", path, err)
	}
	return nil
}

// Text renders the snapshot's metrics in the text exposition format (what
// the socket-activated endpoint serves).
func Text(s Snapshot, version string) ([]byte, error) {
	mfs, err := Registry(s, version).Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering metrics: %w", err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return nil, fmt.Errorf("rendering metrics: %w", err)
		}
	}
	return b.Bytes(), nil
}

// noticeKinds lists drift.Notices for descDrift's help text.
func noticeKinds() string {
	s := make([]string, len(drift.Notices))
	for i, k := range drift.Notices {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
