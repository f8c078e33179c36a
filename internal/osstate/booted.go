package osstate

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Booted is what ostree-prepare-root recorded of the boot in BootedFile
// (ostreedev/ostree src/libotcore/otcore.h, the OTCORE_RUN_BOOTED_KEY_*
// keys): an empty file in older releases, which says only that the host
// booted through ostree.
type Booted struct {
	// Composefs: the root is a composefs mount of the deployment
	// ("composefs").
	Composefs bool
	// TransientEtc is the directory of a transient /etc's overlay
	// ("transient-etc", otcore-prepare-root.c, otcore_mount_etc:
	// /run/ostree/transient-etc.XXXXXX, whose "upper" holds every change
	// made to /etc since the boot); "" when /etc is the deployment's own.
	TransientEtc string
}

// ReadBooted reads BootedFile. ok is false when it does not exist: the
// root was not booted through ostree.
func ReadBooted(r *ondisk.Root) (b Booted, ok bool, err error) {
	data, err := readFile(r, BootedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return b, false, nil
	}
	if err != nil || len(data) == 0 {
		return b, true, err
	}
	m, err := dict(data)
	if err != nil {
		return b, true, fmt.Errorf("%s: %w", BootedFile, err)
	}
	if v, ok := m["composefs"]; ok {
		b.Composefs = v.typ == "b" && len(v.data) == 1 && v.data[0] == 1
	}
	if v, ok := m["transient-etc"]; ok {
		if b.TransientEtc, err = v.str(); err != nil {
			return b, true, fmt.Errorf("%s: transient-etc: %w", BootedFile, err)
		}
	}
	return b, true, nil
}

// OtherDeployments lists the host paths of the deployments that are not
// the booted one (the rollback, a pinned one, the next), for readers of
// their trees; none when the root is not booted through ostree or its
// deployments cannot be listed.
func OtherDeployments(r *ondisk.Root) []string {
	deps, err := scanDeployments(r)
	if err != nil {
		return nil
	}
	dev, ino := r.Identity()
	if b, err := readFile(r, BootedFile); err == nil && len(b) > 0 {
		if m, err := dict(b); err == nil {
			if v, ok := m["backing-root-device-inode"]; ok {
				dev, ino, _ = v.devIno()
			}
		}
	}
	var out []string
	for _, d := range deps {
		if d.dev != dev || d.ino != ino {
			out = append(out, path.Join(deployDir, d.osname, "deploy", d.name))
		}
	}
	return out
}
