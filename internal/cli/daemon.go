package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/daemon"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/mcd"
	"github.com/drift-monitor/drift-monitor/internal/notify"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
	"github.com/drift-monitor/drift-monitor/internal/systemd"
)

func runDaemon(ctx context.Context, args []string, std Stdio) int {
	fs := newFlags("daemon", std.Err)
	o := daemon.Options{Version: Version}
	f := daemonFlags(fs, &o)
	if code, ok := parse(fs, args); !ok {
		if code == ExitFailed {
			code = ExitUsage
		}
		return code
	}
	if !f.check(fs, &o, std) {
		return ExitUsage
	}
	// Not assigned when nil: a nil *statecache.Cache in the interface
	// would be a cache that keeps nothing, and costs the hashing.
	cache := statecache.Default()
	if *f.noCache {
		cache = nil
	}
	if cache != nil {
		cache.Mode = statecache.ModeLazy
		o.Cache = cache
	}

	level := slog.LevelInfo
	if *f.debug {
		level = slog.LevelDebug
	}
	o.Log = slog.New(journal.NewHandler(std.Err, journal.WithLevel(level)))
	var err error
	if o.DigestKey, err = hostKey(); err != nil {
		o.Log.Warn(fmt.Sprintf("no digest key, secret contents get no digests: %v", err))
	}
	o.FirstBoot = firstBoot()
	if cache != nil {
		cache.Log = o.Log
	}
	o.Notify = notify.New()
	closeSystemd := connectSystemd(ctx, &o)
	defer closeSystemd()
	if o.OnDrift != "" && o.Hook == nil {
		// Not booted with systemd, or --root: a restart does not change
		// either.
		fmt.Fprintf(std.Err, "drift-monitor daemon: --on-drift needs systemd over D-Bus\n")
		return ExitConfig
	}

	reload, stopReload := reloadOnHUP(ctx)
	defer stopReload()
	stopPanic := panicOnSignal(ctx)
	defer stopPanic()
	return serveDaemon(ctx, o, *f.bus, reload)
}

// daemonFlagValues are the daemon's flags that are not daemon.Options fields
// (or not yet: configs and labels are checked first).
type daemonFlagValues struct {
	configs             multiFlag
	labels              *string
	bus, debug, noCache *bool
	image               imageFlag
}

// daemonFlags declares the daemon's flags on fs, into o where they are
// options.
func daemonFlags(fs *flag.FlagSet, o *daemon.Options) *daemonFlagValues {
	f := &daemonFlagValues{}
	fs.Var(&f.configs, "config", "desired config `PATH` (file or directory; repeatable); replaces the default locations")
	fs.StringVar(&o.Root, "root", "/", "monitor the tree at `DIR` as if it were / (for tests; enablement is then computed offline)")
	fs.DurationVar(&o.Interval, "interval", time.Hour, "time between periodic full checks, the safety net (0 disables)")
	fs.DurationVar(&o.FileattrInterval, "fileattr-interval", 2*time.Second, "time between sweeps of the immutable and append-only flags (chattr), which inotify never reports (0: full checks only)")
	fs.DurationVar(&o.Settle, "settle", 3*time.Second, "how long a file being written must stay quiet, unclosed, before it is checked anyway")
	fs.DurationVar(&o.PollInterval, "poll-interval", 10*time.Second, "polling period for directories that could not be watched (inotify limit)")
	o.Exclude = exclude.DefaultOptions()
	o.Exclude.Register(fs)
	fs.BoolVar(&o.CheckMCDCertificates, checkMCDCertsFlag, false, checkMCDCertsUsage)
	fs.StringVar(&o.OnDrift, "on-drift", "", "start the systemd `UNIT` when drift appears")
	fs.StringVar(&o.InhibitDir, "inhibit-dir", inhibit.Dir, "`DIR` of inhibitor lock files")
	// The default comes from the environment so that the attribution
	// drop-in composes with others that replace ExecStart (metrics).
	attrDefault := "off"
	if v := os.Getenv("DRIFT_MONITOR_ATTRIBUTION"); v != "" {
		attrDefault = v
	}
	fs.StringVar(&o.Attribution, "attribution", attrDefault, "attribute drift to its writers: `MODE` audit (the kernel's audit records; needs CAP_AUDIT_READ and CAP_AUDIT_CONTROL, see attribution.conf) or off; default $DRIFT_MONITOR_ATTRIBUTION, else off")
	fs.StringVar(&o.MetricsTextfile, "metrics-textfile", "", "write Prometheus metrics to `PATH` (ending in .prom) for node_exporter's textfile collector")
	fs.StringVar(&o.MCD.Mode, "mcd", "auto", "follow the machine-config daemon's updates: `MODE` auto (when a --config is its currentconfig), on or off")
	fs.DurationVar(&o.MCD.Timeouts.Update, "mcd-update-timeout", mcd.DefaultTimeouts.Update, "longest an MCD update may drain and write before reports resume")
	fs.DurationVar(&o.MCD.Timeouts.Post, "mcd-post-timeout", mcd.DefaultTimeouts.Post, "longest after the rename of currentconfig (or a rollback) before reports resume")
	fs.DurationVar(&o.MCD.Timeouts.Reboot, "mcd-reboot-timeout", mcd.DefaultTimeouts.Reboot, "longest an announced reboot may take to come")
	fs.DurationVar(&o.MCD.Timeouts.Boot, "mcd-boot-timeout", mcd.DefaultTimeouts.Boot, "longest after a boot (or an MCD restart) before the MCD validates the disk")
	fs.DurationVar(&o.MCD.Timeouts.Quiet, "mcd-quiet", mcd.DefaultTimeouts.Quiet, "quiet that ends a rollback of currentconfig")
	fs.DurationVar(&o.MCD.Timeouts.HoldDown, "mcd-hold-down", mcd.DefaultTimeouts.HoldDown, "hold of a rename or a new drift when the journal cannot be read")
	f.bus = fs.Bool("bus", true, "export the D-Bus API on the system bus ($DBUS_SYSTEM_BUS_ADDRESS)")
	f.debug = fs.Bool("debug", false, "log debug records")
	f.noCache = fs.Bool("no-cache", false, "parse the config even when the state derived from these exact bytes is cached")
	// A usage error exits ExitUsage, not check's 2: the unit restarts the
	// daemon after every exit but ExitUsage and ExitConfig (see cli.go).
	f.labels = labelCompareFlag(fs)
	fs.Var(&f.image, "image", "the OS image's /etc: --image=notice (undeclared changes are notices), =drift (they are drift) or =off; default: "+image.SettingsFile+"'s mode, read at every load (notice without one)")
	return f
}

// check refuses the parsed flags that the daemon could not use (saying why
// on std.Err) and completes o with the others.
func (f *daemonFlagValues) check(fs *flag.FlagSet, o *daemon.Options, std Stdio) bool {
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "drift-monitor daemon: unexpected argument %q\n", fs.Arg(0))
		return false
	}
	if *f.labels != "type" && *f.labels != "full" {
		fmt.Fprintf(std.Err, "drift-monitor daemon: --label-compare %q: want type or full\n", escape.Text(*f.labels))
		return false
	}
	o.LabelFull = *f.labels == "full"
	if f.image.list {
		fmt.Fprintf(std.Err, "drift-monitor daemon: --image: want notice, drift or off (listing is check --image)\n")
		return false
	}
	o.Image = f.image.mode
	o.Configs = f.configs
	root, err := absRoot(o.Root)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor daemon: %s\n", escape.Text(err.Error()))
		return false
	}
	o.Root = root
	if o.Attribution == "audit" {
		// systemd's StateDirectory= (the unit's /var/lib/drift-monitor).
		if dir := os.Getenv("STATE_DIRECTORY"); dir != "" {
			o.AuditCanary = filepath.Join(strings.SplitN(dir, ":", 2)[0], "audit-canary")
		} else if st, err := os.Stat("/var/lib/drift-monitor"); err == nil && st.IsDir() {
			o.AuditCanary = "/var/lib/drift-monitor/audit-canary"
		}
	}
	if o.Attribution != "off" && o.Attribution != "audit" {
		fmt.Fprintf(std.Err, "drift-monitor daemon: --attribution %s: must be audit or off\n", escape.Text(o.Attribution))
		return false
	}
	// systemd's RuntimeDirectory= (the unit's /run/drift-monitor), which a
	// reboot empties: what the MCD follower journaled in this boot.
	if dir := os.Getenv("RUNTIME_DIRECTORY"); dir != "" {
		o.MCD.NotesFile = filepath.Join(strings.SplitN(dir, ":", 2)[0], "mcd-notes")
	}
	switch o.MCD.Mode {
	case "auto", "on", "off":
	default:
		fmt.Fprintf(std.Err, "drift-monitor daemon: --mcd %s: want auto, on or off\n", o.MCD.Mode)
		return false
	}
	if p := o.MetricsTextfile; p != "" && (!filepath.IsAbs(p) || filepath.Ext(p) != ".prom") {
		// node_exporter reads only *.prom files of its directory: any
		// other name would be written and never scraped.
		fmt.Fprintf(std.Err, "drift-monitor daemon: --metrics-textfile %s: want an absolute path ending in .prom (node_exporter's textfile collector reads no other)\n", p)
		return false
	}
	return true
}

// connectSystemd gives o the systemd manager (units, the on-drift hook) and,
// for audit attribution, logind, when the daemon watches the live host of a
// systemd boot; the returned func closes them.
func connectSystemd(ctx context.Context, o *daemon.Options) (closeAll func()) {
	if !liveHost(o.Root) || !systemd.Booted() {
		return func() {}
	}
	// Kept connected, and subscribed, across restarts of the bus; the
	// daemon journals when it is lost and back (its first attempt's
	// failure included).
	c := systemd.Dial(ctx)
	o.Units, o.Hook = c, c
	if o.Attribution != daemon.AttributionAudit {
		return func() { c.Close() }
	}
	l := &logind{}
	o.Sessions = l
	return func() { l.Close(); c.Close() }
}

// reloadOnHUP turns SIGHUP into a reload request on the returned channel
// (one pending at most) until ctx ends; stop stops the signal's delivery.
func reloadOnHUP(ctx context.Context) (reload chan struct{}, stop func()) {
	reload = make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-hup:
				select {
				case reload <- struct{}{}:
				default:
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return reload, func() { signal.Stop(hup) }
}

// serveDaemon runs the daemon of o (on the bus if bus) until ctx ends; it
// returns the exit code.
func serveDaemon(ctx context.Context, o daemon.Options, bus bool, reload <-chan struct{}) int {
	d, err := daemon.New(o)
	if err != nil {
		o.Log.Error(err.Error())
		return 1
	}
	defer d.Close()
	if bus {
		// Kept on the bus across its restarts, as the systemd connection is.
		srv := dbusapi.Serve(ctx, d, dbusapi.Options{InhibitDir: o.InhibitDir, Version: Version})
		defer srv.Close()
		d.SetPublisher(srv)
	}
	if err := d.Run(ctx, reload); err != nil {
		o.Log.Error(err.Error())
		return 1
	}
	return 0
}

// liveHost reports whether dir is the running host's / (however it is
// spelled: "/", "/.", a link to it), as check and reconcile tell it.
func liveHost(dir string) bool {
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		return false // the daemon says why when it opens it
	}
	defer r.Close()
	return r.IsHost()
}

// testPanicEnv, set to "SIGUSR2" in the daemon's environment, makes the
// daemon panic when it receives SIGUSR2: how the systemd tier proves that a
// daemon dead of a panic (exit status 2, as the Go runtime exits) is
// restarted (test/systemd/restart_test.go). No unprivileged user can use
// it: the service's environment comes from its unit and drop-ins (root's
// files) or `systemctl set-environment` (root), and only root may signal a
// process running as root; a user's own `drift-monitor daemon` can only
// crash itself. Without it, SIGUSR2 is ignored, as Go ignores it.
const testPanicEnv = "DRIFT_MONITOR_TEST_PANIC"

// panicOnSignal arms testPanicEnv's trigger when it is set; the function
// returned disarms it.
func panicOnSignal(ctx context.Context) (stop func()) {
	if os.Getenv(testPanicEnv) != "SIGUSR2" {
		return func() {}
	}
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	done := make(chan struct{})
	go func() {
		select {
		case <-usr2:
			panic(testPanicEnv + "=SIGUSR2 and SIGUSR2 received: a test's panic")
		case <-ctx.Done():
		case <-done:
		}
	}()
	return func() { signal.Stop(usr2); close(done) }
}
