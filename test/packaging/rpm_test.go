package packaging

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// fileEntry is one file of an RPM as `rpm -qp --qf` lists it.
type fileEntry struct {
	Mode  string // ls -l style, e.g. -rw-r--r--
	Owner string // user:group
	Flags string // rpm's %{FILEFLAGS:fflags}: d doc, l license, c config...
	Link  string // symbolic link target
}

// wantFiles is every file and directory the binary RPM holds, besides the
// bundled modules' licenses and rpm's /usr/lib/.build-id links, which
// TestRPMFiles checks apart.
var wantFiles = map[string]fileEntry{
	"/etc/drift-monitor":                                                    {Mode: "drwxr-xr-x", Owner: "root:root"},
	"/etc/drift-monitor/desired.d":                                          {Mode: "drwx------", Owner: "root:root"},
	"/usr/bin/drift-monitor":                                                {Mode: "-rwxr-xr-x", Owner: "root:root"},
	"/usr/lib/drift-monitor":                                                {Mode: "drwxr-xr-x", Owner: "root:root"},
	"/usr/lib/drift-monitor/desired.d":                                      {Mode: "drwxr-xr-x", Owner: "root:root"},
	"/usr/lib/systemd/catalog/drift-monitor.catalog":                        {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/lib/systemd/system-preset/50-drift-monitor.preset":                {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/lib/systemd/system/drift-monitor-adopt.service":                   {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/lib/systemd/system/drift-monitor-adopt-image.service":             {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/lib/systemd/system/drift-monitor-metrics.service":                 {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/lib/systemd/system/drift-monitor-metrics.socket":                  {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/lib/systemd/system/drift-monitor.service":                         {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/share/dbus-1/system.d/org.driftmonitor.DriftMonitor1.conf":        {Mode: "-rw-r--r--", Owner: "root:root"},
	"/usr/share/doc/drift-monitor":                                          {Mode: "drwxr-xr-x", Owner: "root:root"},
	"/usr/share/doc/drift-monitor/README.md":                                {Mode: "-rw-r--r--", Owner: "root:root", Flags: "d"},
	"/usr/share/doc/drift-monitor/attribution.conf":                         {Mode: "-rw-r--r--", Owner: "root:root", Flags: "d"},
	"/usr/share/doc/drift-monitor/drift-monitor.rules.yml":                  {Mode: "-rw-r--r--", Owner: "root:root", Flags: "d"},
	"/usr/share/doc/drift-monitor/metrics-textfile.conf":                    {Mode: "-rw-r--r--", Owner: "root:root", Flags: "d"},
	"/usr/share/doc/drift-monitor/node-problem-detector":                    {Mode: "drwxr-xr-x", Owner: "root:root"},
	"/usr/share/doc/drift-monitor/node-problem-detector/drift-monitor.json": {Mode: "-rw-r--r--", Owner: "root:root", Flags: "d"},
	"/usr/share/licenses/drift-monitor":                                     {Mode: "drwxr-xr-x", Owner: "root:root"},
	"/usr/share/licenses/drift-monitor/LICENSE":                             {Mode: "-rw-r--r--", Owner: "root:root", Flags: "l"},
	"/usr/share/licenses/drift-monitor/modules.txt":                         {Mode: "-rw-r--r--", Owner: "root:root", Flags: "l"},
	"/usr/share/licenses/drift-monitor/vendor":                              {Mode: "drwxr-xr-x", Owner: "root:root"},
	"/usr/share/man/man8/drift-monitor.8.gz":                                {Mode: "-rw-r--r--", Owner: "root:root", Flags: "d"},
}

// packageFiles lists an RPM's files.
func packageFiles(t *testing.T, rpmFile string) map[string]fileEntry {
	t.Helper()
	out := run(t, "", "rpm", "-qp", "--qf",
		`[%{FILEMODES:perms}\t%{FILEUSERNAME}:%{FILEGROUPNAME}\t%{FILEFLAGS:fflags}\t%{FILELINKTOS}\t%{FILENAMES}\n]`, rpmFile)
	files := map[string]fileEntry{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("unexpected rpm -qp line %q", line)
		}
		files[f[4]] = fileEntry{Mode: f[0], Owner: f[1], Flags: f[2], Link: f[3]}
	}
	return files
}

// TestRPMFiles builds the RPM and checks every file in it.
func TestRPMFiles(t *testing.T) {
	b := buildRPM(t, 1)
	files := packageFiles(t, b.RPM)

	got := map[string]fileEntry{}
	var buildIDs, licenses []string
	for name, e := range files {
		switch {
		case name == "/usr/lib/.build-id" || strings.HasPrefix(name, "/usr/lib/.build-id/"):
			buildIDs = append(buildIDs, name)
			if e.Mode[0] == 'l' && e.Link != "../../../../usr/bin/drift-monitor" {
				t.Errorf("build-id link %s -> %s, want ../../../../usr/bin/drift-monitor", name, e.Link)
			}
		case strings.HasPrefix(name, "/usr/share/licenses/drift-monitor/vendor/"):
			licenses = append(licenses, name)
			want := fileEntry{Mode: "drwxr-xr-x", Owner: "root:root"}
			if e.Mode[0] != 'd' {
				want = fileEntry{Mode: "-rw-r--r--", Owner: "root:root", Flags: "l"}
			}
			if e != want {
				t.Errorf("%s: %+v, want %+v", name, e, want)
			}
		default:
			got[name] = e
		}
	}
	if diff := cmp.Diff(wantFiles, got); diff != "" {
		t.Errorf("files of %s (-want +got):\n%s", filepath.Base(b.RPM), diff)
	}
	t.Logf("rpm's build-id entries: %q", buildIDs)

	// Every bundled module has its license in the package.
	modules := vendoredModules(t, b)
	for _, mod := range modules {
		dir := "/usr/share/licenses/drift-monitor/vendor/" + mod + "/"
		found := false
		for _, l := range licenses {
			if strings.HasPrefix(l, dir) && files[l].Mode[0] == '-' && strings.HasPrefix(strings.ToUpper(path.Base(l)), "LICENSE") {
				found = true
			}
		}
		if !found {
			t.Errorf("bundled module %s has no license file under %s", mod, dir)
		}
	}
	if len(modules) == 0 {
		t.Errorf("vendor/modules.txt in %s lists no module", filepath.Base(b.Tarball))
	}
}

// vendoredModules lists the modules of vendor/modules.txt in the tarball.
func vendoredModules(t *testing.T, b *built) []string {
	t.Helper()
	list := run(t, "", "tar", "-xzOf", b.Tarball, "drift-monitor-"+version(t)+"/vendor/modules.txt")
	var mods []string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" {
			mods = append(mods, f[1])
		}
	}
	return mods
}

// TestRPMSources checks the SRPM and the tarball it is built from: the spec
// and one tarball holding the tree and its vendored modules, and no vendor/
// in the repository itself.
func TestRPMSources(t *testing.T) {
	b := buildRPM(t, 1)
	ver := version(t)
	srpmFiles := strings.Fields(run(t, "", "rpm", "-qlp", b.SRPM))
	sort.Strings(srpmFiles)
	if want := []string{"drift-monitor-" + ver + ".tar.gz", "drift-monitor.spec"}; !cmp.Equal(want, srpmFiles) {
		t.Errorf("SRPM holds %q, want %q", srpmFiles, want)
	}
	names := map[string]bool{}
	for _, n := range strings.Fields(run(t, "", "tar", "-tzf", b.Tarball)) {
		names[strings.TrimSuffix(n, "/")] = true
	}
	top := "drift-monitor-" + ver + "/"
	for _, want := range []string{"go.mod", "go.sum", "drift-monitor.spec", "LICENSE", "README.md", "VERSION",
		"units/drift-monitor.service", "units/drift-monitor-adopt.service", "packaging/drift-monitor.8", "packaging/drift-monitor.catalog",
		"packaging/org.driftmonitor.DriftMonitor1.conf", "packaging/50-drift-monitor.preset",
		"cmd/drift-monitor/main.go", "vendor/modules.txt", "vendor/github.com/godbus/dbus/v5/conn.go"} {
		if !names[top+want] {
			t.Errorf("%s has no %s", filepath.Base(b.Tarball), top+want)
		}
	}
	for n := range names {
		if !strings.HasPrefix(n+"/", top) {
			t.Errorf("%s: %s is outside %s", filepath.Base(b.Tarball), n, top)
		}
		if strings.HasPrefix(n, top+"_build/") || strings.HasPrefix(n, top+"bin/") || strings.HasPrefix(n, top+".git/") {
			t.Errorf("%s holds build output or git data: %s", filepath.Base(b.Tarball), n)
		}
	}
	if _, err := os.Stat(filepath.Join(harness.Repo(t, ""), "vendor")); err == nil {
		t.Errorf("the repository has a vendor/ directory: it belongs in the tarball only")
	}
	// The build ran offline: no network namespace means no network at all.
	if !strings.Contains(b.Log, "GOPROXY=off") {
		t.Errorf("the build log does not show GOPROXY=off:\n%s", tail(b.Log, 40))
	}
	if strings.Contains(b.Log, "cannot unshare the network") && harness.OnCI() {
		t.Errorf("make rpm could not build without a network:\n%s", tail(b.Log, 40))
	}
}

// TestCheckAsRoot holds the spec's %check to what `make rpm` does on a
// fresh machine as root (the README's packaging steps and the image-mode
// install start there): the unit tests run as root, in the network
// namespace of its own that build-rpm.sh gives rpmbuild, with CI=true in
// the environment as CI services set it, and they pass: a test that needs
// what a build root lacks skips there (the spec unsets CI: %check is no CI
// tier), where it used to fail the build (the kernel's audit records never
// reach a reader outside the initial network namespace).
func TestCheckAsRoot(t *testing.T) {
	harness.RequireRoot(t, "building the RPM as root")
	b := buildRPM(t, checkedRelease) // fails the test if %check fails
	if strings.Contains(b.Log, "cannot unshare the network") {
		t.Errorf("make rpm did not build in a network namespace of its own:\n%s", tail(b.Log, 40))
	}
	for _, want := range []string{
		"Executing(%check)", "+ unset CI",
		// Packages whose tests need root, or the initial network
		// namespace, that the build has neither of.
		"ok  \tgithub.com/drift-monitor/drift-monitor/internal/audit\t",
		"ok  \tgithub.com/drift-monitor/drift-monitor/internal/desired\t",
		"ok  \tgithub.com/drift-monitor/drift-monitor/internal/enablement\t",
	} {
		if !strings.Contains(b.Log, want) {
			t.Errorf("the build log lacks %q: %%check did not run the unit tests:\n%s", want, tail(b.Log, 60))
		}
	}
	if strings.Contains(b.Log, "(cached)") {
		t.Errorf("%%check replayed cached test results:\n%s", tail(b.Log, 60))
	}
}

// TestRPMMetadata checks the package's tags and scriptlets.
func TestRPMMetadata(t *testing.T) {
	b := buildRPM(t, 1)
	root := harness.Repo(t, "")
	ver := version(t)
	if got := run(t, root, "rpmspec", "-q", "--srpm", "--qf", "%{version}", "drift-monitor.spec"); got != ver {
		t.Errorf("the spec's Version is %q, VERSION says %q", got, ver)
	}
	tags := run(t, "", "rpm", "-qp", "--qf", "%{name}|%{version}|%{release}|%{license}|%{url}|%{changelogname}", b.RPM)
	want := "drift-monitor|" + ver + "|1|Apache-2.0 AND BSD-2-Clause AND BSD-3-Clause AND MIT|https://github.com/drift-monitor/drift-monitor|"
	if !strings.HasPrefix(tags, want) || strings.HasSuffix(tags, "|") {
		t.Errorf("tags = %q, want %q followed by a changelog author", tags, want)
	}

	scripts := run(t, "", "rpm", "-qp", "--scripts", b.RPM)
	section := func(name string) string {
		i := strings.Index(scripts, name+" scriptlet")
		if i < 0 {
			t.Errorf("no %s scriptlet in:\n%s", name, scripts)
			return ""
		}
		s := scripts[i:]
		s = s[strings.Index(s, "\n")+1:]
		if j := regexp.MustCompile(`(?m)^\w+ scriptlet`).FindStringIndex(s); j != nil {
			s = s[:j[0]]
		}
		return s
	}
	// Where the systemd macros exist (Fedora) these are theirs; here, the
	// spec's fallbacks, which must do the same work.
	for name, wants := range map[string][]string{
		"postinstall":   {"systemctl --no-reload --quiet preset drift-monitor.service drift-monitor-adopt.service drift-monitor-adopt-image.service", "systemctl daemon-reload", "journalctl --update-catalog"},
		"preuninstall":  {"[ $1 -eq 0 ]", "systemctl --no-reload disable --now drift-monitor.service drift-monitor-adopt.service drift-monitor-adopt-image.service"},
		"postuninstall": {"[ $1 -ge 1 ]", "systemctl try-restart drift-monitor.service", "systemctl daemon-reload", "journalctl --update-catalog"},
	} {
		s := section(name)
		for _, w := range wants {
			if !strings.Contains(s, w) {
				t.Errorf("%s scriptlet has no %q:\n%s", name, w, s)
			}
		}
	}
}

// rpmlintFinding matches one finding of rpmlint: "PKG: W: CHECK ARGS".
var rpmlintFinding = regexp.MustCompile(`^(\S+?)(?::\d+)?: ([EW]): (\S+)`)

// TestRPMLint runs rpmlint on the spec, the SRPM and the RPM: no errors, and
// every warning that remains is explained in the spec's header comment.
func TestRPMLint(t *testing.T) {
	harness.RequireTools(t, "rpmlint")
	b := buildRPM(t, 1)
	root := harness.Repo(t, "")
	out, _ := runStatus(root, "rpmlint", "-c", "packaging/rpmlint.toml", "drift-monitor.spec", b.SRPM, b.RPM)
	t.Logf("rpmlint:\n%s", out)
	spec, err := os.ReadFile(filepath.Join(root, "drift-monitor.spec"))
	if err != nil {
		t.Fatal(err)
	}
	header := string(spec[:strings.Index(string(spec), "\n%global")])
	summary := regexp.MustCompile(`(\d+) errors, (\d+) warnings`).FindStringSubmatch(out)
	if summary == nil {
		t.Fatalf("no summary line in rpmlint's output")
	}
	if summary[1] != "0" {
		t.Errorf("rpmlint reports %s errors", summary[1])
	}
	for _, line := range strings.Split(out, "\n") {
		m := rpmlintFinding.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[2] == "E" {
			t.Errorf("rpmlint error: %s", line)
		} else if !strings.Contains(header, "# - "+m[3]) {
			t.Errorf("rpmlint warning not explained in drift-monitor.spec's header: %s", line)
		}
	}
}
