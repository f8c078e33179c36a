package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/digestkey"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/memlimit"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
)

func runCheck(ctx context.Context, args []string, std Stdio) int {
	fs := newFlags("check", std.Err)
	var configs multiFlag
	format := formatFlag("text")
	fs.Var(&configs, "config", "desired config `PATH` (file or directory; repeatable); replaces the default locations")
	root := fs.String("root", "/", "check the tree mounted at `DIR` as if it were /")
	fs.Var(&format, "format", "output `FORMAT`: text or json")
	noCache := fs.Bool("no-cache", false, "parse the config even when the state derived from these exact bytes is cached")
	checkCerts := fs.Bool(checkMCDCertsFlag, false, checkMCDCertsUsage)
	labels := labelCompareFlag(fs)
	excl := exclude.DefaultOptions()
	excl.Register(fs)
	var img imageFlag
	fs.Var(&img, "image", imageUsage)
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor check [--config PATH]... [--root DIR] [--format text|json] [--no-cache] [--check-mcd-certificates] [--label-compare type|full]\n"+
			"                          [--exclude PATTERN]... [--exclude-from FILE] [--image[=notice|drift|off]]\n\n"+
			"Compares the machine with its desired configuration. Exit status: 0 no drift,\n"+
			"1 drift found, 2 the check could not be done (a config or the exclusions refused,\n"+
			"or no config found).\n\n"+
			"What the daemon leaves alone, check leaves alone: the patterns of\n"+
			exclude.DefaultFile+" (inside --root) and --exclude.\n\n")
		fmt.Fprint(std.Err, specsHelp())
		fmt.Fprint(std.Err, "Butane configs (*.bu, or YAML with variant: and version:) are translated as\n"+
			"Ignition 2.27 does at boot; local files, which need --files-dir, are refused.\n"+
			"Any other file there is named in a warning, as it is not loaded.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "drift-monitor check: unexpected argument %q\n", fs.Arg(0))
		return ExitFailed
	}
	if *labels != "type" && *labels != "full" {
		fmt.Fprintf(std.Err, "drift-monitor check: --label-compare %q: want type or full\n", escape.Text(*labels))
		return ExitFailed
	}
	// One check, then the process exits: what it allocates stays live
	// until then, and a collection would only mark it (memlimit.OneShot).
	defer memlimit.OneShot()()
	var cache statekey.Cache
	if c := statecache.Default(); c != nil && !*noCache {
		c.Mode = statecache.ModeMap
		c.Log = slog.New(warnLines{std.Err})
		cache = c
	}
	key, err := hostKey()
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor check: warning: %s: secret contents get no digests\n", escape.Text(err.Error()))
	}
	res, err := runFullCheck(ctx, cache, *root, configs, key, *labels == "full", std.Err, *checkCerts, excl, img)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor check: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	if format == "json" {
		err = writeJSON(std.Out, res.Root, &res)
	} else {
		err = writeText(std.Out, &res)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor check: writing the report: %v\n", err)
		return ExitFailed
	}
	if !res.Clean() {
		return ExitDrift
	}
	return ExitClean
}

// The flag that checks the files the machine-config daemon's certificate
// writer owns (machineconfig.MCDCertificatePaths), which a MachineConfig's
// check otherwise lists as not checked.
const (
	checkMCDCertsFlag  = "check-mcd-certificates"
	checkMCDCertsUsage = "check a MachineConfig's files that the machine-config daemon's certificate writer owns " +
		"(/etc/kubernetes/kubelet-ca.crt, the cloud CA bundle, /etc/mco/internal-registry-pull-secret.json) like any other"
)

// warnLines writes the warnings of what a check uses (the state cache) the
// way the check writes its own: one line each, control characters escaped.
// Attributes are not written: these warnings carry none.
type warnLines struct{ w io.Writer }

func (h warnLines) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnLines) Handle(_ context.Context, r slog.Record) error {
	_, err := fmt.Fprintf(h.w, "drift-monitor check: warning: %s\n", escape.Text(r.Message))
	return err
}

func (h warnLines) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h warnLines) WithGroup(string) slog.Handler { return h }

// checkResult is a check's outcome with what it was checked against, and
// the declared entries the exclusions left alone.
type checkResult struct {
	check.Result
	// Root is the directory checked, absolute (openRoot).
	Root  string
	Files []string
	Left  []exclude.Left
	// Image is what was found of the OS image's /etc; nil with --image=off.
	Image *imageResult
}

// hostKey is the host's digest key (package digestkey) as drift keys
// digests with it; the zero Key, and no error, for a user who has none.
// `check` run by root and the daemon share it: their digests agree.
func hostKey() (model.Key, error) {
	k, err := hostKeyBytes()
	if err != nil || k == nil {
		return model.Key{}, err
	}
	return model.NewKey(k), nil
}

// hostKeyBytes is the host's digest key itself; nil, and no error, for a
// user who has none.
func hostKeyBytes() ([]byte, error) {
	dir := digestkey.Dir()
	if dir == "" {
		return nil, nil
	}
	return digestkey.Load(dir)
}

// firstBoot is how commands use the first-boot record (package
// firstboot): the root's, at its default path, with the host's key. The
// key's own problems are the caller's warning already (hostKey).
func firstBoot() firstboot.Use {
	k, _ := hostKeyBytes()
	return firstboot.Use{Path: firstboot.DefaultPath, Key: k}
}

// runFullCheck loads the desired state (through cache, which may be nil) and
// compares root with it, keying digests with key; fullLabels compares whole
// SELinux contexts; checkCerts checks the files the machine-config daemon's
// certificate writer owns too; excl says what is left alone; img what to
// make of the OS image's /etc.
func runFullCheck(ctx context.Context, cache statekey.Cache, root string, configs []string, key model.Key, fullLabels bool, warn io.Writer, checkCerts bool, excl exclude.Options, img imageFlag) (checkResult, error) {
	r, err := openRoot(root)
	if err != nil {
		return checkResult{}, err
	}
	defer r.Close()
	look := startImage(ctx, r, img)
	defer look.close()
	return fullCheckIn(ctx, cache, r, look, configs, key, fullLabels, warn, checkCerts, excl, img)
}

// fullCheckIn is runFullCheck in the opened root r, the image's comparison
// look already started.
func fullCheckIn(ctx context.Context, cache statekey.Cache, r *ondisk.Root, look *imageLook, configs []string, key model.Key, fullLabels bool, warn io.Writer, checkCerts bool, excl exclude.Options, img imageFlag) (checkResult, error) {
	// The load's warnings are held until the check stands on what was
	// loaded: a damaged cache entry means the config is parsed again, which
	// says them again.
	var held bytes.Buffer
	reparsing := false
	defer func() {
		if !reparsing {
			_, _ = held.WriteTo(warn)
		}
	}()
	state, err := loadDesired(cache, r, configs, "check", &held)
	if errors.Is(err, discover.ErrNoConfig) && img.list {
		// Listing the image's differences needs no config: without one,
		// every difference is undeclared.
		state, err = &model.State{}, nil
	}
	if err != nil {
		return checkResult{}, err
	}
	state.Entries = machineconfig.ApplyMCDExemptions(state.Entries, !checkCerts)
	rules, left, err := applyExclusions(r, excl, state)
	if err != nil {
		return checkResult{}, err
	}
	// The state cache keeps the SELinux defaults looked up, too.
	kept, _ := cache.(check.LabelStore)
	res, err := checkState(ctx, r, state, key, fullLabels, rules, kept)
	if err != nil {
		return checkResult{}, err
	}
	if !contentsHold(state, &res) {
		// A content compared came from a damaged cache entry: the config is
		// parsed, and the entry written anew.
		reparsing = true
		return fullCheckIn(ctx, reparse{cache}, r, look, configs, key, fullLabels, warn, checkCerts, excl, img)
	}
	_, _ = held.WriteTo(warn)
	out := checkResult{Result: res, Root: r.Dir(), Files: state.Files, Left: rules.Report(left)}
	if err := checkImage(ctx, r, state, look, img, rules, &out, warn); err != nil {
		return checkResult{}, err
	}
	return out, nil
}

// contentsHold reports whether res stands on state's declared contents: a
// state the cache mapped has their checksum checked only when a content it
// compared differs (statecache.ModeMap), false when it does not match.
func contentsHold(state *model.State, res *check.Result) bool {
	v, ok := state.Store.(interface{ VerifyContents() error })
	if !ok {
		return true
	}
	for i := range res.Drift {
		if res.Drift[i].Kind == drift.Content {
			return v.VerifyContents() == nil
		}
	}
	return true
}

// reparse is a cache that serves nothing and keeps what it is given: the
// load after an entry was found damaged.
type reparse struct{ statekey.Cache }

func (reparse) Get(statekey.Key) (model.State, bool) { return model.State{}, false }

// openRoot opens the root a command reads, once: the configs, the accounts
// and every observation are resolved inside it. The root is made absolute
// first (absRoot), for every command.
func openRoot(root string) (*ondisk.Root, error) {
	dir, err := absRoot(root)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("root %s: not a directory", dir)
	}
	return ondisk.OpenRoot(dir)
}

// absRoot is --root made absolute: what is derived from the root's path —
// the audit rules' paths, the account tools' --root, the report's root,
// the daemon's watches — is then the same whatever the working directory,
// never a relative path that a consumer skips or resolves from elsewhere.
// Every command's root goes through it (openRoot; the daemon, which opens
// its root itself).
func absRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", root, err)
	}
	return abs, nil
}

// loadDesired loads the desired state for root, printing its warnings as
// command's.
//
// A file of a desired-state directory that is not loaded is named in a
// warning: one that the admin believes declares something would otherwise
// be skipped without a word. No config file at all is an error
// (discover.ErrNoConfig): nothing is declared, and a host checked against
// nothing is not clean.
func loadDesired(cache statekey.Cache, root *ondisk.Root, configs []string, command string, warn io.Writer) (*model.State, error) {
	return loadDesiredFrom(cache, root, root, configs, command, warn)
}

// loadDesiredFrom is loadDesired, with the root's files read through host
// (a dry run of reconcile reads the account files as its account repairs
// would leave them).
func loadDesiredFrom(cache statekey.Cache, host desired.Host, root *ondisk.Root, configs []string, command string, warn io.Writer) (*model.State, error) {
	for _, ig := range discover.IgnoredFiles(root, configs) {
		fmt.Fprintf(warn, "drift-monitor %s: warning: %s\n", command, escape.Name(ig.String()))
	}
	state, err := desired.LoadCached(cache, host, configs, memlimit.ConfigLoad)
	if err != nil {
		return nil, err
	}
	for _, w := range state.Warnings {
		fmt.Fprintf(warn, "drift-monitor %s: warning: %s\n", command, escape.Text(w))
	}
	if len(state.Files) == 0 {
		return nil, discover.NoConfigError(root, configs)
	}
	// What the configs leave to the node, as the first boot recorded it:
	// the nodes are the root's whatever configs are checked.
	for _, w := range firstBoot().Apply(root, &state) {
		fmt.Fprintf(warn, "drift-monitor %s: warning: %s\n", command, escape.Text(w))
	}
	return &state, nil
}

// checkState compares root with state's entries, leaving out the drift
// rules leave unreported; the SELinux defaults it looks up are kept in
// labels (nil: none are).
func checkState(ctx context.Context, r *ondisk.Root, state *model.State, key model.Key, fullLabels bool, rules *exclude.Rules, labels check.LabelStore) (check.Result, error) {
	units, release := unitStates(ctx, r)
	defer release()
	defaults := check.LoadLabelsKept(r, state.Entries, fullLabels, labels)
	c := &check.Checker{Root: r, Units: units, Key: key, Store: state.Store,
		Labels: defaults, Exclude: rules.DriftFilter()}
	if r.IsHost() {
		c.Cmdline = check.ProcCmdline
		c.NextBoot = check.BootLoaderEntries(check.BootEntriesDir)
		c.Commands = osstate.Run
	}
	res := c.All(ctx, state.Entries)
	if err := ctx.Err(); err != nil {
		// All stopped early: what it found is not the machine's state.
		return check.Result{}, fmt.Errorf("check interrupted: %w", err)
	}
	defaults.Keep()
	explainMerges(c, state, &res)
	return res, nil
}

type jsonReport struct {
	Root    string        `json:"root"`
	Clean   bool          `json:"clean"`
	Checked int           `json:"checked"`
	Configs []string      `json:"configs"`
	Drift   []drift.Drift `json:"drift"`
	Notices []drift.Drift `json:"notices"`
	// LeftAlone are the declared entries the exclusions leave alone.
	LeftAlone []exclude.Left `json:"left_alone"`
	Image     *imageJSON     `json:"image,omitempty"`
}

func writeJSON(w io.Writer, root string, res *checkResult) error {
	rep := jsonReport{Root: root, Clean: res.Clean(), Checked: res.Checked,
		Drift: res.Drift, Notices: res.Notices, LeftAlone: res.Left, Image: res.Image.json()}
	if rep.LeftAlone == nil {
		rep.LeftAlone = []exclude.Left{}
	}
	for _, f := range res.Files {
		// The default locations are read under the root: say which host
		// files they are, as every other path in the report does.
		rep.Configs = append(rep.Configs, discover.HostPath(root, f))
	}
	if rep.Drift == nil {
		rep.Drift = []drift.Drift{}
	}
	if rep.Notices == nil {
		rep.Notices = []drift.Drift{}
	}
	if rep.Configs == nil {
		rep.Configs = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func writeText(w io.Writer, res *checkResult) error {
	ew := &errWriter{w: w}
	writeImageList(ew, res.Image)
	for _, n := range res.Notices {
		ew.printf("notice: %s\n", n.Message)
	}
	for _, d := range res.Drift {
		ew.printf("%s\n", d.Message)
		if d.Kind == drift.Content && d.Diff == "" {
			ew.printf("  want: %s\n  got:  %s\n", d.Want, d.Got)
		}
		if d.Diff != "" {
			ew.printf("%s", d.Diff)
		}
	}
	left := ""
	if len(res.Left) > 0 {
		left = fmt.Sprintf("; %s left alone (excluded)", count(len(res.Left), "declared entry", "declared entries"))
	}
	switch {
	case res.Clean():
		verb := "match"
		if res.Checked == 1 {
			verb = "matches"
		}
		ew.printf("No drift: %s %s %s%s.\n", count(res.Checked, "entry", "entries"), verb, count(len(res.Files), "config file", "config files"), left)
	default:
		ew.printf("Drift: %s in %s%s.\n", count(len(res.Drift), "difference", "differences"), count(res.Checked, "entry", "entries"), left)
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// specsHelp says what a desired config may be, for check --help.
func specsHelp() string {
	v := ignspec.Versions()
	return fmt.Sprintf("The desired configuration is the files of %s\n"+
		"and %s (or --config): Ignition configs of spec %s\n"+
		"to %s (JSON, read as Ignition %s reads them) and OpenShift MachineConfigs\n"+
		"(YAML or JSON). A file named *%s is Ignition's config\n"+
		"cache (/run/ignition.json, spec %s), which `drift-monitor adopt`\n"+
		"saves at first boot.\n\n",
		model.VendorDir, model.AdminDir, v[0], v[len(v)-1], strings.TrimPrefix(ignspec.VerifiedAgainst, "v"),
		discover.CacheSuffix, ignspec.LatestExperimental())
}

// labelCompareFlag is --label-compare: what of an SELinux label is compared
// with the policy's default.
func labelCompareFlag(fs *flag.FlagSet) *string {
	v := fs.String("label-compare", "type", "compare SELinux labels by `WHAT`: type (type and MLS range) or full (user and role too, as setfiles -F sets them)")
	return v
}
