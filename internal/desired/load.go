package desired

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Merge merges fragments in order with Ignition's merge semantics (a later
// fragment's entry replaces an earlier one with the same key) and validates
// the result, so that entries from different fragments that conflict (one path
// declared as a file and as a directory) are refused.
func Merge(frags []parsed.Fragment) (types.Config, error) {
	if len(frags) == 1 && frags[0].Validated {
		// One fragment, validated when parsed: nothing to conflict with
		// (validating again would cost as much as the parse's validation),
		// and Ignition's merge onto an empty config gives it back as it is
		// (config/merge/merge.go, mergeStruct: every field of an empty
		// parent takes the child's; an empty list becomes nil) after
		// copying all of it by reflection: a tenth of a load of 10,000
		// files. The config returned shares the fragment's lists.
		cfg := frags[0].Config
		cfg.Ignition.Version = types.MaxVersion.String()
		return cfg, nil
	}
	if err := typeConflicts(frags); err != nil {
		return types.Config{}, err
	}
	var merged types.Config
	merged.Ignition.Version = types.MaxVersion.String()
	for _, f := range frags {
		merged = types.Merge(merged, f.Config)
	}
	if rpt := validate.ValidateWithContext(merged, nil); rpt.IsFatal() {
		names := make([]string, len(frags))
		for i, f := range frags {
			names[i] = f.File
		}
		le := ignition.ReportError(strings.Join(names, ", "), nil, rpt, ignerrors.ErrInvalid, false)
		le.Err = fmt.Errorf("fragments conflict after merging: %w", le.Err)
		return merged, le
	}
	return merged, nil
}

// typeConflicts refuses a path declared as one type of node (file, directory,
// link) in a fragment and as another type in a later one. Ignition's merge
// shares one key space for the three lists and would silently keep only the
// later node: an admin's file would vanish from the checks because another
// fragment happens to declare a directory there.
func typeConflicts(frags []parsed.Fragment) error {
	type decl struct{ what, file string }
	seen := map[string]decl{}
	for _, f := range frags {
		check := func(what, list string, i int, p string) error {
			p = path.Clean(p)
			prev, ok := seen[p]
			if ok && prev.what != what && prev.file != f.File {
				return &configerr.LoadError{File: f.File, Context: fmt.Sprintf("$.storage.%s.%d", list, i),
					Err: fmt.Errorf("%q is declared as a %s here and as a %s in %s", p, what, prev.what, prev.file)}
			}
			seen[p] = decl{what, f.File}
			return nil
		}
		s := &f.Config.Storage
		for i, n := range s.Files {
			if err := check("file", "files", i, n.Path); err != nil {
				return err
			}
		}
		for i, n := range s.Directories {
			if err := check("directory", "directories", i, n.Path); err != nil {
				return err
			}
		}
		for i, n := range s.Links {
			if err := check("link", "links", i, n.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseWithSupplies parses the fragments among files, with the .child files
// among them as the local copies of remote children; it also returns those.
// With reread, which gives how to read a file again (nil for a file that
// cannot be: a pipe), it lets go of each such fragment's bytes as it parses
// them (raws[i] is then nil; see ignspec.Bytes).
func parseWithSupplies(files []string, raws [][]byte, reread func(file string) func() ([]byte, error)) (types.Config, []parsed.Fragment, ignition.Supplies, error) {
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
		var again func() ([]byte, error)
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
	cfg, err := Merge(frags)
	return cfg, frags, sup, err
}

// LoadState finds (see Fragments), parses and merges the configuration and
// derives the entries, with owners resolved in root's account files. It is
// LoadCached without a cache: it parses every time.
func LoadState(root Host, explicit []string) (model.State, error) {
	return LoadCached(nil, root, explicit)
}

// deriveState parses the config files' contents and derives the entries with
// the accounts read from root's account files (whose contents acct holds).
func deriveState(root string, files []string, raws [][]byte, acct [4][]byte) (model.State, error) {
	return deriveStateFrom(root, files, raws, acct, nil)
}

// deriveStateFrom is deriveState; with reread (see parseWithSupplies) it
// lets go of the config files' bytes as it parses them.
func deriveStateFrom(root string, files []string, raws [][]byte, acct [4][]byte, reread func(file string) func() ([]byte, error)) (model.State, error) {
	cfg, frags, sup, err := parseWithSupplies(files, raws, reread)
	if err != nil {
		return model.State{}, err
	}
	bits := ignition.MergedSpecialBits(frags)
	mcPaths := machineconfig.Paths(frags) // before their storage goes
	certs := machineconfig.CertificateFiles(frags)
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
	machineconfig.EmptyDropins(&st, frags)
	machineconfig.Exemptions(&st, certs)
	st.Entries = append(st.Entries, machineconfig.Entries(frags)...)
	machineconfig.Passwords(&st, frags)
	machineconfig.NotRelabelled(&st, mcPaths)
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
