package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Ignored is an entry of a desired-state directory that is not loaded: a
// file the admin may believe declares something, and that declares nothing
// (a file skipped without a word would let check call the host clean).
type Ignored struct {
	// File names it as Fragments names the files it lists (inside the root
	// for the default locations).
	File string
	// Why says why it is not loaded, and what would be.
	Why string
}

func (i Ignored) String() string { return i.File + ": not loaded: " + i.Why }

// IgnoredFiles lists, by name, the entries of the directories Fragments
// reads (DefaultDirs inside root, or the directories among explicit) that
// it does not load. A file named explicitly is loaded whatever its name;
// a file in /usr/lib masked by one of the same name in /etc is not listed
// (the mask is deliberate), nor is one of drift-monitor's own files
// (model.OwnFile: the first-boot record, which its reader uses, or refuses
// saying why). A directory that cannot be read is left to Fragments, which
// reports it.
func IgnoredFiles(root Host, explicit []string) []Ignored {
	var out []Ignored
	// add lists the entries of a directory that are not loaded; hostPath
	// is where an entry lies as a host path inside root ("" for none).
	add := func(dir, hostPath func(name string) string, ents []fs.DirEntry) {
		for _, e := range ents {
			if why := ignoredWhy(e); why != "" && model.OwnFile(hostPath(e.Name())) == "" {
				out = append(out, Ignored{File: dir(e.Name()), Why: why})
			}
		}
	}
	if len(explicit) == 0 {
		for _, d := range model.DefaultDirs {
			if ents, err := root.ReadDir(d); err == nil {
				host := func(n string) string { return path.Join(d, n) }
				add(func(n string) string { return root.Join(host(n)) }, host, ents)
			}
		}
	} else {
		for _, p := range explicit {
			if st, err := os.Stat(p); err != nil || !st.IsDir() {
				continue
			}
			// A directory named explicitly is the root's admin directory
			// when it is named as check --config names it: its own files
			// are the ones the commands read.
			host := func(string) string { return "" }
			if filepath.Clean(p) == filepath.Clean(root.Join(model.AdminDir)) {
				host = func(n string) string { return path.Join(model.AdminDir, n) }
			}
			if ents, err := os.ReadDir(p); err == nil {
				add(func(n string) string { return filepath.Join(p, n) }, host, ents)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// backupSuffixes are the names editors, package managers and admins give
// the copies they keep: never a config of their own.
var backupSuffixes = []string{"~", ".bak", ".backup", ".old", ".orig", ".save", ".swp",
	".rpmnew", ".rpmsave", ".rpmorig", ".dpkg-old", ".dpkg-new", ".dpkg-dist", ".dpkg-bak", ".ucf-dist", ".ucf-old"}

// ignoredWhy says why the entry e of a desired-state directory is not
// loaded, or "" when it is.
func ignoredWhy(e fs.DirEntry) string {
	name := e.Name()
	if e.IsDir() {
		return "a directory: desired-state directories are not read recursively"
	}
	if isFragment(name) {
		return ""
	}
	loaded := "only *" + strings.Join(extensions, ", *") + " are loaded (and *" + ChildExt + " supplies a remote child config)"
	if strings.HasPrefix(name, ".") {
		return "a hidden file (an editor's or an atomic writer's temporary); " + loaded
	}
	for _, s := range backupSuffixes {
		if strings.HasSuffix(name, s) {
			return "a backup or a package manager's copy (" + s + "); " + loaded
		}
	}
	if ext := filepath.Ext(name); ext != "" {
		return fmt.Sprintf("extension %q; %s", ext, loaded)
	}
	return "no extension; " + loaded
}

// ErrNoConfig is a load that found no config file at all: nothing is
// declared, so nothing can be checked, and that is not "clean".
var ErrNoConfig = errors.New("no desired configuration")

// NoConfigError says where no config file was found.
func NoConfigError(root Host, explicit []string) error {
	return fmt.Errorf("%w: %s: nothing to check", ErrNoConfig, NoConfigWhere(root, explicit))
}

// NoConfigWhere says where a load looked for config files, for a message
// that it found none: "no config file in DIR or DIR".
func NoConfigWhere(root Host, explicit []string) string {
	where := explicit
	if len(where) == 0 {
		for _, d := range model.DefaultDirs {
			where = append(where, root.Join(d))
		}
	}
	return "no config file in " + strings.Join(where, " or ")
}
