package image_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// The differential test against `rpm -Va`: packages built with %config,
// %ghost, %config(missingok), %verify(not …), %attr, %caps and a path two
// packages share, installed with `rpm --root`, then changed. On a root
// whose baseline is its rpm database, drift-monitor's differences under
// /etc must be what `rpm --root … -Va --nomtime` prints for /etc, path for
// path and letter for letter (times are never drift: --nomtime).

const imgconfSpec = `Name: imgconf
Version: 1.0
Release: 1
Summary: image drift test package
License: MIT
BuildArch: noarch
%description
test
%install
d=%{buildroot}/etc/imgconf
mkdir -p $d/private %{buildroot}/usr/share/imgconf
echo main > $d/main.conf
echo plain > $d/plain
echo plain2 > $d/plain2
echo accounts > $d/accounts
echo optional > $d/optional
echo svc > $d/svc.conf
echo setuid > $d/setuid-nouser
echo tool > $d/tool
echo anymode > $d/anymode
echo shared > $d/shared
echo doc > %{buildroot}/usr/share/imgconf/doc
touch $d/state $d/ghost-present
ln -s main.conf $d/link
%files
%dir /etc/imgconf
%dir %attr(0750,root,svc) /etc/imgconf/private
%config(noreplace) /etc/imgconf/main.conf
/etc/imgconf/plain
/etc/imgconf/plain2
%config %verify(not md5 size mtime) /etc/imgconf/accounts
%config(missingok) /etc/imgconf/optional
%ghost %attr(0600,root,root) /etc/imgconf/state
%ghost %attr(0640,root,root) /etc/imgconf/ghost-present
/etc/imgconf/link
%attr(0640,svc,svc) /etc/imgconf/svc.conf
%attr(4755,nouser,root) /etc/imgconf/setuid-nouser
%caps(cap_net_raw=ep) /etc/imgconf/tool
%verify(not mode) /etc/imgconf/anymode
/etc/imgconf/shared
/usr/share/imgconf/doc
`

const imgsharedSpec = `Name: imgshared
Version: 1.0
Release: 1
Summary: image drift test package sharing a path
License: MIT
BuildArch: noarch
%description
test
%install
mkdir -p %{buildroot}/etc/imgconf
echo shared > %{buildroot}/etc/imgconf/shared
echo other > %{buildroot}/etc/imgconf/other.conf
%files
/etc/imgconf/shared
%config /etc/imgconf/other.conf
`

// rpmMutations change an installed /etc/imgconf; each names what rpm -V
// makes of it (for the reader: the test compares with rpm itself).
var rpmMutations = []struct {
	name string
	do   func(t *testing.T, d string)
}{
	{"content and size (S5)", func(t *testing.T, d string) { appendTo(t, d+"/main.conf", "more\n") }},
	{"content of the same size (5)", func(t *testing.T, d string) { must(t, os.WriteFile(d+"/plain2", []byte("plainX\n"), 0)) }},
	{"%verify(not md5 size): nothing", func(t *testing.T, d string) { appendTo(t, d+"/accounts", "core:x:1000\n") }},
	{"mode (M)", func(t *testing.T, d string) { must(t, os.Chmod(d+"/plain", 0o600)) }},
	{"%verify(not mode): nothing", func(t *testing.T, d string) { must(t, os.Chmod(d+"/anymode", 0o600)) }},
	{"owner and group (UG)", func(t *testing.T, d string) { must(t, os.Lchown(d+"/svc.conf", 0, 0)) }},
	{"link target (L)", func(t *testing.T, d string) {
		must(t, os.Remove(d+"/link"))
		must(t, os.Symlink("plain", d+"/link"))
	}},
	{"missing", func(t *testing.T, d string) { must(t, os.Remove(d+"/plain")) }},
	{"%config(missingok) missing: nothing", func(t *testing.T, d string) { must(t, os.Remove(d+"/optional")) }},
	{"%ghost present, its mode", func(t *testing.T, d string) { writeFile(t, d+"/ghost-present", "whatever\n", 0o644) }},
	{"%ghost present, any content", func(t *testing.T, d string) { writeFile(t, d+"/state", "state\n", 0o600) }},
	{"directory mode (M)", func(t *testing.T, d string) { must(t, os.Chmod(d+"/private", 0o755)) }},
	{"ACL beyond the mode (M)", func(t *testing.T, d string) { run(t, "setfacl", "-m", "u:990:r", d+"/plain2") }},
	{"capabilities removed (P)", func(t *testing.T, d string) { run(t, "setcap", "-r", d+"/tool") }},
	{"file to directory", func(t *testing.T, d string) {
		must(t, os.Remove(d+"/setuid-nouser"))
		must(t, os.Mkdir(d+"/setuid-nouser", 0o755))
	}},
	{"file to link (L)", func(t *testing.T, d string) {
		must(t, os.Remove(d+"/other.conf"))
		must(t, os.Symlink("main.conf", d+"/other.conf"))
	}},
	{"shared path's mode (M, both packages)", func(t *testing.T, d string) { must(t, os.Chmod(d+"/shared", 0o600)) }},
	{"touch: nothing", func(t *testing.T, d string) {
		then := time.Now().Add(-72 * time.Hour)
		must(t, os.Chtimes(d+"/main.conf", then, then))
	}},
	{"xattr: nothing", func(t *testing.T, d string) { must(t, syscall.Setxattr(d+"/plain2", "user.x", []byte("1"), 0)) }},
	{"unowned file: nothing", func(t *testing.T, d string) { writeFile(t, d+"/unowned", "x", 0o644) }},
}

func TestRPMVerifyOracle(t *testing.T) {
	harness.RequireRoot(t, "installing packages with owners and capabilities")
	harness.RequireTools(t, "rpm", "rpmbuild", "setfacl", "setcap")
	bin := harness.Binary(t)
	rpms := buildSpecs(t, map[string]string{"imgconf": imgconfSpec, "imgshared": imgsharedSpec})
	// Every change at once, then random subsets of them.
	rounds := [][]int{}
	all := make([]int, len(rpmMutations))
	for i := range all {
		all[i] = i
	}
	rounds = append(rounds, all, nil)
	rng := rand.New(rand.NewPCG(39, 5))
	for range 4 {
		var sub []int
		for i := range rpmMutations {
			if rng.IntN(3) == 0 {
				sub = append(sub, i)
			}
		}
		rounds = append(rounds, sub)
	}
	install := func(t *testing.T) string { return installRoot(t, rpms) }
	// rpm counts an ACL beyond the mode as a mode difference only when
	// built with libacl (rpm's CMakeLists.txt: WITH_ACL, on by default,
	// and in Fedora's and RHEL's rpm); Debian's rpm is built without it.
	// drift-monitor follows upstream's default: where this machine's rpm
	// cannot see ACLs, the test says so and expects the M rpm would print.
	probe := install(t)
	run(t, "setfacl", "-m", "u:990:r", probe+"/etc/imgconf/plain2")
	seesACLs := rpmVerify(t, probe)["/etc/imgconf/plain2"] == ".M......."
	if !seesACLs {
		t.Log("this rpm is built without ACL support: an ACL's M is expected as upstream's rpm prints it")
	}
	for n, round := range rounds {
		t.Run(fmt.Sprint("round", n), func(t *testing.T) {
			root := install(t)
			var names []string
			for _, i := range round {
				rpmMutations[i].do(t, root+"/etc/imgconf")
				names = append(names, rpmMutations[i].name)
			}
			t.Logf("changes: %s", strings.Join(names, "; "))
			want := rpmVerify(t, root)
			if !seesACLs && hasACL(root+"/etc/imgconf/plain2") {
				l := []byte(want["/etc/imgconf/plain2"])
				if len(l) == 0 {
					l = []byte(".........")
				}
				l[1] = 'M'
				want["/etc/imgconf/plain2"] = string(l)
			}
			rep := checkImage(t, bin, root)
			if rep.Image.Baseline != "rpm" {
				t.Fatalf("baseline %q, want rpm (%s)", rep.Image.Baseline, rep.Image.Unavailable)
			}
			got := map[string]string{}
			for _, d := range rep.Image.Differences {
				got[d.Path] = d.RPM
				if d.Class != "undeclared" {
					t.Errorf("%s: class %s, want undeclared (no config)", d.Path, d.Class)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("differences (-rpm -Va +drift-monitor):\n%s", diff)
			}
			if len(round) == len(rpmMutations) && len(want) < 10 {
				t.Errorf("rpm -Va lists %d paths after every change: the packages are not what the test means", len(want))
			}
		})
	}
}

// installRoot installs the packages into a new root with accounts for
// their owners, files and all, with rpm --root.
func installRoot(t *testing.T, rpms []string) string {
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	writeFile(t, root+"/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nsvc:x:990:990::/:/sbin/nologin\n", 0o644)
	writeFile(t, root+"/etc/group", "root:x:0:\nsvc:x:990:\n", 0o644)
	run(t, "rpm", "--root", root, "--dbpath", "/var/lib/rpm", "--initdb")
	run(t, "rpm", append([]string{"--root", root, "--dbpath", "/var/lib/rpm", "-i", "--nodeps", "--noscripts"}, rpms...)...)
	return root
}

// rpmVerify is `rpm -Va --nomtime` for the paths under /etc: each path's
// attribute letters (merged over the packages that own it) or "missing".
func rpmVerify(t *testing.T, root string) map[string]string {
	cmd := exec.Command("rpm", "--root", root, "--dbpath", "/var/lib/rpm", "-Va", "--nomtime")
	out, _ := cmd.Output() // exits 1 when anything differs
	res := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		var letters, p string
		switch {
		case strings.HasPrefix(l, "missing "):
			letters, p = "missing", strings.TrimSpace(l[12:])
		case len(l) > 13:
			letters, p = l[:9], l[13:]
		default:
			continue
		}
		if !strings.HasPrefix(p, "/etc/") {
			continue
		}
		if prev, ok := res[p]; ok && prev != "missing" && letters != "missing" {
			b := []byte(prev)
			for i := range b {
				if letters[i] != '.' {
					b[i] = letters[i]
				}
			}
			letters = string(b)
		}
		res[p] = letters
	}
	return res
}

// buildSpecs builds each spec with rpmbuild and returns the packages.
func buildSpecs(t *testing.T, specs map[string]string) []string {
	top := t.TempDir()
	var out []string
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		spec := filepath.Join(top, n+".spec")
		writeFile(t, spec, specs[n], 0o644)
		run(t, "rpmbuild", "-bb", "--quiet", "--define", "_topdir "+top, spec)
		out = append(out, filepath.Join(top, "RPMS/noarch", n+"-1.0-1.noarch.rpm"))
	}
	return out
}

func hasACL(p string) bool {
	_, err := syscall.Getxattr(p, "system.posix_acl_access", make([]byte, 256))
	return err == nil
}

func appendTo(t *testing.T, p, s string) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(s)
	must(t, err)
	must(t, f.Close())
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
