// Package discover finds a machine's config files and reads them as the
// loader may trust them: which directories hold them (model.DefaultDirs
// inside a root, or the paths given on the command line), which names are
// configs (Fragments, IsConfigName) and which are not, with why
// (IgnoredFiles), in which order they merge, and that nobody but root
// could have written them (CheckWriters). It reads bytes; what they say is
// the readers' (Ignition, Butane, MachineConfig) to tell. It is apart from
// the readers so that what needs only the files (the daemon's watch on the
// config directories and its notices, reconcile's preview host, the state
// key, the trust of the image's settings file) links no parser of configs.
package discover

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// ButaneExt ends the name of a Butane config (a YAML file with variant:
// and version: is one too; see the Butane reader).
const ButaneExt = ".bu"

// extensions a config fragment may have; other files in a directory are ignored.
var extensions = []string{".ign", ".json", ".yaml", ".yml", ButaneExt}

// ChildExt names a file that supplies the bytes of a remote child config
// (the Supplies of child configs): read with the fragments, never merged
// as one.
const ChildExt = ".child"

// IsConfigName reports whether a file of this name in a desired-state
// directory is loaded as a config: not ignored, and not a child's copy.
func IsConfigName(file string) bool {
	base := filepath.Base(file)
	return isFragment(base) && filepath.Ext(base) != ChildExt
}

func isFragment(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false // editors' swap and backup files, atomic-write temporaries
	}
	ext := filepath.Ext(name)
	if ext == ChildExt {
		return true
	}
	for _, e := range extensions {
		if ext == e {
			return true
		}
	}
	return false
}

// IsFragmentName reports whether a file with this base name is read as a config
// fragment when it lies in a config directory.
func IsFragmentName(name string) bool { return isFragment(name) }

// Fragments lists the config files to load, in merge order.
//
// With no explicit paths, it reads DefaultDirs inside root, keeps only
// fragment names, lets a later directory mask a name from an earlier one, and
// orders them by file name; the files are named by their paths inside root
// (root.Join). Explicit paths (files or directories) replace the defaults:
// they are paths on the machine running the check, not host paths inside
// root. Each directory contributes its fragments in lexical order, and the
// paths are taken in the order given. A missing default directory is not an
// error; a missing explicit path is.
func Fragments(root Host, explicit []string) ([]string, error) {
	if len(explicit) == 0 {
		byName := map[string]string{}
		for _, d := range model.DefaultDirs {
			ents, err := root.ReadDir(d)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, &configerr.LoadError{File: root.Join(d), Err: errpath.Strip(err)}
			}
			for _, n := range fragmentNames(ents) {
				byName[n] = root.Join(path.Join(d, n))
			}
		}
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		files := make([]string, len(names))
		for i, n := range names {
			files[i] = byName[n]
		}
		return files, nil
	}
	var files []string
	for _, p := range explicit {
		st, err := os.Stat(p)
		if err != nil {
			return nil, &configerr.LoadError{File: p, Err: errors.Unwrap(err)}
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, &configerr.LoadError{File: p, Err: errors.Unwrap(err)}
		}
		for _, n := range fragmentNames(ents) {
			files = append(files, filepath.Join(p, n))
		}
	}
	return files, nil
}

// fragmentNames are the names of the fragments among a directory's entries,
// sorted.
func fragmentNames(ents []fs.DirEntry) []string {
	var names []string
	for _, e := range ents {
		if e.IsDir() || !isFragment(e.Name()) {
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// CacheSuffix ends the name of a config fragment that is Ignition's config
// cache, which is read as Ignition's own re-encoding of a config (its
// children merged in already, its experimental spec taken for the newest
// stable one where they mean the same): `drift-monitor adopt` writes its
// fragment so.
const CacheSuffix = ".ignition-cache.json"

// IsCacheName reports whether a config file of this name is read as
// Ignition's config cache.
func IsCacheName(file string) bool {
	base := filepath.Base(file)
	return strings.HasSuffix(base, CacheSuffix) && len(base) > len(CacheSuffix)
}
