package desired

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/merge"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Bound is how the caller bounds the process's memory while a load parses
// (package memlimit owns that setting: memlimit.ConfigLoad): called with
// the size of the config files a load is about to parse, and never for a
// state the cache serves, it returns what lifts the bound, which the load
// calls once the state is derived (and stored). The loader changes no
// process-wide setting itself: the command or the daemon that loads
// decides, and a nil Bound leaves the settings in force alone.
type Bound func(configBytes int64) (lift func())

// LoadCached is LoadState through c: a state that c holds under the key of
// these inputs is served from it, and a state derived is given to it. Only
// successful loads are kept: a bad config is parsed every time and
// reported with its position. Configs that cannot be hashed without being
// consumed (a pipe) are not cached at all. The SSH keys are then put where
// root's layout puts them, decided at every load: it is the host's, not
// the config's. A nil c caches nothing; the parse runs under bound (see
// Bound).
func LoadCached(c statekey.Cache, root Host, explicit []string, bound Bound) (model.State, error) {
	st, err := loadState(c, root, explicit, bound)
	if err != nil {
		return st, err
	}
	return st, applySSHLayout(root, &st)
}

// LoadInRoot is LoadState for the config files at these host paths, read
// inside root as the default locations are (a link on the way resolved as
// if root were /, never to the running host's file), merged in the order
// given, under bound (see Bound). Errors name the files inside root
// (Host.Join).
func LoadInRoot(root Host, hostFiles []string, bound Bound) (model.State, error) {
	files := make([]string, len(hostFiles))
	for i, f := range hostFiles {
		files[i] = root.Join(f)
	}
	st, err := loadFiles(nil, discover.Files{Root: root}, files, bound)
	if err != nil {
		return st, err
	}
	return st, applySSHLayout(root, &st)
}

// LoadState finds (see discover.Fragments), parses and merges the configuration and
// derives the entries, with owners resolved in root's account files. It is
// LoadCached without a cache: it parses every time, and leaves the
// process's memory settings alone (no Bound).
func LoadState(root Host, explicit []string) (model.State, error) {
	return LoadCached(nil, root, explicit, nil)
}

func loadState(c statekey.Cache, root Host, explicit []string, bound Bound) (model.State, error) {
	files, err := discover.Fragments(root, explicit)
	if err != nil {
		return model.State{}, err
	}
	return loadFiles(c, discover.Files{Root: root, Explicit: len(explicit) > 0}, files, bound)
}

// loadFiles is loadState for the config files listed, read through src.
// A config another user could have written is refused (discover's
// CheckWriters).
func loadFiles(c statekey.Cache, src discover.Files, files []string, bound Bound) (model.State, error) {
	if err := src.CheckWriters(files); err != nil {
		return model.State{}, err
	}
	root := src.Root
	acct, err := readAccountFiles(root)
	if err != nil {
		return model.State{}, fmt.Errorf("reading accounts in %s: %w", root.Dir(), err)
	}
	if c != nil {
		// The config files are hashed as they are read, without holding them
		// (or named by their stamps, unread): on a hit their bytes are not
		// needed.
		memo, _ := c.(statekey.DigestMemo)
		key, ok := statekey.Of(src, files, acct, nil, statekey.Digests{Memo: memo, Now: time.Now})
		if !ok {
			c = nil
		} else if st, ok := c.Get(key); ok {
			return st, nil
		}
	}
	raws, err := src.ReadAll(files)
	if err != nil {
		return model.State{}, err
	}
	var key statekey.Key
	ok := false
	if c != nil {
		// Named by the bytes parsed, which may differ from those hashed above.
		key, ok = statekey.Of(src, files, acct, raws, statekey.Digests{})
	}
	// The parse lets go of the bytes (reading one again should its report
	// need it), and nothing of it stays alive into Put (see statekey.Cache).
	reread := func(file string) types.Reopen { return src.Reopen(file) }
	if bound != nil {
		var size int64
		for _, r := range raws {
			size += int64(len(r))
		}
		lift := bound(size) // until the state is stored, which copies its contents
		defer lift()
	}
	st, err := deriveStateFrom(root.Dir(), files, raws, acct, reread)
	raws = nil
	if err != nil {
		return model.State{}, err
	}
	if c != nil {
		if ok && !c.Put(key, &st) {
			// The state went into the cache, which lost it (an entry
			// removed by hand in between): parse again.
			return loadFiles(nil, src, files, bound)
		}
	}
	return st, nil
}

// accountFiles are the account databases readAccounts reads, in lookup order:
// users from the first two, groups from the last two.
var accountFiles = [4]string{"/etc/passwd", "/usr/lib/passwd", "/etc/group", "/usr/lib/group"}

// readAccounts reads the account databases inside root. Missing files are
// empty databases; an unreadable one is an error.
func readAccounts(root Host) (*derive.RootAccounts, error) {
	raw, err := readAccountFiles(root)
	if err != nil {
		return nil, err
	}
	return derive.ParseAccounts(raw), nil
}

// readAccountFiles reads accountFiles inside root; a missing file is nil.
func readAccountFiles(root Host) ([4][]byte, error) {
	var raw [4][]byte
	for i, f := range accountFiles {
		data, err := root.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return raw, err
		}
		raw[i] = data
	}
	return raw, nil
}

// parseWithSupplies parses the fragments among files, with the .child files
// among them as the local copies of remote children; it also returns those.
// With reread, which gives how to read a file again (nil for a file that
// cannot be: a pipe), it lets go of each such fragment's bytes as it parses
// them (raws[i] is then nil; see ignspec.Bytes).
func parseWithSupplies(files []string, raws [][]byte, reread func(file string) types.Reopen) (types.Config, []parsed.Fragment, ignition.Supplies, error) {
	sup := ignition.Supplies{}
	for i, f := range files {
		if filepath.Ext(f) == discover.ChildExt {
			sup.Add(f, raws[i])
		}
	}
	frags := make([]parsed.Fragment, 0, len(files))
	for i, f := range files {
		if filepath.Ext(f) == discover.ChildExt {
			continue
		}
		raw := raws[i]
		var again types.Reopen
		if reread != nil {
			again = reread(f)
		}
		if again != nil {
			// The bytes are not held here while they are parsed: the parse
			// may let them go, and reads them again should it need them.
			raws[i] = nil
		}
		frag, err := parseFragment(f, raw, sup, discover.IsCacheName(f), again)
		if err != nil {
			return types.Config{}, nil, ignition.Supplies{}, err
		}
		frags = append(frags, frag)
	}
	cfg, err := merge.All(frags)
	return cfg, frags, sup, err
}

// deriveState parses the config files' contents and derives the entries with
// the accounts read from root's account files (whose contents acct holds).
func deriveState(root string, files []string, raws [][]byte, acct [4][]byte) (model.State, error) {
	return deriveStateFrom(root, files, raws, acct, nil)
}

// deriveStateFrom is deriveState; with reread (see parseWithSupplies) it
// lets go of the config files' bytes as it parses them.
func deriveStateFrom(root string, files []string, raws [][]byte, acct [4][]byte, reread func(file string) types.Reopen) (model.State, error) {
	cfg, frags, sup, err := parseWithSupplies(files, raws, reread)
	if err != nil {
		return model.State{}, err
	}
	bits := ignition.MergedSpecialBits(frags)
	mcd := machineconfig.Note(frags) // before their storage goes
	// What the fragments declare in storage is in cfg, which nothing reads
	// after deriving: deriveReleasing lets each file's source go once
	// decoded.
	for i := range frags {
		frags[i].Config.Storage = types.Storage{}
	}
	st, err := derive.Releasing(cfg, derive.ParseAccounts(acct))
	if err != nil {
		return model.State{}, err
	}
	ignition.OptionalSpecialBits(&st, bits)
	mcd.Apply(&st, frags)
	for _, f := range frags {
		st.Entries = append(st.Entries, derive.UnfetchedEntries(discover.HostPath(root, f.File), f.Unfetched)...)
		st.Files = append(st.Files, f.File)
		for _, w := range f.Warnings {
			st.Warnings = append(st.Warnings, f.File+": "+w)
		}
	}
	for _, f := range sup.Files() {
		st.Files = append(st.Files, f)
		if !sup.Used(f) {
			st.Warnings = append(st.Warnings, f+": supplies no child config: its digest is no remote child's verification.hash")
		}
	}
	return st, nil
}
