package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// ignitionBinary is where Debian's ignition package installs Ignition.
const ignitionBinary = "/usr/lib/dracut/modules.d/30ignition/ignition"

// Deadlines for the processes the harness runs; generous, each run takes
// well under a second.
const (
	ignitionTimeout = time.Minute
	checkTimeout    = time.Minute
)

func TestMain(m *testing.M) { os.Exit(harness.Run(m)) }

// requireTier skips (or, with CI=true, fails) a test where the tier cannot run.
func requireTier(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (Ignition chowns files to their declared owners)")
	}
	if _, err := os.Stat(ignitionBinary); err != nil {
		missing = append(missing, "Ignition at "+ignitionBinary+" (apt-get install ignition)")
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		missing = append(missing, "systemctl on PATH (apt-get install systemd)")
	}
	if len(missing) == 0 {
		return
	}
	harness.Unavailable(t, "the conformance tier needs %s", strings.Join(missing, " and "))
}

// account is a user (with a same-named primary group) added to the root's
// copies of the host's account databases, as an image would ship it.
type account struct {
	name string
	id   int
}

// accounts exist before Ignition runs; Ignition adds others it is told about
// (with useradd --root).
var accounts = []account{{"core", 1000}, {"alice", 1001}}

// applyIgnition provisions a fresh root with cfgJSON the way a first boot
// does: Ignition's fetch-offline and files stages, then systemctl preset for
// every unit the config declares `enabled` for. It returns the root.
func applyIgnition(t *testing.T, cfgJSON []byte, prep prepare) string {
	t.Helper()
	root, log, err := runIgnition(t, cfgJSON, prep)
	if err != nil {
		t.Fatalf("%v\nconfig:\n%s\nIgnition's log:\n%s", err, cfgJSON, log)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "WARNING") {
			t.Logf("Ignition: %s", line)
		}
	}
	if units := presetUnits(t, root, cfgJSON); len(units) > 0 {
		systemctl(t, root, append([]string{"preset"}, units...)...)
	}
	return root
}

// runIgnition runs Ignition's fetch-offline and files stages for cfgJSON on
// a fresh root, and returns the root and Ignition's log.
// prepare is what a host has before Ignition runs.
type prepare struct {
	// before, when not nil, writes in the root what the image holds already.
	before func(t *testing.T, root string)
	// env is added to Ignition's environment: the build settings a
	// distribution bakes in can be set there (IGNITION_WRITE_AUTHORIZED_KEYS_FRAGMENT,
	// internal/distro/distro.go).
	env []string
	// online runs the fetch stage after fetch-offline, as a first boot does
	// when fetch-offline finds that the config needs the network.
	online bool
	// root, when set, is the existing tree Ignition writes into (an ostree
	// deployment) instead of a fresh one; its cache is then the root's own
	// /run/cache.json.
	root string
	// ignition, when not empty, is the Ignition binary to run; otherwise
	// writerFor picks it from the config's spec.
	ignition string
	// offline: a config that needs the network (fetch-offline writes its
	// -neednet file) is not applied, and runIgnition returns
	// errNeedsNetwork: the tier serves what it needs itself, and a fetch
	// from the Internet would only wait for its timeout.
	offline bool
	// selinux gives the root Debian's policy (selinux-policy-default,
	// SELINUXTYPE=default) and lets Ignition run the real setfiles, which
	// labels what it writes even with SELinux disabled in the kernel.
	selinux bool
}

// errNeedsNetwork: see prepare.offline.
var errNeedsNetwork = errors.New("the config needs the network (Ignition's fetch-offline stage wrote -neednet)")

// writerFor returns the Ignition that writes a root from cfg, as a host of
// its spec would be written: Debian's Ignition 2.14 for spec 3.0.0 to
// 3.3.0 (and the 3.4.0-experimental only it knows), and the Ignition that
// go.mod pins, built from the module cache, for every later spec and for a
// config that is not Ignition JSON (Butane, which Ignition 2.27 accepts).
func writerFor(t *testing.T, cfg []byte) string {
	t.Helper()
	var v struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	if json.Unmarshal(cfg, &v) == nil {
		switch v.Ignition.Version {
		case "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0-experimental":
			return ignitionBinary
		}
	}
	return harness.IgnitionBinary(t, harness.PinnedIgnition(t))
}

func runIgnition(t *testing.T, cfgJSON []byte, prep prepare) (root, log string, err error) {
	t.Helper()
	// Not t.TempDir: its directories are 0700 and Ignition writes SSH keys as
	// the user, who must be able to reach the root's /home.
	dir, err := os.MkdirTemp("", "drift-monitor-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	})
	root = filepath.Join(dir, "root")
	run := filepath.Join(dir, "run")
	if prep.root != "" {
		root, run = prep.root, filepath.Join(prep.root, "run")
	}
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{root, run, bin, filepath.Join(root, "etc", "selinux")} {
		mustMkdir(t, d, 0o755)
	}
	for _, d := range []string{dir, root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if prep.selinux {
		// An image has shadow-utils' lock file (lckpwdf); Ignition 2.14
		// relabels it after its account tools and fails when it is not
		// there (2.27 skips what does not exist).
		mustWrite(t, filepath.Join(root, "etc/.pwd.lock"), "", 0o600)
		mustWrite(t, filepath.Join(root, "etc/selinux/config"), "SELINUX=permissive\nSELINUXTYPE=default\n", 0o644)
		mustMkdir(t, filepath.Join(root, "etc/selinux/default"), 0o755)
		if out, err := exec.Command("cp", "-a", "/etc/selinux/default/contexts", filepath.Join(root, "etc/selinux/default/")).CombinedOutput(); err != nil {
			t.Fatalf("copying Debian's policy contexts: %v\n%s", err, out)
		}
	} else {
		mustWrite(t, filepath.Join(root, "etc/selinux/config"), "SELINUX=disabled\nSELINUXTYPE=targeted\n", 0o644)
	}
	// The preset policy of a Fedora or Fedora CoreOS image (fedora-release's
	// 99-default-disable.preset): a unit no preset names stays disabled at
	// first boot. It matters for `enabled: false`: Ignition 2.14 writes
	// `disable UNIT` into its preset file, later ones only for a unit that
	// is enabled already (v2.27.0 internal/exec/util/unit.go, DisableUnit),
	// and leave the rest to this policy; without it, systemd's default is to
	// enable.
	mustMkdir(t, filepath.Join(root, "usr/lib/systemd/system-preset"), 0o755)
	mustWrite(t, filepath.Join(root, "usr/lib/systemd/system-preset/99-default-disable.preset"), "disable *\n", 0o644)
	writeAccounts(t, root)
	if prep.before != nil {
		prep.before(t, root)
	}
	// Ignition relabels with setfiles at the end of the files stage; without
	// SELinux a stub that swallows the list of paths is enough.
	if !prep.selinux {
		mustWrite(t, filepath.Join(bin, "setfiles"), "#!/bin/sh\ncat >/dev/null\nexit 0\n", 0o755)
	}
	cfgPath := filepath.Join(dir, "ignition.ign")
	mustWrite(t, cfgPath, string(cfgJSON), 0o600)

	env := append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"IGNITION_CONFIG_FILE="+cfgPath)
	env = append(env, prep.env...)
	common := []string{"-platform", "file", "-root", root,
		"-config-cache", filepath.Join(run, "cache.json"),
		"-state-file", filepath.Join(run, "state"), "-log-to-stdout"}
	stages := [][]string{
		{"-stage", "fetch-offline", "-neednet", filepath.Join(run, "neednet")},
	}
	if prep.online {
		stages = append(stages, []string{"-stage", "fetch"})
	}
	stages = append(stages, []string{"-stage", "files"})
	writer := prep.ignition
	if writer == "" {
		writer = writerFor(t, cfgJSON)
	}
	var out bytes.Buffer
	for _, stage := range stages {
		ctx, cancel := context.WithTimeout(t.Context(), ignitionTimeout)
		cmd := exec.CommandContext(ctx, writer, append(stage, common...)...)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		cancel()
		if err != nil {
			return root, ignitionLog(out.String()), fmt.Errorf("running Ignition's %s stage: %w", stage[1], err)
		}
		if _, err := os.Stat(filepath.Join(run, "neednet")); err == nil && prep.offline {
			return root, ignitionLog(out.String()), errNeedsNetwork
		}
	}
	return root, ignitionLog(out.String()), nil
}

// ignitionLog drops the noise of a machine without journald.
func ignitionLog(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.Contains(line, "failed to log systemd journal entry") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// presetUnits lists the units a config declares `enabled` for: Ignition only
// writes them into a preset file, and first boot applies it.
//
// Units with no unit file in the root are left out: first boot's preset-all
// knows only the units that exist, and `systemctl preset NAME` fails on one
// that does not.
func presetUnits(t *testing.T, root string, cfgJSON []byte) []string {
	t.Helper()
	var cfg struct {
		Systemd struct {
			Units []struct {
				Name    string `json:"name"`
				Enabled *bool  `json:"enabled"`
			} `json:"units"`
		} `json:"systemd"`
	}
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		t.Fatalf("reading units of the config: %v", err)
	}
	var units []string
	for _, u := range cfg.Systemd.Units {
		if u.Enabled != nil && unitFileExists(root, u.Name) {
			units = append(units, u.Name)
		}
	}
	return units
}

// writeAccounts copies the host's passwd, group and shadow into root, minus
// anything that collides with the test accounts, plus the test accounts and
// their home directories.
func writeAccounts(t *testing.T, root string) {
	t.Helper()
	names := map[string]bool{}
	ids := map[string]bool{}
	for _, a := range accounts {
		names[a.name] = true
		ids[fmt.Sprint(a.id)] = true
	}
	collides := func(line string) bool {
		f := strings.Split(line, ":")
		return names[f[0]] || (len(f) > 2 && ids[f[2]])
	}
	dropped := map[string]bool{}
	filter := func(file string, add func(a account) string) {
		b, err := os.ReadFile(filepath.Join("/etc", file))
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			name, _, _ := strings.Cut(line, ":")
			drop := collides(line)
			if file == "shadow" || file == "gshadow" { // no ids: follow what passwd dropped
				drop = names[name] || dropped[name]
			}
			if drop {
				if file == "passwd" {
					dropped[name] = true
				}
				continue
			}
			out.WriteString(line + "\n")
		}
		for _, a := range accounts {
			out.WriteString(add(a) + "\n")
		}
		mustWrite(t, filepath.Join(root, "etc", file), out.String(), 0o644)
	}
	filter("passwd", func(a account) string {
		return fmt.Sprintf("%s:x:%d:%d::/home/%s:/bin/bash", a.name, a.id, a.id, a.name)
	})
	filter("group", func(a account) string { return fmt.Sprintf("%s:x:%d:", a.name, a.id) })
	filter("shadow", func(a account) string { return a.name + ":!:19000:0:99999:7:::" })
	filter("gshadow", func(a account) string { return a.name + ":!::" })
	for _, f := range []string{"etc/shadow", "etc/gshadow"} {
		if err := os.Chmod(filepath.Join(root, f), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	// Homes as useradd --create-home leaves them on Fedora CoreOS: 0700, the user's.
	mustMkdir(t, filepath.Join(root, "home"), 0o755)
	for _, a := range accounts {
		home := filepath.Join(root, "home", a.name)
		mustMkdir(t, home, 0o700)
		if err := os.Chown(home, a.id, a.id); err != nil {
			t.Fatal(err)
		}
	}
}

// key is what identifies a reported item in the tests' expectations.
type key struct {
	Kind, Entry, Path, Unit, User string
	Group                         string `json:",omitempty"`
}

func keyOf(it harness.Item) key {
	return key{Kind: it.Kind, Entry: it.Entry, Path: it.Path, Unit: it.Unit, User: it.User, Group: it.Group}
}

// keys returns the items' keys, sorted.
func keys(items []harness.Item) []key {
	ks := make([]key, 0, len(items))
	for _, it := range items {
		ks = append(ks, keyOf(it))
	}
	sortKeys(ks)
	return ks
}

func sortKeys(ks []key) {
	slices.SortFunc(ks, func(a, b key) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
}

// unitEntries are the entries that carry a "unit".
var unitEntries = map[string]bool{"unit": true, "dropin": true, "mask": true, "unmask": true, "enablement": true}

// result is one run of the binary.
type result struct {
	exit           int
	stdout, stderr string
}

// runBinary runs drift-monitor with args; it fails the test only if the
// binary could not be run at all.
func runBinary(t *testing.T, args ...string) result {
	t.Helper()
	return runBinaryEnv(t, nil, args...)
}

// runBinaryEnv is runBinary with env added to the environment.
func runBinaryEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, harness.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.Exited():
	default:
		t.Fatalf("running drift-monitor %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// check runs `drift-monitor check --root ROOT --config CFG --format json` and
// returns its exit status and report. It fails the test on anything the
// contract rules out whatever the case: an exit status other than 0 or 1,
// output that is not one JSON object, a status that disagrees with the report,
// items without their contract fields, and paths that carry the root.
//
// Every check runs twice with a cache directory of its own: the first parses
// the config and stores the derived state, the second must be served from
// that entry (the same inode: not parsed and stored again) and print exactly
// what the first printed.
//
// An empty cfgFile checks the default locations under the root.
func check(t *testing.T, root, cfgFile string, extra ...string) (int, harness.Report) {
	t.Helper()
	args := []string{"check", "--root", root, "--format", "json"}
	if cfgFile != "" {
		args = append(args, "--config", cfgFile)
	}
	args = append(args, extra...)
	env := []string{"CACHE_DIRECTORY=" + filepath.Join(t.TempDir(), "cache")}
	r := runBinaryEnv(t, env, args...)
	entry := cacheEntry(t, env[0][len("CACHE_DIRECTORY="):])
	if again := runBinaryEnv(t, env, args...); again != r {
		t.Errorf("drift-monitor %s: served from the cache, it printed otherwise:\nparsed: exit %d\n%s%s\ncached: exit %d\n%s%s",
			strings.Join(args, " "), r.exit, r.stdout, r.stderr, again.exit, again.stdout, again.stderr)
	}
	if after := cacheEntry(t, env[0][len("CACHE_DIRECTORY="):]); !os.SameFile(entry, after) {
		t.Errorf("the second check stored its state again instead of reading the first one's")
	}
	if r.exit != 0 && r.exit != 1 {
		t.Fatalf("drift-monitor %s: exit %d, want 0 or 1\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), r.exit, r.stderr, r.stdout)
	}
	var rep harness.Report
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("check output is not a JSON report: %v\nstdout:\n%s", err, r.stdout)
	}
	if err := dec.Decode(&json.RawMessage{}); err != io.EOF {
		t.Fatalf("check printed more than one JSON object (next: %v)\nstdout:\n%s", err, r.stdout)
	}
	if rep.Root != root {
		t.Errorf("report root = %q, want the --root given, %q", rep.Root, root)
	}
	if rep.Clean != (r.exit == 0) || rep.Clean != (len(rep.Drift) == 0) {
		t.Errorf("exit %d, clean %v and %d drift items disagree", r.exit, rep.Clean, len(rep.Drift))
	}
	for _, it := range append(slices.Clone(rep.Drift), rep.Notices...) {
		if err := itemProblem(it, root); err != nil {
			t.Errorf("item %+v: %v", keyOf(it), err)
		}
	}
	assertNoRoot(t, "JSON output (outside its \"root\" field)", stripRootField(t, r.stdout), root)
	if r.stderr != "" {
		t.Logf("check stderr:\n%s", r.stderr)
	}
	return r.exit, rep
}

// cacheEntry returns the one state cache entry in dir.
func cacheEntry(t *testing.T, dir string) os.FileInfo {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.state"))
	if len(m) != 1 {
		t.Fatalf("state cache %s holds %q; want one entry", dir, m)
	}
	fi, err := os.Stat(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// itemProblem reports what an item lacks of the contract.
func itemProblem(it harness.Item, root string) error {
	switch {
	case it.Kind == "" || it.Entry == "" || it.Message == "":
		return errors.New("kind, entry and message are required")
	case !filepath.IsAbs(it.Path):
		return fmt.Errorf("path %q is not an absolute host path", it.Path)
	case strings.HasPrefix(it.Path, root):
		return fmt.Errorf("path %q carries the --root", it.Path)
	case unitEntries[it.Entry] != (it.Unit != ""):
		return fmt.Errorf("unit %q: want a unit exactly for unit-related entries", it.Unit)
	case (it.Entry == "sshkeys" || it.Entry == "user") != (it.User != ""):
		return fmt.Errorf("user %q: want a user exactly for sshkeys and user entries", it.User)
	case (it.Entry == "group") != (it.Group != ""):
		return fmt.Errorf("group %q: want a group exactly for group entries", it.Group)
	}
	return nil
}

// stripRootField removes the report's top-level "root" — the one place the
// --root may appear — and returns the rest, re-encoded.
func stripRootField(t *testing.T, stdout string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("check output is not a JSON object: %v", err)
	}
	delete(m, "root")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assertNoRoot fails if out mentions the temporary root.
func assertNoRoot(t *testing.T, what, out, root string) {
	t.Helper()
	if strings.Contains(out, root) {
		t.Errorf("%s mentions the temporary root %s; paths must be host paths:\n%s", what, root, out)
	}
}

// wantDrift asserts exit status 1 and exactly the drifts want.
func wantDrift(t *testing.T, root string, exit int, rep harness.Report, want []key) {
	t.Helper()
	sortKeys(want)
	if diff := cmp.Diff(want, keys(rep.Drift)); diff != "" {
		t.Errorf("drift (-want +got):\n%s\nreport:\n%s\nroot:\n%s", diff, pretty(rep), describeTree(root))
	}
	if exit != 1 {
		t.Errorf("exit %d, want 1", exit)
	}
}

// wantClean asserts exit status 0 and no drift.
func wantClean(t *testing.T, root string, exit int, rep harness.Report) {
	t.Helper()
	if exit != 0 || len(rep.Drift) != 0 {
		t.Errorf("exit %d with drift %v, want exit 0 and no drift\nreport:\n%s\nroot:\n%s", exit, keys(rep.Drift), pretty(rep), describeTree(root))
	}
	if rep.Checked == 0 {
		t.Errorf("checked 0 entries; the config declares some")
	}
}

func pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// describeTree lists root the way `ls -ln` would, for failure messages.
func describeTree(root string) string {
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", p, err)
			return nil
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			fmt.Fprintf(&b, "%s: %v\n", rel, err)
			return nil
		}
		line := fmt.Sprintf("%07o %4d:%-4d %6d ino=%d %s", st.Mode, st.Uid, st.Gid, st.Size, st.Ino, rel)
		if d.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			line += " -> " + target
		}
		b.WriteString(line + "\n")
		return nil
	})
	if err != nil {
		fmt.Fprintf(&b, "walking: %v\n", err)
	}
	return b.String()
}

// systemctl runs `systemctl --root=ROOT ARGS...`.
func systemctl(t *testing.T, root string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "systemctl", append([]string{"--root=" + root}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("systemctl --root %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func mustMkdir(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, mode); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// unitFileExists reports whether root holds a unit file for name (or, for an
// instance, its template) in /etc or /usr/lib.
func unitFileExists(root, name string) bool {
	names := []string{name}
	if at := strings.IndexByte(name, '@'); at >= 0 {
		names = append(names, name[:at+1]+name[strings.LastIndexByte(name, '.'):])
	}
	for _, dir := range []string{"etc/systemd/system", "usr/lib/systemd/system"} {
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(root, dir, n)); err == nil {
				return true
			}
		}
	}
	return false
}
