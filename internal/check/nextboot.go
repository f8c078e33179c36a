package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/desired"
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
// the machine-config daemon validates. ostree writes one entry per
// deployment, ostree-N-OSNAME.conf (ostree-N.conf in later releases), with
// "version N" where N counts down from the default deployment
// (src/libostree/ostree-sysroot-deploy.c, install_deployment_kernel), and
// boot loaders boot the entry of the highest version first. Entries of
// other hosts (grubby's, without an ostree= argument, whose default is
// grubenv's saved_entry) do not count: ok is false.
func BootLoaderEntries(dir string) NextBoot {
	return func() (string, string, bool, error) {
		names, err := filepath.Glob(filepath.Join(dir, "*.conf"))
		if err != nil {
			return "", "", false, err
		}
		type entry struct {
			path, version, options string
		}
		var entries []entry
		for _, p := range names {
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while we looked: ostree swaps entry directories
			}
			if err != nil {
				return "", "", false, fmt.Errorf("reading boot loader entry: %w", err)
			}
			e := entry{path: p}
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				k, v, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
				switch k {
				case "version":
					e.version = strings.TrimSpace(v)
				case "options":
					e.options = strings.TrimSpace(v)
				}
			}
			if isOstree(e.options) {
				entries = append(entries, e)
			}
		}
		if len(entries) == 0 {
			return "", "", false, nil
		}
		sort.SliceStable(entries, func(i, j int) bool {
			if c := compareVersions(entries[i].version, entries[j].version); c != 0 {
				return c > 0
			}
			return entries[i].path < entries[j].path
		})
		return entries[0].options, entries[0].path, true, nil
	}
}

func isOstree(options string) bool {
	for _, a := range desired.SplitKernelArguments(options) {
		if strings.HasPrefix(a, "ostree=") {
			return true
		}
	}
	return false
}

// compareVersions orders ostree's numeric versions as numbers, others as
// strings.
func compareVersions(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x - y
	}
	return strings.Compare(a, b)
}
