package check

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// BootEntriesDir holds the boot loader entries (the Boot Loader
// Specification's; on ostree a symlink to loader.0 or loader.1 inside).
const BootEntriesDir = "/boot/loader/entries"

// NextBoot returns the kernel command line of the next boot and the file it
// comes from; ok is false when the host does not say (its kernel arguments
// are then only the running kernel's).
type NextBoot func() (cmdline, source string, ok bool, err error)

// BootLoaderEntries reads the next boot's command line on an rpm-ostree
// host: the options of the default deployment's boot loader entry in
// dir (/boot/loader/entries), which is what `rpm-ostree kargs` prints and
// the machine-config daemon validates (see osstate.DefaultEntry, which
// picks it).
func BootLoaderEntries(dir string) NextBoot {
	return func() (string, string, bool, error) {
		names, err := filepath.Glob(filepath.Join(dir, "*.conf"))
		if err != nil {
			return "", "", false, err
		}
		var files []osstate.BootEntry
		for _, p := range names {
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while we looked: ostree swaps entry directories
			}
			if err != nil {
				return "", "", false, fmt.Errorf("reading boot loader entry: %w", err)
			}
			files = append(files, osstate.BootEntry{Path: p, Data: data})
		}
		options, source, ok := osstate.DefaultEntry(files)
		return options, source, ok, nil
	}
}
