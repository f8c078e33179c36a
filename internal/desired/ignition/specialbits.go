package ignition

import (
	"encoding/json"
	"path"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/vcontext/report"

	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Setuid, setgid and sticky bits declared by a spec older than 3.6.0.
//
// Ignition 2.27 drops them when it translates such a config to 3.6.0
// (v2.27.0 config/v3_6/translate/translate.go, "& ^07000"), and its
// validation of the older spec warns of them (config/v3_N/types/mode.go,
// ErrModeSpecialBits): the translated config, and so the one Derive reads,
// lacks them. But the Ignition releases that wrote today's hosts did not
// agree: up to 2.14 Ignition chmod'ed with os.FileMode(mode), whose
// permission bits drop them; 2.15 to 2.21 applied them (and lost setuid on
// Files to the chown that followed); 2.22 and later mask them. So a bit an
// older spec declares may be set or clear on disk (Entry.ModeOptional),
// while a bit it does not declare is still drift. Spec 3.6.0 applies them:
// there they are part of the mode.

// WarnsSpecialBits: Ignition's report of a config warns that its spec
// does not apply the special bits it declares.
func WarnsSpecialBits(rpt report.Report) bool {
	for _, e := range rpt.Entries {
		if e.Kind == report.Warn && e.Message == ignerrors.ErrModeSpecialBits.Error() {
			return true
		}
	}
	return false
}

// DeclaredSpecialBits are the special bits of the files and directories of
// raw, a config of a spec older than 3.6.0 (see WarnsSpecialBits), by
// cleaned path. raw is decoded as Ignition decodes it (encoding/json,
// config/util/parsingErrors.go), into the only two fields read: each path
// and mode is the one Ignition read.
func DeclaredSpecialBits(raw []byte) map[string]uint32 {
	type node struct {
		Path string `json:"path"`
		Mode *int   `json:"mode"`
	}
	var cfg struct {
		Storage struct {
			Files       []node `json:"files"`
			Directories []node `json:"directories"`
		} `json:"storage"`
	}
	if json.Unmarshal(raw, &cfg) != nil {
		return nil // Ignition has decoded it: cannot happen
	}
	bits := map[string]uint32{}
	for _, list := range [][]node{cfg.Storage.Files, cfg.Storage.Directories} {
		for _, n := range list {
			if n.Mode != nil && *n.Mode&0o7000 != 0 {
				bits[path.Clean(n.Path)] = uint32(*n.Mode) & 0o7000
			}
		}
	}
	return bits
}

// MergedSpecialBits are the optional special bits of the merged fragments,
// by cleaned path: those of the last fragment that declares a mode for the
// path, as Ignition's merge keeps the last mode (config/merge).
func MergedSpecialBits(frags []parsed.Fragment) map[string]uint32 {
	var bits map[string]uint32
	for _, f := range frags {
		if f.SpecialBits == nil && bits == nil {
			continue
		}
		if bits == nil {
			bits = map[string]uint32{}
		}
		s := &f.Config.Storage
		for _, n := range s.Files {
			if n.Mode != nil {
				bits[path.Clean(n.Path)] = f.SpecialBits[path.Clean(n.Path)]
			}
		}
		for _, n := range s.Directories {
			if n.Mode != nil {
				bits[path.Clean(n.Path)] = f.SpecialBits[path.Clean(n.Path)]
			}
		}
	}
	return bits
}

// OptionalSpecialBits marks the bits of bits as optional in the file and
// directory entries of st.
func OptionalSpecialBits(st *model.State, bits map[string]uint32) {
	if len(bits) == 0 {
		return
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if (e.Kind == model.KindFile || e.Kind == model.KindDirectory) && e.Mode != nil {
			if b := bits[e.Path]; b != 0 {
				*e.Mode &^= b
				e.ModeOptional = b
			}
		}
	}
}
