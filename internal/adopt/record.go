package adopt

import (
	"errors"
	"path"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Record writes the first-boot record (package firstboot) of the adopted
// config at host path cfg to host path dst, both inside root, keying its
// bases with key (nil: they are recorded as unknown). Like the fragment,
// it is written once, never over an existing file of its name, mode 0600,
// atomically, in a directory Record makes 0700 if it is missing: the
// record is made right after Ignition, on the first boot, and only then is
// the node as Ignition left it; a second first boot (one cut short) keeps
// the first one's record. problems lists the nodes it could not record.
// The config is loaded under bound (desired.Bound).
func Record(root *ondisk.Root, cfg, dst string, key []byte, bound desired.Bound) (res Result, problems []string, err error) {
	if err := CheckRecord(root, cfg, dst); err != nil {
		return 0, nil, err
	}
	dst = path.Clean(dst)
	switch kept, err := present(root, dst); {
	case err != nil:
		return 0, nil, err
	case kept:
		return Kept, nil, nil
	}
	// The config as the daemon will read it, alone, inside the root as
	// the daemon reads it there: what the record is of is what Ignition
	// wrote from it.
	state, err := desired.LoadInRoot(root, []string{cfg}, bound)
	if err != nil {
		return 0, nil, &Error{"recording", root.Join(dst), err}
	}
	rec, problems := firstboot.Make(root, state.Entries, cfg, key)
	raw, err := rec.Marshal()
	if err != nil {
		return 0, problems, &Error{"recording", root.Join(dst), err}
	}
	dirfd, err := mkdirs(root, path.Dir(dst), 0o700)
	if err != nil {
		return 0, problems, err
	}
	defer unix.Close(dirfd)
	res, err = install(root, dirfd, raw, dst)
	return res, problems, err
}

// CheckRecord refuses the host paths of a record Record would refuse, before
// anything is written: Adopt's fragment and the record are made together,
// and a fragment written for a record refused would be adopted without
// one.
func CheckRecord(root *ondisk.Root, cfg, dst string) error {
	if !path.IsAbs(cfg) || !path.IsAbs(dst) {
		return &Error{"recording", cfg + " as " + dst, errors.New("want absolute host paths")}
	}
	if discover.IsConfigName(path.Clean(dst)) {
		// The loader would take it for a config, and refuse the state.
		return &Error{"recording as", root.Join(path.Clean(dst)), errors.New("a config's name (.ign, .json, .yaml, .yml): the daemon would load it as one")}
	}
	return nil
}
