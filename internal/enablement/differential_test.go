package enablement

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The differential test holds State against the real `systemctl --root=DIR
// is-enabled` of the machine (systemd 252) over random unit trees. A run
// covers a fixed list of seeds, each with -enablement.trees trees, so that it
// stays well under a minute; more seeds or trees are a flag away:
//
//	go test ./internal/enablement -run TestStateAgainstSystemctl \
//	    -enablement.seeds=1-200 -enablement.trees=100 -v
var (
	diffSeeds = flag.String("enablement.seeds", "1-16", "seeds of TestStateAgainstSystemctl: a list of numbers and ranges (1,5,10-20)")
	diffTrees = flag.Int("enablement.trees", 40, "random unit trees per seed in TestStateAgainstSystemctl")
)

// The unit names of a random tree, and the names asked about: a small set,
// so that files, links and [Install] lines of a tree meet.
var (
	genPlain     = []string{"a.service", "b.service", "c.service"}
	genTemplates = []string{"t@.service", "v@.service"}
	genInstances = []string{"t@x.service", "t@y.service", "t@def.service", "v@x.service"}
	genOther     = []string{"a.socket", "b.target"}
	genNames     = concat(genPlain, genTemplates, genInstances, genOther)
)

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// genDirs are where unit files and links go, with weights: the search path
// (see searchPath) and /opt/u, outside of it (linked unit files).
var genDirs = []struct {
	dir    string
	weight int
}{
	{"/usr/lib/systemd/system", 30},
	{"/etc/systemd/system", 30},
	{"/run/systemd/system", 12},
	{"/usr/local/lib/systemd/system", 4},
	{"/run/systemd/generator", 3},
	{"/run/systemd/generator.late", 2},
	{"/run/systemd/transient", 3},
	{"/etc/systemd/system.control", 3},
	{"/run/systemd/system.attached", 2},
	{"/opt/u", 10},
}

// genNode is one node of a random tree: a file with content, or a symlink.
type genNode struct {
	content string
	target  string
	link    bool
}

type genTree struct {
	nodes    map[string]genNode // path inside the root
	splitUsr bool
}

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func genDir(r *rand.Rand, splitUsr bool) string {
	total := 0
	for _, d := range genDirs {
		total += d.weight
	}
	n := r.IntN(total)
	for _, d := range genDirs {
		if n -= d.weight; n < 0 {
			if splitUsr && d.dir == "/usr/lib/systemd/system" && r.IntN(2) == 0 {
				return "/lib/systemd/system"
			}
			return d.dir
		}
	}
	panic("unreachable")
}

// genInstall returns the content of a random unit file or drop-in.
func genInstall(r *rand.Rand, dropin bool) string {
	if !dropin && r.IntN(10) == 0 {
		return "" // an empty unit file: a mask
	}
	if r.IntN(40) == 0 {
		return "[Install\n" // a file systemd cannot parse
	}
	var b strings.Builder
	if !dropin && r.IntN(2) == 0 {
		b.WriteString("[Unit]\nDescription=random\n[Service]\nExecStart=/bin/true\n")
	}
	if r.IntN(6) == 0 {
		return b.String() + "\n" // no [Install]: static
	}
	b.WriteString("[Install]\n")
	for n := r.IntN(4); n > 0; n-- {
		switch r.IntN(8) {
		case 0, 1:
			b.WriteString("WantedBy=multi-user.target\n")
		case 2:
			b.WriteString("RequiredBy=b.target\n")
		case 3, 4:
			b.WriteString("Alias=" + pick(r, genNames) + "\n")
		case 5:
			b.WriteString("Also=" + pick(r, genNames) + "\n")
		case 6:
			b.WriteString("DefaultInstance=" + pick(r, []string{"def", "x", ""}) + "\n")
		case 7:
			b.WriteString("WantedBy=" + pick(r, []string{"%N.target", "b.target", "multi-user.target x.target"}) + "\n")
		}
	}
	return b.String()
}

// genTarget spells a symlink at linkPath to a unit named name in a random
// directory, the way hand-made links are written: absolute, relative, with
// redundant components, through /lib, to /dev/null, to an empty file, to
// nowhere.
func genTarget(r *rand.Rand, linkPath, name string, splitUsr bool) string {
	dir := genDir(r, splitUsr)
	switch r.IntN(13) {
	case 0, 1:
		return "/dev/null"
	case 2, 3:
		rel, err := filepath.Rel(path.Dir(linkPath), path.Join(dir, name))
		if err != nil {
			panic(err)
		}
		return rel
	case 4:
		return name // the same directory
	case 5:
		return "./" + name
	case 6:
		return strings.Replace(dir, "/systemd/", "//systemd/../systemd/", 1) + "/" + name
	case 7:
		return "/lib/systemd/system/" + name
	case 8:
		return "/opt/u/empty.service"
	case 9:
		return "/nowhere/" + name
	case 10:
		// Through a link to a directory (of the search path, or missing:
		// see genRandomTree).
		return pick(r, []string{"/opt/d/", "/opt/dd/", "/opt/rel/"}) + name
	}
	return path.Join(dir, name)
}

// genRandomTree makes a random unit tree.
func genRandomTree(r *rand.Rand) genTree {
	g := genTree{nodes: map[string]genNode{}, splitUsr: r.IntN(5) == 0}
	if r.IntN(2) == 0 {
		g.nodes["/opt/u/empty.service"] = genNode{}
	}
	if r.IntN(2) == 0 {
		// Links to directories: absolute, dangling, relative.
		g.nodes["/opt/d"] = genNode{link: true, target: "/usr/lib/systemd/system"}
		g.nodes["/opt/dd"] = genNode{link: true, target: "/usr/lib/systemd/system/missing"}
		g.nodes["/opt/rel"] = genNode{link: true, target: "../etc/systemd/system"}
	}
	if r.IntN(4) == 0 {
		// A root with a /dev/null, as an image made by debootstrap has
		// (an empty file reads the same as the device).
		g.nodes["/dev/null"] = genNode{}
	}
	for n := 1 + r.IntN(6); n > 0; n-- {
		p := path.Join(genDir(r, g.splitUsr), pick(r, genNames))
		g.nodes[p] = genNode{content: genInstall(r, false)}
	}
	for n := r.IntN(8); n > 0; n-- {
		dir := genDir(r, g.splitUsr)
		name := pick(r, genNames)
		switch r.IntN(10) {
		case 0, 1, 2:
			dir += "/multi-user.target.wants"
		case 3:
			dir += "/b.target.requires"
		}
		p := path.Join(dir, name)
		to := name
		if r.IntN(5) < 2 {
			to = pick(r, genNames)
		}
		g.nodes[p] = genNode{link: true, target: genTarget(r, p, to, g.splitUsr)}
	}
	for n := r.IntN(3); n > 0; n-- {
		dir := genDir(r, g.splitUsr)
		if dir == "/opt/u" {
			continue
		}
		p := path.Join(dir, pick(r, genNames)+".d", pick(r, []string{"a.conf", "b.conf"}))
		if r.IntN(4) == 0 {
			// A drop-in that is a symlink to a file (not to /dev/null:
			// systemctl 252 --root fails on that one, see State).
			g.nodes["/opt/u/dropin.conf"] = genNode{content: genInstall(r, true)}
			g.nodes[p] = genNode{link: true, target: "/opt/u/dropin.conf"}
			continue
		}
		g.nodes[p] = genNode{content: genInstall(r, true)}
	}
	return g
}

// write makes the tree under root, with the directories every root has.
func (g genTree) write(root string) error {
	for _, d := range []string{"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system"} {
		if err := os.MkdirAll(root+d, 0o755); err != nil {
			return err
		}
	}
	if g.splitUsr {
		if err := os.MkdirAll(root+"/lib/systemd/system", 0o755); err != nil {
			return err
		}
	} else if err := os.Symlink("usr/lib", root+"/lib"); err != nil {
		return err
	}
	for _, p := range g.paths() {
		n := g.nodes[p]
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			return err
		}
		var err error
		if n.link {
			err = os.Symlink(n.target, hp)
		} else {
			err = os.WriteFile(hp, []byte(n.content), 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (g genTree) paths() []string {
	ps := make([]string, 0, len(g.nodes))
	for p := range g.nodes {
		if !strings.HasPrefix(p, "/lib/") || g.splitUsr {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

// script is a shell script that makes the tree under $R: a disagreement's
// reproduction.
func (g genTree) script() string {
	var b strings.Builder
	b.WriteString("mkdir -p $R/etc/systemd/system $R/run/systemd/system $R/usr/lib/systemd/system\n")
	if g.splitUsr {
		b.WriteString("mkdir -p $R/lib/systemd/system\n")
	} else {
		b.WriteString("ln -s usr/lib $R/lib\n")
	}
	for _, p := range g.paths() {
		n := g.nodes[p]
		fmt.Fprintf(&b, "mkdir -p %q\n", "$R"+path.Dir(p))
		if n.link {
			fmt.Fprintf(&b, "ln -s %q %q\n", n.target, "$R"+p)
		} else {
			fmt.Fprintf(&b, "cat > %q <<'EOF'\n%sEOF\n", "$R"+p, n.content)
		}
	}
	return b.String()
}

// systemctlStates asks systemctl --root=root is-enabled about every unit,
// in as few runs as it can: systemctl stops at the first unit it fails on,
// and is run again for the rest. SYSTEMCTL_SKIP_SYSV=1 leaves out the SysV
// compatibility pass (systemctl-sysv-compat.c, enable_sysv_units), which
// looks every .service name up before any state is computed and fails the
// whole run on the first it cannot look up: what remains is
// unit_file_get_state() for each unit, the function systemd's
// GetUnitFileState answers with too.
func systemctlStates(t *testing.T, root string, units []string) map[string]string {
	t.Helper()
	states := map[string]string{}
	for len(units) > 0 {
		out, errOut := runSystemctlEnv(t, []string{"SYSTEMCTL_SKIP_SYSV=1"}, root, append([]string{"is-enabled"}, units...)...)
		lines := strings.Fields(out)
		if len(lines) > len(units) {
			t.Fatalf("systemctl is-enabled %v: %d states", units, len(lines))
		}
		for k, st := range lines {
			states[units[k]] = st
		}
		units = units[len(lines):]
		if len(units) == 0 {
			break
		}
		switch {
		case strings.Contains(errOut, "No such file or directory"):
			states[units[0]] = StateNotFound
		case strings.Contains(errOut, "Failed to"):
			states[units[0]] = StateBad
		default:
			t.Fatalf("systemctl is-enabled %s: no state and no error: %q", units[0], errOut)
		}
		units = units[1:]
	}
	return states
}

// shortSeeds are the seeds a -short run takes when -enablement.seeds is
// left at its default: the RPM's %check runs the unit tests -short
// (drift-monitor.spec), a check of the build that needs a sample of the
// random trees, not all of them; the unit tier of `make test` runs them all.
const shortSeeds = 2

// diffSeedList is the seeds of a differential test (-enablement.seeds).
func diffSeedList(t *testing.T) []uint64 {
	t.Helper()
	seeds, err := parseSeeds(*diffSeeds)
	if err != nil {
		t.Fatal(err)
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "enablement.seeds" })
	if testing.Short() && !set && len(seeds) > shortSeeds {
		seeds = seeds[:shortSeeds]
	}
	return seeds
}

// parseSeeds reads "1,5,10-20".
func parseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	for _, f := range strings.Split(s, ",") {
		var lo, hi uint64
		if n, _ := fmt.Sscanf(f, "%d-%d", &lo, &hi); n == 2 {
			for v := lo; v <= hi; v++ {
				seeds = append(seeds, v)
			}
			continue
		}
		if _, err := fmt.Sscanf(f, "%d", &lo); err != nil {
			return nil, fmt.Errorf("seed %q: %w", f, err)
		}
		seeds = append(seeds, lo)
	}
	return seeds, nil
}

type disagreement struct {
	seed       uint64
	tree       int
	unit       string
	got, want  string
	err        error
	reproducer string
}

func TestStateAgainstSystemctl(t *testing.T) {
	requireSystemctl(t)
	seeds := diffSeedList(t)
	cases := 0
	var bad []disagreement
	for _, seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 0x22))
		for k := 0; k < *diffTrees; k++ {
			g := genRandomTree(r)
			root := filepath.Join(t.TempDir(), "root")
			if err := g.write(root); err != nil {
				t.Fatal(err)
			}
			want := systemctlStates(t, root, genNames)
			r, err := ondisk.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			tree, err := New(r)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range genNames {
				cases++
				got, err := tree.State(u)
				if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrBad) {
					got = "error"
				}
				if got != want[u] {
					bad = append(bad, disagreement{seed, k, u, got, want[u], err, g.script()})
				}
			}
			tree.Close()
			r.Close()
		}
	}
	t.Logf("%d cases (%d seeds × %d trees × %d units), %d disagreements with systemctl --root",
		cases, len(seeds), *diffTrees, len(genNames), len(bad))
	kinds := map[string]int{}
	for _, d := range bad {
		kinds[fmt.Sprintf("State %s, systemctl %s", d.got, d.want)]++
	}
	for k, n := range kinds {
		t.Logf("%5d × %s", n, k)
	}
	for k, d := range bad {
		if k == 5 {
			t.Errorf("... and %d more", len(bad)-k)
			break
		}
		t.Errorf("seed %d tree %d: State(%s) = %q (error: %v), systemctl says %q; the tree:\n%s",
			d.seed, d.tree, d.unit, d.got, d.err, d.want, d.reproducer)
	}
}

// ignitionPreset is the preset line Ignition v2.27.0 writes for a unit
// declared enabled (createSystemdPresetFile, parseInstanceUnit in
// internal/exec/stages/files/units.go): "enable NAME", and for a template
// or an instance "enable TEMPLATE INSTANCE" (the instance empty for the
// template itself).
func ignitionPreset(unit string) string {
	if classifyName(unit) == namePlain {
		return "enable " + unit
	}
	tmpl, _ := templateOf(unit)
	if classifyName(unit) == nameTemplate {
		tmpl = unit
	}
	return "enable " + tmpl + " " + nameInstanceOf(unit)
}

// TestEnabledTrueAgainstIgnition holds Tree.WantEnabled, what `enabled:
// true` makes of a unit, against what Ignition leaves, over the random
// trees of TestStateAgainstSystemctl. Ignition's enablement is its preset
// line over the vendor's "disable *", applied by the first boot's preset
// (`systemctl --root=DIR preset UNIT` here). For every unit whose state is
// not enabled enough by itself (disabled, linked, linked-runtime,
// enabled-runtime; a masked or bad unit cannot be enabled by any config,
// and is drift):
//
//   - right after the preset, with or without a first-boot record made
//     then, WantEnabled never says drift: Ignition could do no more;
//   - before it (no record), a unit WantEnabled does not call drift is
//     one the preset leaves as it is: a notice, or "linked" taken as
//     enabled, must never hide what the preset would enable.
//
// Where the model of enabling (EnableLinks, in Enabling) makes a link that
// the preset does not (odd trees: a masked instance, a link on the way),
// the unit is left to drift, as before; those are counted and logged with
// -v. A preset that reports an error (an alias it refuses, a link in the
// way) still counts: it makes what it can, as the first boot's preset-all
// does.
func TestEnabledTrueAgainstIgnition(t *testing.T) {
	requireSystemctl(t)
	seeds := diffSeedList(t)
	cases, failed, missed := 0, 0, 0
	verdicts, kinds := map[string]int{}, map[string]int{}
	var bad []string
	for _, seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 0x27))
		for k := 0; k < *diffTrees/4; k++ {
			g := genRandomTree(r)
			root := filepath.Join(t.TempDir(), "root")
			if err := g.write(root); err != nil {
				t.Fatal(err)
			}
			before := systemctlStates(t, root, genNames)
			tree, err := openTree(t, root)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range genNames {
				switch before[u] {
				case StateDisabled, StateLinked, StateLinkedRuntime, StateEnabledRuntime:
				default:
					continue
				}
				v0, en0, err := tree.WantEnabled(u, before[u], "")
				if err != nil {
					t.Fatalf("WantEnabled(%s): %v", u, err)
				}
				preset := presetRoot(t, g, u)
				if _, errOut := runSystemctlEnv(t, []string{"SYSTEMCTL_SKIP_SYSV=1"}, preset, "preset", u); errOut != "" {
					failed++
				}
				cases++
				after := systemctlStates(t, preset, []string{u})[u]
				ptree, err := openTree(t, preset)
				if err != nil {
					t.Fatal(err)
				}
				where := fmt.Sprintf("seed %d tree %d: %s, %s before %q, %s after it", seed, k, u, before[u], ignitionPreset(u), after)
				for _, record := range []string{after, ""} {
					v, en, err := ptree.WantEnabled(u, after, record)
					if err != nil {
						t.Fatalf("%s: WantEnabled: %v", where, err)
					}
					if record != "" {
						verdicts[fmt.Sprintf("after the preset: %s, %s", after, verdictName(v))]++
					}
					switch {
					case v != Drift || after == StateMasked || after == StateMaskedRuntime || after == StateBad:
					case en.State == after && !en.Settled:
						// The model of enabling (EnableLinks) made a
						// link the preset did not: left to drift, as
						// where it cannot decide.
						missed++
						if testing.Verbose() {
							t.Logf("%s: Enabling %+v, WantEnabled (first-boot record %q) says drift", where, en, record)
						}
					default:
						kinds[fmt.Sprintf("drift right after the preset: %s, was %s (record %q)", after, before[u], record)]++
						bad = append(bad, fmt.Sprintf("%s: WantEnabled (first-boot record %q) says drift; Enabling %+v; the tree:\n%s", where, record, en, g.script()))
					}
				}
				if v0 != Drift && after != before[u] {
					kinds[fmt.Sprintf("%s before the preset, which makes it %s", verdictName(v0), after)]++
					bad = append(bad, fmt.Sprintf("%s: WantEnabled said %s before it (Enabling %+v); the tree:\n%s", where, verdictName(v0), en0, g.script()))
				}
			}
		}
	}
	t.Logf("%d units preset (%d presets reported an error), %d disagreements; "+
		"%d verdicts of drift right after it where the model of enabling made a link the preset did not",
		cases, failed, len(bad), missed)
	for k, n := range verdicts {
		t.Logf("%5d × %s", n, k)
	}
	for k, n := range kinds {
		t.Logf("%5d × disagreement: %s", n, k)
	}
	for k, b := range bad {
		if k == 5 {
			t.Errorf("... and %d more", len(bad)-k)
			break
		}
		t.Error(b)
	}
}

func verdictName(v Verdict) string {
	return map[Verdict]string{Satisfied: "satisfied", CannotEnable: "cannot-enable", Drift: "drift"}[v]
}

// presetRoot writes g into a new root with Ignition's preset line for unit
// over a vendor "disable *".
func presetRoot(t *testing.T, g genTree, unit string) string {
	t.Helper()
	preset := filepath.Join(t.TempDir(), "root")
	if err := g.write(preset); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{
		"/etc/systemd/system-preset/20-ignition.preset":    ignitionPreset(unit) + "\n",
		"/usr/lib/systemd/system-preset/99-default.preset": "disable *\n",
	} {
		mustMkdir(t, filepath.Dir(preset+p))
		if err := os.WriteFile(preset+p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return preset
}
