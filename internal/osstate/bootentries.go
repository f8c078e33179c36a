package osstate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// BootEntry is a boot loader entry file and its contents.
type BootEntry struct {
	Path string
	Data []byte
}

// DefaultEntry picks the next boot's entry among an rpm-ostree host's boot
// loader entries and returns its options: ostree writes one entry per
// deployment, ostree-N-OSNAME.conf (ostree-N.conf in later releases), with
// "version N" where N counts down from the default deployment
// (src/libostree/ostree-sysroot-deploy.c, install_deployment_kernel), and
// boot loaders boot the entry of the highest version first. Entries of
// other hosts (grubby's, without an ostree= argument, whose default is
// grubenv's saved_entry) do not count: ok is false.
func DefaultEntry(files []BootEntry) (options, source string, ok bool) {
	type entry struct {
		path, version, options string
	}
	var entries []entry
	for _, f := range files {
		e := entry{path: f.Path}
		sc := bufio.NewScanner(bytes.NewReader(f.Data))
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
		return "", "", false
	}
	sort.SliceStable(entries, func(i, j int) bool {
		if c := compareVersions(entries[i].version, entries[j].version); c != 0 {
			return c > 0
		}
		return entries[i].path < entries[j].path
	})
	return entries[0].options, entries[0].path, true
}

// DefaultBootEntry reads the root's /boot/loader/entries (on ostree a link
// to loader.0 or loader.1 inside) and picks the default entry (see
// DefaultEntry); its source is the entry's host path.
func DefaultBootEntry(r *ondisk.Root) (options, source string, ok bool, err error) {
	ents, err := readDir(r, entriesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	var files []BootEntry
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".conf") || e.IsDir() {
			continue
		}
		p := path.Join(entriesDir, e.Name())
		data, err := readFile(r, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while we looked: ostree swaps entry directories
		}
		if err != nil {
			return "", "", false, fmt.Errorf("reading boot loader entry: %w", err)
		}
		files = append(files, BootEntry{Path: p, Data: data})
	}
	options, source, ok = DefaultEntry(files)
	return options, source, ok, nil
}

func isOstree(options string) bool {
	for _, a := range model.SplitKernelArguments(options) {
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
