package osstate

import (
	"errors"
	"fmt"
	"io/fs"

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
