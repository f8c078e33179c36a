package check

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestNeeds: a pass reads a source when any entry's kind is compared with
// it, wherever that entry is among entries of other kinds.
func TestNeeds(t *testing.T) {
	f, k, u := model.KindFile, model.KindKernelArg, model.KindUser
	for _, c := range []struct {
		kinds []model.Kind
		src   model.Source
		want  bool
	}{
		{nil, model.FromNode, false},
		{[]model.Kind{f, f, f}, model.FromCmdline, false},
		{[]model.Kind{k}, model.FromCmdline, true},
		{[]model.Kind{f, f, k}, model.FromCmdline, true},
		{[]model.Kind{k, f, f}, model.FromCmdline, true},
		{[]model.Kind{f, u, f}, model.FromAccounts, true},
		{[]model.Kind{f, u, f, k, f}, model.FromOS, false},
		{[]model.Kind{u, f, f}, model.FromNode, true},
	} {
		entries := make([]model.Entry, len(c.kinds))
		for i, kind := range c.kinds {
			entries[i].Kind = kind
		}
		if got := needs(entries, c.src); got != c.want {
			t.Errorf("needs(%v, %v) = %v, want %v", c.kinds, c.src, got, c.want)
		}
	}
}
