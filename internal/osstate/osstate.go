// Package osstate reads what a MachineConfig's fields beyond Ignition are
// checked against, from files under a root: the booted ostree deployment
// (its origin and its commit's metadata), the deployment of the next boot,
// the running kernel's type, FIPS mode and the root's rpm database.
//
// It promises to read only through the root (ondisk.Root), /proc and /sys
// included, so that `check --root` and tests see the root's files, and to
// need neither rpm-ostree, nor D-Bus, nor the network: the rpm database is
// queried with the root's rpm program's own reader (`rpm --root`), the
// finalization failure of the previous boot from the journal
// (journalctl), each only when asked. It does not promise a consistent
// view: an update may stage a deployment while it reads.
package osstate

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"golang.org/x/sys/unix"
)

// Host paths ostree and the kernel keep their state in.
const (
	// BootedFile exists on a host booted through ostree
	// (src/libotcore/otcore.h, OTCORE_RUN_BOOTED); empty in older
	// releases, an a{sv} with backing-root-device-inode in newer ones.
	BootedFile = "/run/ostree-booted"
	// StagedFile names the deployment staged for the next boot, an a{sv}
	// whose "target" is an a{sv} with its "name" and "osname"
	// (src/libostree/ostree-sysroot-deploy.c, serialize_deployment_to_variant).
	StagedFile  = "/run/ostree/staged-deployment"
	deployDir   = "/ostree/deploy"
	repoObjects = "/ostree/repo/objects"
	entriesDir  = "/boot/loader/entries"
	realtime    = "/sys/kernel/realtime"
	smaps       = "/proc/self/smaps"
	FIPSFile    = "/proc/sys/crypto/fips_enabled"
	cmdline     = "/proc/cmdline"
)

// Deployment is one ostree deployment as its origin and commit describe it.
type Deployment struct {
	OSName string
	// Name is the deployment's directory name, CHECKSUM.SERIAL.
	Name string
	// Image is the origin's container image without its transport (see
	// ImageOf); "" when the origin names none.
	Image string
	// Refspec is the origin's refspec or baserefspec: a deployment of an
	// ostree branch, not of an image.
	Refspec string
	// ImageErr: the origin's image reference could not be read.
	ImageErr error
	// ManifestDigest is the commit's ostree.manifest-digest (ostree-ext's
	// META_MANIFEST_DIGEST), or its parent's for a commit layered on the
	// host; "" when neither has one.
	ManifestDigest string
	// Requested are the packages the origin layers ([packages] requested),
	// Removed those it removes from the base ([overrides] remove).
	Requested, Removed []string
}

// KernelType is the kernel type a deployment is configured for, from
// what the machine-config daemon's switchKernel asks rpm-ostree for
// (machine-config-operator pkg/daemon/update.go, 7ff337a4): the base's
// kernel removed and kernel-rt-core or kernel-64k-core layered.
func (d *Deployment) KernelType() string {
	removed := false
	for _, p := range d.Removed {
		if p == "kernel" || p == "kernel-core" {
			removed = true
		}
	}
	if removed {
		for _, p := range d.Requested {
			switch p {
			case "kernel-rt-core":
				return model.KernelRealtime
			case "kernel-64k-core":
				return model.Kernel64kPages
			}
		}
	}
	return model.KernelDefault
}

// State is what was read.
type State struct {
	// Ostree: the root was booted through ostree (BootedFile exists). When
	// it is false, nothing else was read.
	Ostree bool
	// Booted is the deployment whose directory is the root; BootedErr says
	// why there is none.
	Booted    *Deployment
	BootedErr error
	// Next is the deployment of the next boot, when it is not Booted: the
	// staged one, or the default boot loader entry's; NextSource names the
	// file that says so. NextErr: it could not be determined.
	Next       *Deployment
	NextSource string
	NextErr    error

	// The running kernel: /sys/kernel/realtime says 1 (an RT kernel), and
	// its page size.
	Realtime  bool
	PageSize  int
	KernelErr error

	// FIPS: the contents of /proc/sys/crypto/fips_enabled (trimmed), or
	// FIPSMissing; the running kernel's command line.
	FIPSEnabled string
	FIPSMissing bool
	FIPSErr     error
	Cmdline     []string
	CmdlineErr  error
}

// Read reads the state of the root.
func Read(r *ondisk.Root) *State {
	s := &State{}
	booted, err := readFile(r, BootedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s
	}
	s.Ostree = true
	s.readKernel(r)
	s.readFIPS(r)
	if err != nil {
		s.BootedErr = err
		return s
	}
	deps, err := scanDeployments(r)
	if err != nil {
		s.BootedErr = err
		return s
	}
	dev, ino := r.Identity()
	if len(booted) > 0 {
		// composefs makes / an overlay: ostree-prepare-root recorded the
		// deployment directory underneath (ostree-sysroot.c, parse_deployment).
		m, err := dict(booted)
		if err != nil {
			s.BootedErr = fmt.Errorf("%s: %w", BootedFile, err)
			return s
		}
		if v, ok := m["backing-root-device-inode"]; ok {
			if dev, ino, err = v.devIno(); err != nil {
				s.BootedErr = fmt.Errorf("%s: backing-root-device-inode: %w", BootedFile, err)
				return s
			}
		}
	}
	var bootedDir *deploymentDir
	for i := range deps {
		if deps[i].dev == dev && deps[i].ino == ino {
			bootedDir = &deps[i]
		}
	}
	if bootedDir == nil {
		s.BootedErr = fmt.Errorf("no deployment under %s is the root directory (device %d, inode %d)", deployDir, dev, ino)
		return s
	}
	if s.Booted, err = readDeployment(r, bootedDir); err != nil {
		s.BootedErr = err
		return s
	}
	next, source, err := nextDeployment(r, deps)
	switch {
	case err != nil:
		s.NextErr = err
	case next != nil && next != bootedDir && !(next.dev == bootedDir.dev && next.ino == bootedDir.ino):
		if s.Next, err = readDeployment(r, next); err != nil {
			s.NextErr = err
		}
		s.NextSource = source
	}
	return s
}

// deploymentDir is a deployment's directory and identity.
type deploymentDir struct {
	osname, name string
	dev, ino     uint64
}

// scanDeployments lists ostree/deploy/OSNAME/deploy/CHECKSUM.SERIAL.
func scanDeployments(r *ondisk.Root) ([]deploymentDir, error) {
	oses, err := readDir(r, deployDir)
	if err != nil {
		return nil, err
	}
	var deps []deploymentDir
	for _, o := range oses {
		if !o.IsDir() {
			continue
		}
		dir := path.Join(deployDir, o.Name(), "deploy")
		ents, err := readDir(r, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !e.IsDir() || !isDeploymentName(e.Name()) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				return nil, err
			}
			st, ok := info.Sys().(*unix.Stat_t)
			if !ok {
				return nil, fmt.Errorf("%s: no device and inode", r.Join(path.Join(dir, e.Name())))
			}
			deps = append(deps, deploymentDir{osname: o.Name(), name: e.Name(), dev: st.Dev, ino: st.Ino})
		}
	}
	return deps, nil
}

// isDeploymentName: CHECKSUM.SERIAL, a hex SHA-256 and a number.
func isDeploymentName(n string) bool {
	csum, serial, ok := strings.Cut(n, ".")
	if !ok || len(csum) != 64 {
		return false
	}
	if _, err := hex.DecodeString(csum); err != nil {
		return false
	}
	_, err := strconv.Atoi(serial)
	return err == nil
}

// readDeployment reads a deployment's origin and its commit's metadata.
func readDeployment(r *ondisk.Root, d *deploymentDir) (*Deployment, error) {
	file := path.Join(deployDir, d.osname, "deploy", d.name+".origin")
	data, err := readFile(r, file)
	if err != nil {
		return nil, err
	}
	o, err := parseOrigin(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dep := &Deployment{OSName: d.osname, Name: d.name,
		Requested: o.list("packages", "requested"), Removed: o.list("overrides", "remove")}
	if ref := o.get("origin", "container-image-reference"); ref != "" {
		dep.Image, dep.ImageErr = ImageOf(ref)
	} else if u := o.get("origin", "custom-url"); strings.HasPrefix(u, "pivot://") {
		dep.Image = strings.TrimPrefix(u, "pivot://")
	}
	dep.Refspec = o.get("origin", "refspec")
	if dep.Refspec == "" {
		dep.Refspec = o.get("origin", "baserefspec")
	}
	csum, _, _ := strings.Cut(d.name, ".")
	dep.ManifestDigest, err = manifestDigest(r, csum)
	if err != nil {
		return nil, err
	}
	return dep, nil
}

// manifestDigest is a commit's ostree.manifest-digest, or, for a commit
// rpm-ostree layered packages on, its base's: the parent. A commit is
// layered as rpm-ostree tells it (rust/src/deployment_utils.rs,
// deployment_layeredmeta_from_commit, 56f2dcf8: rpmostree.clientlayer
// true, or without that key an rpmostree.spec key; the base is the
// commit's parent).
func manifestDigest(r *ondisk.Root, csum string) (string, error) {
	for range 2 {
		file := path.Join(repoObjects, csum[:2], csum[2:]+".commit")
		data, err := readFile(r, file)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil // a parent pruned from the repository
		}
		if err != nil {
			return "", err
		}
		meta, parent, err := commitParts(data)
		if err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		if v, ok := meta["ostree.manifest-digest"]; ok {
			d, err := v.str()
			if err != nil {
				return "", fmt.Errorf("%s: ostree.manifest-digest: %w", file, err)
			}
			return d, nil
		}
		layered := false
		if v, ok := meta["rpmostree.clientlayer"]; ok {
			layered = v.typ == "b" && len(v.data) == 1 && v.data[0] == 1
		} else {
			_, layered = meta["rpmostree.spec"]
		}
		if !layered || len(parent) != 32 {
			return "", nil
		}
		csum = hex.EncodeToString(parent)
	}
	return "", nil
}

// nextDeployment is the deployment the next boot boots: the staged one,
// else the default boot loader entry's (its ostree= argument is a chain of
// links to the deployment's directory: src/libostree/ostree-sysroot.c,
// _ostree_sysroot_parse_bootlink). nil when neither says.
func nextDeployment(r *ondisk.Root, deps []deploymentDir) (*deploymentDir, string, error) {
	staged, err := readFile(r, StagedFile)
	switch {
	case err == nil:
		m, err := dict(staged)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", StagedFile, err)
		}
		t, ok := m["target"]
		if !ok || t.typ != "a{sv}" {
			return nil, "", fmt.Errorf("%s: no target deployment", StagedFile)
		}
		tm, err := dict(t.data)
		if err != nil {
			return nil, "", fmt.Errorf("%s: target: %w", StagedFile, err)
		}
		name, err1 := tm["name"].str()
		osname, err2 := tm["osname"].str()
		if err := errors.Join(err1, err2); err != nil {
			return nil, "", fmt.Errorf("%s: target: %w", StagedFile, err)
		}
		for i := range deps {
			if deps[i].name == name && deps[i].osname == osname {
				return &deps[i], StagedFile, nil
			}
		}
		return nil, "", fmt.Errorf("%s: the staged deployment %s/%s is not under %s", StagedFile, osname, name, deployDir)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, "", err
	}
	options, source, ok, err := DefaultBootEntry(r)
	if err != nil || !ok {
		return nil, "", err
	}
	for _, a := range model.SplitKernelArguments(options) {
		link, ok := strings.CutPrefix(a, "ostree=")
		if !ok {
			continue
		}
		dev, ino, err := dirIdentity(r, link)
		if err != nil {
			return nil, "", fmt.Errorf("the default boot entry %s: %w", source, err)
		}
		for i := range deps {
			if deps[i].dev == dev && deps[i].ino == ino {
				return &deps[i], source, nil
			}
		}
		return nil, "", fmt.Errorf("the default boot entry %s: %s is no deployment", source, link)
	}
	return nil, "", nil
}

// readKernel reads the running kernel's type: /sys/kernel/realtime is 1
// on a PREEMPT_RT kernel (the kernel's kernel/ksysfs.c, realtime_show,
// CONFIG_PREEMPT_RT; the RT patch set's before 6.12), and the page size
// is the first mapping's KernelPageSize in /proc/self/smaps (the kernel's
// fs/proc/task_mmu.c): 64 kB under kernel-64k.
func (s *State) readKernel(r *ondisk.Root) {
	b, err := readFile(r, realtime)
	switch {
	case err == nil:
		s.Realtime = strings.TrimSpace(string(b)) == "1"
	case !errors.Is(err, fs.ErrNotExist):
		s.KernelErr = err
		return
	}
	f, err := openFile(r, smaps)
	if err != nil {
		s.KernelErr = err
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "KernelPageSize:")
		if !ok {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(v), " kB")
		n, err := strconv.Atoi(kb)
		if !ok || err != nil {
			s.KernelErr = fmt.Errorf("%s: unreadable KernelPageSize %q", smaps, strings.TrimSpace(v))
			return
		}
		s.PageSize = n << 10
		return
	}
	if err := sc.Err(); err != nil {
		s.KernelErr = fmt.Errorf("reading %s: %w", smaps, err)
		return
	}
	s.KernelErr = fmt.Errorf("%s: no KernelPageSize", smaps)
}

// RunningKernelType is the type of the kernel running, as the
// machine-config operator names kernel types.
func (s *State) RunningKernelType() string {
	switch {
	case s.Realtime:
		return model.KernelRealtime
	case s.PageSize == 64<<10:
		return model.Kernel64kPages
	}
	return model.KernelDefault
}

// readFIPS reads /proc/sys/crypto/fips_enabled, as the machine-config
// daemon does (pkg/daemon/update.go, processFips: a missing file is a
// kernel without FIPS mode), and the command line.
func (s *State) readFIPS(r *ondisk.Root) {
	b, err := readFile(r, FIPSFile)
	switch {
	case err == nil:
		s.FIPSEnabled = strings.TrimSpace(string(b))
	case errors.Is(err, fs.ErrNotExist):
		s.FIPSMissing = true
	default:
		s.FIPSErr = err
	}
	b, err = readFile(r, cmdline)
	s.Cmdline, s.CmdlineErr = model.SplitKernelArguments(string(bytes.TrimSpace(b))), err
}
