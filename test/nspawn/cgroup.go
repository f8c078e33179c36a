package nspawn

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Why every container gets its own cgroup: with --keep-unit and no systemd on
// the host, systemd-nspawn puts the container's init into "payload" below
// whatever cgroup systemd-nspawn itself runs in, and that is the test
// binary's cgroup for every container. Two containers then share
// payload/system.slice/UNIT.service: each sees the other's processes as
// pids it cannot map ("Failed to dump process list ... Input/output error"
// in `systemctl status`), and cgroup-empty events no longer mean what a
// unit's systemd thinks they mean. systemd-nspawn also leaves the empty
// payload and supervisor cgroups behind. Starting systemd-nspawn in a fresh
// cgroup named after the machine fixes both: payload and supervisor land
// below it, and the harness removes the whole subtree afterwards.

// cgroups is the set of cgroup directories created for one container, one per
// hierarchy that systemd-nspawn uses.
type cgroups struct {
	dirs []string
}

// hierarchy is a cgroup hierarchy systemd-nspawn uses, with where it is
// mounted and the test binary's own cgroup in it.
type hierarchy struct {
	name  string // "name=systemd" (v1 or hybrid) or "" (cgroup2)
	mount string
	self  string // our cgroup, relative to the mount's root
}

// systemdHierarchies returns the hierarchies systemd-nspawn places a
// container in: the named "name=systemd" v1 hierarchy on legacy and hybrid
// hosts, and the cgroup2 hierarchy on hybrid and unified hosts. Each comes
// from /proc/self/cgroup and is located through /proc/self/mountinfo.
func systemdHierarchies() ([]hierarchy, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	mounts, err := cgroupMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var hs []hierarchy
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var key string
		switch {
		case f[0] == "0" && f[1] == "":
			key = "cgroup2"
		case slices.Contains(strings.Split(f[1], ","), "name=systemd"):
			key = "name=systemd"
		default:
			continue
		}
		m, ok := mounts[key]
		if !ok {
			continue
		}
		// Inside a cgroup namespace or on a bind-mounted subtree, the mount's
		// root is a prefix of our path; the directory lives below the mount.
		rel, ok := strings.CutPrefix(f[2], m.root)
		if !ok {
			continue
		}
		hs = append(hs, hierarchy{name: key, mount: m.point, self: rel})
	}
	if len(hs) == 0 {
		return nil, errors.New("no mounted name=systemd or cgroup2 hierarchy holds this process (see /proc/self/cgroup and /proc/self/mountinfo)")
	}
	return hs, nil
}

type cgroupMount struct {
	point string
	root  string
}

// cgroupMounts maps "name=systemd" and "cgroup2" to their first mount in a
// mountinfo file.
func cgroupMounts(mountinfo string) (map[string]cgroupMount, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", mountinfo, err)
	}
	defer f.Close()
	mounts := map[string]cgroupMount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		m := cgroupMount{point: unescapeMountinfo(a[4]), root: unescapeMountinfo(a[3])}
		if m.root == "/" {
			m.root = ""
		}
		var key string
		switch {
		case b[0] == "cgroup2":
			key = "cgroup2"
		case b[0] == "cgroup" && slices.Contains(strings.Split(b[2], ","), "name=systemd"):
			key = "name=systemd"
		default:
			continue
		}
		if _, seen := mounts[key]; !seen {
			mounts[key] = m
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", mountinfo, err)
	}
	return mounts, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space...) of
// mountinfo fields.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			okOct := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					okOct = false
					break
				}
				v = v*8 + (c - '0')
			}
			if okOct {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// newCgroups creates a cgroup called name below the test binary's own cgroup
// in every hierarchy systemd-nspawn uses.
func newCgroups(name string) (*cgroups, error) {
	hs, err := systemdHierarchies()
	if err != nil {
		return nil, err
	}
	cg := &cgroups{}
	for _, h := range hs {
		dir := filepath.Join(h.mount, h.self, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			rerr := cg.remove(time.Now())
			return nil, errors.Join(fmt.Errorf("creating cgroup %s: %w", dir, err), rerr)
		}
		cg.dirs = append(cg.dirs, dir)
	}
	return cg, nil
}

// procsFiles returns the cgroup.procs files a process writes its pid to in
// order to move into these cgroups.
func (cg *cgroups) procsFiles() []string {
	var fs []string
	for _, d := range cg.dirs {
		fs = append(fs, filepath.Join(d, "cgroup.procs"))
	}
	return fs
}

// remove deletes the cgroups and every cgroup below them, deepest first. A
// cgroup whose last process has just exited can refuse removal (EBUSY) for a
// moment, so remove retries until deadline.
func (cg *cgroups) remove(deadline time.Time) error {
	var errs []error
	for _, top := range cg.dirs {
		for {
			err := removeTree(top)
			if err == nil || !time.Now().Before(deadline) {
				if err != nil {
					errs = append(errs, err)
				}
				break
			}
			time.Sleep(20 * time.Millisecond) // a poll interval inside the deadline loop
		}
	}
	return errors.Join(errs...)
}

// removeTree removes the cgroup directory top and its sub-cgroups. The
// control files in them cannot (and need not) be removed: rmdir of an empty
// cgroup takes them with it.
func removeTree(top string) error {
	var dirs []string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing cgroup %s: %w", top, err)
	}
	// WalkDir visits parents before children; remove in reverse.
	for _, d := range slices.Backward(dirs) {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing cgroup %s: %w", d, err)
		}
	}
	return nil
}
