package ignition

import (
	"fmt"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/contents"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// CheckDecodable refuses what Ignition's validation lets through but Derive
// cannot use (see undecodable and negativeIDs) or no tool can apply (see
// accountFields). under, if not empty, is where cfg sits in the file
// (spec.config for a MachineConfig's): it replaces the contexts' leading $.
func CheckDecodable(file string, cfg types.Config, under string, minID int) error {
	at := func(ctx string) string {
		if under == "" {
			return ctx
		}
		return under + strings.TrimPrefix(ctx, "$")
	}
	if ctx, err := undecodable(cfg); err != nil {
		return &configerr.LoadError{File: file, Context: at(ctx), Err: err}
	}
	if ctx, err := negativeIDs(cfg, minID); err != nil {
		return &configerr.LoadError{File: file, Context: at(ctx), Err: err}
	}
	if ctx, err := accountFields(cfg.Passwd); err != nil {
		return &configerr.LoadError{File: file, Context: at(ctx), Err: err}
	}
	return nil
}

// undecodable finds file contents that Ignition's validation accepts but that
// cannot be decoded (a gzip data URL that is not gzip) or whose declared
// hash they do not have: Derive would fail on them after merging, when the
// file that declared them is no longer known.
//
// Ignition's validation has decoded every data URL already; what it does not
// try is decompressing or hashing, so only compressed files and those with a
// verified data URL are decoded here (decoding all of them was a tenth of a
// load).
func undecodable(cfg types.Config) (context string, err error) {
	for i, f := range cfg.Storage.Files {
		if !contents.Compressed(f) && !contents.VerifiedDataURL(f) {
			continue
		}
		if _, err := contents.Of(f); err != nil {
			return fmt.Sprintf("$.storage.files.%d", i), err
		}
	}
	return "", nil
}

// negativeIDs refuses a user or group id below min. Ignition validates no
// sign and hands the id to chown, where -1 means "unchanged" and other
// negative values wrap to ids nobody declares: in an Ignition config (min 0)
// any negative id is a mistake. The MCD writes MachineConfigs, whose -1
// means "leave as created" (min -1; see node).
func negativeIDs(cfg types.Config, min int) (context string, err error) {
	check := func(list string, i int, n types.Node) (string, error) {
		for _, id := range []struct {
			what string
			v    *int
		}{{"user", n.User.ID}, {"group", n.Group.ID}} {
			if id.v != nil && *id.v < min {
				return fmt.Sprintf("$.storage.%s.%d.%s.id", list, i, id.what),
					fmt.Errorf("%s id %d is negative: not an id", id.what, *id.v)
			}
		}
		return "", nil
	}
	for i, f := range cfg.Storage.Files {
		if ctx, err := check("files", i, f.Node); err != nil {
			return ctx, err
		}
	}
	for i, d := range cfg.Storage.Directories {
		if ctx, err := check("directories", i, d.Node); err != nil {
			return ctx, err
		}
	}
	for i, l := range cfg.Storage.Links {
		if ctx, err := check("links", i, l.Node); err != nil {
			return ctx, err
		}
	}
	return "", nil
}

// accountFields refuses a config whose passwd section hands a tool a value
// that is not one field (model.AccountFieldProblem): the config path of the first, and
// why.
func accountFields(p types.Passwd) (context string, err error) {
	at := func(list string, i int, field string, e error) (string, error) {
		return fmt.Sprintf("$.passwd.%s.%d.%s", list, i, field), e
	}
	for i, g := range p.Groups {
		if err := model.AccountFieldProblem(model.FieldName, g.Name); err != nil {
			return at("groups", i, "name", err)
		}
		if g.PasswordHash != nil {
			if err := model.AccountFieldProblem(model.FieldHash, *g.PasswordHash); err != nil {
				return at("groups", i, "passwordHash", err)
			}
		}
	}
	for i, u := range p.Users {
		a := &model.Account{Name: u.Name, PasswordHash: u.PasswordHash, Gecos: u.Gecos, Home: u.HomeDir, Shell: u.Shell, PrimaryGroup: u.PrimaryGroup}
		for _, g := range u.Groups {
			a.Groups = append(a.Groups, string(g))
		}
		if field, err := model.AccountProblem(a); err != nil {
			return at("users", i, field, err)
		}
	}
	return "", nil
}
