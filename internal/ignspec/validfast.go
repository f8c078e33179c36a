package ignspec

import (
	"path"

	"github.com/coreos/ignition/v2/config/validate"
	vpath "github.com/coreos/vcontext/path"
	vvalidate "github.com/coreos/vcontext/validate"
)

// The quick path's validation of a large config without vcontext's walk.
//
// Ignition validates a config (config/validate/validate.go,
// ValidateWithContext) with two walks of vcontext (validate/validate.go):
// Validate calls the Validate method of every struct, slice element and
// pointee it meets (DefaultValidator: value receivers only), and the
// walk with ValidateDups looks for repeated keys in every list of every
// struct. Both walk by reflection, and at 10,000 files they were most of a
// cold load's allocations and half of its time: the walk copies a context
// path at every step and GetFields a slice of fields at every struct.
//
// Whether that validation has anything to say is the union of what it says
// on each part, so validFast answers for the config part by part:
//
//   - the config itself, its storage and its node lists: the Validate
//     methods the walk calls on them (Config, Storage: config/v3_6/types
//     config.go, storage.go), called here directly, and the one list of
//     duplicates among them, the node paths (duplicateNodes);
//   - each file, directory and link: the rules below, those of the
//     Validate methods the walk meets inside one (fileClean), checked
//     without the walk for the shapes whose rules are simple; any other
//     shape (HTTP headers, a verification hash, a source other than a
//     base64 data URL) is walked by vcontext, that node alone;
//   - the rest (the ignition section, kernel arguments, passwd, systemd,
//     disks, raid, filesystems, luks): walked by vcontext as before, a
//     section at a time; they are few and small.
//
// So validFast gives the answer of validateNoTree on every config, not on a
// subset: where a rule is not checked here, Ignition's walk decides.
// TestValidFastIsIgnitions and FuzzValidFast hold it to validateNoTree.
func validFast(cfg *Config) bool { return !duplicateNodes(cfg) && validatesClean(cfg, true) }

// validatesClean is validFast but for the one list of duplicates it looks
// for itself (duplicateNodes): true when Ignition's Validate walk has
// nothing to say on cfg, nor, with dups, its ValidateDups walk on the
// sections and lists that duplicateNodes does not look at. A config of
// which that is true without dups, and that repeats a node path, unit,
// dropin, user or group name, is refused for its first duplicate alone
// (firstDuplicateReport).
func validatesClean(cfg *Config, dups bool) bool {
	ctx := vpath.ContextPath{Tag: "json"}
	if len(cfg.Validate(ctx).Entries) > 0 {
		return false
	}
	if !walkClean(cfg.Ignition, dups) || !walkClean(cfg.KernelArguments, dups) || !walkClean(cfg.Passwd, dups) || !walkClean(cfg.Systemd, dups) {
		return false
	}
	s := &cfg.Storage
	if len(s.Validate(ctx).Entries) > 0 {
		return false
	}
	// The storage's other lists, walked on a copy without the nodes:
	// Storage.Validate of it says what it says of them on s (the node
	// rules see empty lists), and ValidateDups compares each list apart.
	if len(s.Disks) > 0 || len(s.Raid) > 0 || len(s.Filesystems) > 0 || len(s.Luks) > 0 {
		if !walkClean(Storage{Disks: s.Disks, Raid: s.Raid, Filesystems: s.Filesystems, Luks: s.Luks}, dups) {
			return false
		}
	}
	var scratch []byte
	for i := range s.Files {
		var ok bool
		if scratch, ok = fileClean(&s.Files[i], scratch); !ok && !walkClean(s.Files[i], dups) {
			return false
		}
	}
	for i := range s.Directories {
		d := &s.Directories[i]
		if !(nodeClean(&d.Node) && modeClean(d.Mode)) && !walkClean(*d, dups) {
			return false
		}
	}
	for i := range s.Links {
		l := &s.Links[i]
		if !nodeClean(&l.Node) && !walkClean(*l, dups) {
			return false
		}
	}
	return true
}

// walkClean: Ignition's validation without the tree has nothing to say on
// v, a part of a config: vcontext's walk of it with the Validate methods,
// and with dups the walk with ValidateDups (validateNoTree's two walks, of
// v alone).
func walkClean(v any, dups bool) bool {
	return len(vvalidate.Validate(v, "json").Entries) == 0 &&
		(!dups || len(vvalidate.ValidateCustom(v, "json", validate.ValidateDups).Entries) == 0)
}

// fileClean: vcontext's walks of f have nothing to say, when f is of the
// shape checked here (else false, and the walk decides). The walk of a
// File (config/v3_6/types) calls File.Validate (file.go: the node's path,
// node.go; the mode, mode.go; overwrite without a source), then, fields
// flattened, NodeUser.Validate and NodeGroup.Validate (node.go: not both an
// id and a name), and Resource.Validate and Verification.Validate
// (resource.go, verification.go) on the contents and each append; the one
// list ValidateDups would look at is append, which FileEmbedded1 exempts
// (IgnoreDuplicates). Of the resources only the shape of a large config's
// is checked here (resourceClean). scratch is validBase64DataURL's.
func fileClean(f *File, scratch []byte) ([]byte, bool) {
	if !nodeClean(&f.Node) || !modeClean(f.Mode) || (f.Overwrite != nil && *f.Overwrite && f.Contents.Source == nil) {
		return scratch, false
	}
	var ok bool
	if scratch, ok = resourceClean(&f.Contents, scratch); !ok {
		return scratch, false
	}
	for i := range f.Append {
		if scratch, ok = resourceClean(&f.Append[i], scratch); !ok {
			return scratch, false
		}
	}
	return scratch, true
}

// resourceClean: Resource.Validate and the walk inside it have nothing to
// say on r, when r has no HTTP headers (their rules and their duplicates
// are left to the walk) and no verification hash (Verification.Validate's
// and validateVerification's rules, left to the walk too). Then what is
// left of resource.go's rules is: a compression that is absent, "" or
// "gzip" (validateCompression), and a source that is absent, empty, or a
// valid URL (validateURLNilOK, url.go). The source of a base64 data URL
// of the shape Ignition's tools write is accepted here: url.Parse accepts
// it with scheme "data", and dataurl.DecodeString decodes it where
// validBase64DataURL does (FuzzBase64DataURL). Any other source is judged
// by Resource.Validate itself, called directly: on a resource without
// headers or hash the walk adds nothing to it (it meets HTTPHeaders empty,
// and Verification.Validate returns at once on a nil hash: verification.go),
// and the walk's reflection is what a config of many plain data URLs or
// remote sources paid for each file.
func resourceClean(r *Resource, scratch []byte) ([]byte, bool) {
	if len(r.HTTPHeaders) > 0 || r.Verification.Hash != nil {
		return scratch, false
	}
	if c := r.Compression; c != nil && *c != "" && *c != "gzip" {
		return scratch, false
	}
	if r.Source == nil || *r.Source == "" {
		return scratch, true
	}
	if scratch, ok := validBase64DataURL(*r.Source, scratch); ok {
		return scratch, true
	}
	return scratch, len(r.Validate(vpath.ContextPath{}).Entries) == 0
}

// nodeClean: Node.Validate, NodeUser.Validate and NodeGroup.Validate
// (config/v3_6/types/node.go, path.go) have nothing to say on n: its path
// is set, absolute and clean (validatePath), and neither its user nor its
// group has both an id and a name that is not empty (validateIDorName).
// They are all the walk meets in a Link (which has no Validate of its own:
// Node's is promoted) and, with the mode, in a Directory (directory.go).
func nodeClean(n *Node) bool {
	p := n.Path
	return p != "" && path.IsAbs(p) && path.Clean(p) == p &&
		!(n.User.ID != nil && n.User.Name != nil && *n.User.Name != "") &&
		!(n.Group.ID != nil && n.Group.Name != nil && *n.Group.Name != "")
}

// modeClean is validateMode's rule (config/v3_6/types/mode.go).
func modeClean(m *int) bool { return m == nil || (*m >= 0 && *m <= 0o7777) }
