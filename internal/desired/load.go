package desired

import (
	"path/filepath"

	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/merge"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

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
	cfg, err := merge.All(frags)
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
