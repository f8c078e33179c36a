package desired

import (
	"fmt"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

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
