package ostree

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// BootPackages are the host's packages an image of BootableTree holds
// besides their dependencies: a systemd that boots with its journal and
// system bus, the shell and tools the tests run inside, ostree itself,
// which updates the booted host from within as on Fedora CoreOS, and its
// units (ostree-boot), whose ostree-finalize-staged.service makes a
// staged deployment at shutdown.
var BootPackages = []string{"systemd", "dbus", "dash", "coreutils", "util-linux", "ostree", "ostree-boot"}

// BootableTree fills dir, which must be empty, with an OS image's tree
// that systemd-nspawn can boot once ostree deployed it: the /usr files of
// the host's installed Debian packages pkgs and of everything they need
// (Pre-Depends and Depends, the first installed alternative of each),
// without their documentation; the root's links into /usr that a
// merged-/usr image has (bin, sbin, lib, lib64); the empty mount points;
// and ostree -> sysroot/ostree, as ostree's images have it. The image's
// /etc (usr/etc) is left to the test.
//
// The files are hard links to the host's where dir is on /usr's
// filesystem (copies elsewhere): ostree commit only reads them, and the
// deployment ostree checks out holds the repository's own copies, so
// nothing the container does reaches the host. A test must not write into
// a file of dir in place: remove it and create it anew.
//
// Without dpkg-query the test is skipped, or fails when CI=true.
func BootableTree(t testing.TB, dir string, pkgs ...string) {
	t.Helper()
	harness.RequireTools(t, "dpkg-query")
	all, err := closure(pkgs)
	if err != nil {
		t.Fatalf("the packages of the image: %v", err)
	}
	out, err := exec.Command("dpkg-query", append([]string{"-L"}, all...)...).Output()
	if err != nil {
		t.Fatalf("dpkg-query -L %s: %v", strings.Join(all, " "), stderrOf(err))
	}
	paths := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if p, ok := imagePath(sc.Text()); ok {
			paths[p] = true
		}
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted) // a directory before what it holds
	for _, p := range sorted {
		if err := place(dir, p); err != nil {
			t.Fatalf("the image's %s: %v", p, err)
		}
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sysroot/ostree", filepath.Join(dir, "ostree")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"dev", "proc", "sys", "run", "var", "sysroot", "boot", "usr/etc"} {
		mkdir(t, filepath.Join(dir, d))
	}
	mkdir(t, filepath.Join(dir, "tmp"))
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
}

// imagePath is where a file dpkg lists goes in a merged-/usr image (/bin,
// /sbin, /lib and /lib64 are links into /usr), or false for what the
// image leaves out: anything outside /usr (the package's /etc is the
// test's to give) and documentation.
func imagePath(p string) (string, bool) {
	for _, top := range []string{"/bin/", "/sbin/", "/lib/", "/lib64/"} {
		if strings.HasPrefix(p, top) {
			p = "/usr" + p
		}
	}
	if !strings.HasPrefix(p, "/usr/") {
		return "", false
	}
	for _, doc := range []string{"/usr/share/doc/", "/usr/share/man/", "/usr/share/locale/", "/usr/share/info/", "/usr/share/lintian/"} {
		if strings.HasPrefix(p, doc) {
			return "", false
		}
	}
	return p, true
}

// place makes the host's path p (under /usr) in the tree at dir: a
// directory with its mode, a link with its target, a file hard-linked (or
// copied). A path dpkg lists that the host lacks (a file removed since,
// a diverted one) is left out.
func place(dir, p string) error {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	dst := filepath.Join(dir, p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case st.IsDir():
		if err := os.Mkdir(dst, st.Mode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return os.Chmod(dst, st.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky))
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case st.Mode().IsRegular():
		if err := os.Link(p, dst); err == nil {
			return nil
		}
		return copyFile(p, dst, st)
	}
	return nil
}

// copyFile copies a regular file with its mode and owner.
func copyFile(src, dst string, st fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if err := out.Chown(int(sys.Uid), int(sys.Gid)); err != nil {
			out.Close()
			return err
		}
	}
	if err := out.Chmod(st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// closure is pkgs and every installed package they need, by dpkg's
// database: Pre-Depends and Depends, each satisfied by its first
// installed alternative (or a package that provides it).
func closure(pkgs []string) ([]string, error) {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Package}\t${db:Status-Abbrev}\t${Pre-Depends}, ${Depends}\t${Provides}\n").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query -W: %v", stderrOf(err))
	}
	deps := map[string]string{}
	provider := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 || !strings.HasPrefix(f[1], "ii") {
			continue
		}
		deps[f[0]] = f[2]
		for _, pv := range strings.Split(f[3], ",") {
			if name := depName(pv); name != "" && provider[name] == "" {
				provider[name] = f[0]
			}
		}
	}
	installed := func(alternatives string) string {
		for _, a := range strings.Split(alternatives, "|") {
			name := depName(a)
			if _, ok := deps[name]; ok {
				return name
			}
			if p := provider[name]; p != "" {
				return p
			}
		}
		return ""
	}
	seen := map[string]bool{}
	todo := append([]string(nil), pkgs...)
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[p] {
			continue
		}
		if _, ok := deps[p]; !ok {
			return nil, fmt.Errorf("package %s is not installed (.ci/run installs what every tier needs)", p)
		}
		seen[p] = true
		for _, d := range strings.Split(deps[p], ",") {
			if strings.TrimSpace(d) == "" {
				continue
			}
			if q := installed(d); q != "" {
				todo = append(todo, q)
			}
		}
	}
	all := make([]string, 0, len(seen))
	for p := range seen {
		all = append(all, p)
	}
	sort.Strings(all)
	return all, nil
}

// depName is the package name of one alternative of a dependency field:
// "libc6 (>= 2.34)" and "libfoo:any" name libc6 and libfoo.
func depName(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " ("); i >= 0 {
		s = s[:i]
	}
	name, _, _ := strings.Cut(s, ":")
	return name
}

// stderrOf is a command's error with what it printed on stderr.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err.Error()
}
