package osstate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// rpmDBDirs are where rpm keeps its database, in the order they are
// tried: rpm-ostree's (/usr/share/rpm, where /var/lib/rpm links to on
// RHCOS), rpm 4.17's default (/usr/lib/sysimage/rpm), the classic one. The
// host's rpm macros do not say where the root's is (Debian's rpm says
// ~/.rpmdb), so it is found in the root and named with --dbpath.
var rpmDBDirs = []string{"/usr/share/rpm", "/usr/lib/sysimage/rpm", "/var/lib/rpm"}

// rpmDBFiles are the databases of rpm's backends: sqlite (RHEL 9, Fedora
// 33 on), ndb, and Berkeley DB.
var rpmDBFiles = []string{"rpmdb.sqlite", "Packages.db", "Packages"}

// ErrNoRPM: the rpm program is not installed; the packages cannot be
// looked up.
var ErrNoRPM = errors.New("no rpm program to read the rpm database with")

// RPMDB finds the root's rpm database: the host directory (the first of
// rpmDBDirs that holds one of rpmDBFiles) and the database file in it;
// "" and "" when there is none.
func RPMDB(r *ondisk.Root) (dir, file string) {
	for _, d := range rpmDBDirs {
		for _, f := range rpmDBFiles {
			if fi, err := openFile(r, path.Join(d, f)); err == nil {
				fi.Close()
				return d, path.Join(d, f)
			}
		}
	}
	return "", ""
}

// Installed looks up packages in the root's rpm database and returns
// those installed. It runs `rpm --root ROOT --dbpath DIR -q`, as the
// machine-config daemon verifies its extensions (pkg/daemon/update.go,
// AreAllPackagesInstalled: `rpm -q PKG`): rpm reads every backend of its
// database (sqlite, ndb, bdb) and its header format, which a reader of our
// own would have to follow release by release, and RHCOS has rpm (rpm-ostree
// needs it). A root without a database has nothing installed.
func Installed(ctx context.Context, r *ondisk.Root, pkgs []string) (map[string]bool, error) {
	installed := map[string]bool{}
	if len(pkgs) == 0 {
		return installed, nil
	}
	dbpath, _ := RPMDB(r)
	if dbpath == "" {
		return installed, nil
	}
	prog, err := exec.LookPath("rpm")
	if err != nil {
		return nil, ErrNoRPM
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args := append([]string{"--root", r.Dir(), "--dbpath", dbpath, "-q", "--qf", "installed %{NAME}\\n", "--"}, pkgs...)
	cmd := exec.CommandContext(ctx, prog, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	// rpm -q exits with the number of packages not installed: that is
	// an answer, not a failure, when every package has its line.
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("running rpm: %w", err)
	}
	missing := 0
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "installed "); ok {
			installed[name] = true
		} else if strings.HasPrefix(line, "package ") && strings.HasSuffix(line, " is not installed") {
			missing++
		}
	}
	if err != nil && missing != exit.ExitCode() {
		return nil, fmt.Errorf("rpm --root %s --dbpath %s -q: %v: %s", r.Dir(), dbpath, err, strings.TrimSpace(stderr.String()))
	}
	return installed, nil
}
