package ignition

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/drift-monitor/drift-monitor/internal/desired/contents"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// Child configs: ignition.config.merge and ignition.config.replace.
//
// Ignition resolves them before any stage runs, in ConfigFetcher.RenderConfig
// (github.com/coreos/ignition/v2 internal/exec/config_fetcher.go, v2.24.0):
//   - replace set: the child is fetched, rendered in turn, and is the whole
//     config; the parent's storage, units, users and kernel arguments are
//     discarded (and its merge list is never looked at);
//   - otherwise each merge child, in order, is fetched, rendered in turn
//     (depth-first) and merged onto what came before with config/merge:
//     the child's values override the parent's.
//
// fetchReferencedConfig there decompresses the child (compression), checks
// verification.hash on the decompressed bytes (util.AssertValid) and parses
// it with config.Parse (any 3.x spec). A data URL needs nothing fetched and is
// resolved here the same way. Any other scheme (http, https, tftp, s3, gs,
// arn) needs the network and is never fetched: the child becomes an
// Unfetched, reported as an unverifiable notice.

// Supplies are local copies of remote children, so that what they declare
// is checked without fetching anything: a file named *.child among the
// config files (in the desired-state locations, or given with --config)
// whose SHA-512 or SHA-256 equals a remote child's verification.hash is that
// child's (decompressed) bytes, as Ignition would have verified them. A
// remote child without verification.hash cannot be matched to a file: it
// stays unfetched.
type Supplies struct {
	byHash map[string][]byte // "sha512-<hex>", "sha256-<hex>"
	file   map[string]string // hash: the file
	used   map[string]bool   // file: matched by a child
	order  []string
}

// Add offers raw, the bytes of file, as a remote child's.
func (s *Supplies) Add(file string, raw []byte) {
	if s.byHash == nil {
		s.byHash, s.file, s.used = map[string][]byte{}, map[string]string{}, map[string]bool{}
	}
	s512, s256 := sha512.Sum512(raw), sha256.Sum256(raw)
	for _, h := range []string{"sha512-" + hex.EncodeToString(s512[:]), "sha256-" + hex.EncodeToString(s256[:])} {
		s.byHash[h], s.file[h] = raw, file
	}
	s.order = append(s.order, file)
}

// lookup returns the bytes whose digest is hash (as a config declares it).
func (s Supplies) lookup(hash string) ([]byte, string, bool) {
	algo, sum, _ := strings.Cut(hash, "-")
	h := strings.ToLower(algo) + "-" + strings.ToLower(sum)
	raw, ok := s.byHash[h]
	if ok {
		s.used[s.file[h]] = true
	}
	return raw, s.file[h], ok
}

// Files are the files that supply children, in the order added.
func (s Supplies) Files() []string { return s.order }

// Used reports whether a remote child's verification.hash matched file.
func (s Supplies) Used(file string) bool { return s.used[file] }

// maxChildDepth bounds the nesting of data-URL children. Each level is
// strictly smaller than its parent, so nesting ends anyway; the bound keeps a
// hostile config from costing more than a plain one of its size.
const maxChildDepth = 16

// renderChildren resolves cfg's child configs as Ignition does (see above).
// It returns the rendered config, the children it could not fetch, and the
// Warnings of the children's parsing, prefixed with their reference.
func renderChildren(cfg types.Config, ref string, depth int, sup Supplies) (types.Config, []parsed.Unfetched, []string, error) {
	refs := cfg.Ignition.Config
	if refs.Replace.Source == nil && len(refs.Merge) == 0 {
		return cfg, nil, nil, nil
	}
	if depth >= maxChildDepth {
		return cfg, nil, nil, fmt.Errorf("%s: child configs nest deeper than %d levels", ref, maxChildDepth)
	}
	if refs.Replace.Source != nil {
		r := join(ref, "ignition.config.replace")
		child, un, warn, err := fetchChild(refs.Replace, r, sup)
		if err != nil || un != nil {
			var empty types.Config
			empty.Ignition.Version = types.MaxVersion.String()
			if un != nil {
				un.Replace = true
				return empty, []parsed.Unfetched{*un}, nil, err
			}
			return empty, nil, nil, err
		}
		rendered, uns, w, err := renderChildren(child, r, depth+1, sup)
		return rendered, uns, append(warn, w...), err
	}
	merged := cfg
	var unfetched []parsed.Unfetched
	var warnings []string
	for i, res := range refs.Merge {
		r := join(ref, fmt.Sprintf("ignition.config.merge.%d", i))
		child, un, warn, err := fetchChild(res, r, sup)
		if err != nil {
			return cfg, nil, nil, err
		}
		if un != nil {
			unfetched = append(unfetched, *un)
			continue
		}
		rendered, uns, w, err := renderChildren(child, r, depth+1, sup)
		if err != nil {
			return cfg, nil, nil, err
		}
		unfetched = append(unfetched, uns...)
		warnings = append(append(warnings, warn...), w...)
		merged = types.Merge(merged, rendered)
	}
	return merged, unfetched, warnings, nil
}

func join(parent, ref string) string {
	if parent == "" {
		return ref
	}
	return parent + " > " + ref
}

// fetchChild parses a data-URL child or a remote one supplied locally, or
// describes a remote one.
func fetchChild(res types.Resource, ref string, sup Supplies) (types.Config, *parsed.Unfetched, []string, error) {
	u, err := url.Parse(*res.Source)
	if err != nil {
		return types.Config{}, nil, nil, fmt.Errorf("%s: invalid source URL: %w", ref, err)
	}
	var raw []byte
	if u.Scheme != "data" {
		clean := *u
		clean.User, clean.RawQuery, clean.ForceQuery, clean.Fragment, clean.RawFragment = nil, "", false, "", ""
		if res.Verification.Hash == nil {
			return types.Config{}, &parsed.Unfetched{Ref: ref, Source: clean.String()}, nil, nil
		}
		local, file, ok := sup.lookup(*res.Verification.Hash)
		if !ok {
			return types.Config{}, &parsed.Unfetched{Ref: ref, Source: clean.String()}, nil, nil
		}
		raw = local
		ref += " (" + clean.String() + ", supplied by " + file + ")"
		if err := contents.VerifyHash(res.Verification, raw); err != nil {
			return types.Config{}, nil, nil, fmt.Errorf("%s: %w", ref, err)
		}
	} else if raw, _, _, err = contents.Resource(res); err != nil { // decodes, decompresses and verifies, as the fetcher does
		return types.Config{}, nil, nil, fmt.Errorf("%s: %w", ref, err)
	}
	cfg, rpt, err := parseIgnition(raw, ConfigVersion(raw))
	if err != nil {
		le := ReportError("", raw, rpt, err, false)
		msg := le.Err.Error()
		if le.Context != "" && le.Context != "$" {
			msg = le.Context + ": " + msg
		}
		return types.Config{}, nil, nil, fmt.Errorf("%s: the child config is invalid: %s", ref, msg)
	}
	var warn []string
	for _, w := range Warnings(rpt) {
		warn = append(warn, ref+": "+w)
	}
	return cfg, nil, warn, nil
}

// ResolveChildren renders frag's children into frag.Config and validates the
// result, as Ignition validates nothing after merging but the stages would
// fail on a config that does not validate.
func ResolveChildren(frag *parsed.Fragment, sup Supplies) error {
	refs := frag.Config.Ignition.Config
	if refs.Replace.Source == nil && len(refs.Merge) == 0 {
		return nil
	}
	cfg, un, warn, err := renderChildren(frag.Config, "", 0, sup)
	if err != nil {
		return err
	}
	if r := validate.ValidateWithContext(cfg, nil); r.IsFatal() {
		le := ReportError("", nil, r, ignerrors.ErrInvalid, false)
		return fmt.Errorf("after merging its child configs: %s: %w", le.Context, le.Err)
	}
	frag.Config = cfg
	frag.Unfetched = un
	frag.Warnings = append(frag.Warnings, warn...)
	frag.Validated = true
	return nil
}
