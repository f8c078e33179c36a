package desired

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	v3 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/google/go-cmp/cmp"
)

// TestSpecParserIsIgnitions: for every spec, on valid configs, configs with
// warnings and invalid ones, parsing by the declared version gives exactly
// what v3_5.ParseCompatibleVersion gives: the config, the report (messages,
// positions) and the error.
func TestSpecParserIsIgnitions(t *testing.T) {
	bodies := map[string]string{
		"every kind of entry": `"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,x"}},
 {"path":"/etc/b","append":[{"source":"data:;base64,eQ=="}]}],
 "directories":[{"path":"/etc/d","mode":448}],"links":[{"path":"/etc/l","target":"/etc/a"}]},
 "systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]\n","dropins":[{"name":"x.conf","contents":"[Unit]\n"}]},
 {"name":"m.service","mask":true}]},
 "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA core"]}]}`,
		"an unused key (a warning)":       `"storage":{"files":[{"path":"/etc/a","mdoe":420}]}`,
		"a relative path (invalid)":       `"storage":{"files":[{"path":"etc/a"}]}`,
		"a path declared twice (invalid)": `"storage":{"files":[{"path":"/etc/a"}],"directories":[{"path":"/etc/a"}]}`,
		"a bad data URL (invalid)":        `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:%%"}}]}`,
		"a wrong type (unparsable)":       `"storage":{"files":{"path":"/etc/a"}}`,
	}
	for _, v := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
		for name, body := range bodies {
			raw := []byte(`{"ignition":{"version":"` + v + `"},` + body + `}`)
			t.Run(v+" "+name, func(t *testing.T) {
				parse := specParser(v)
				if parse == nil {
					t.Fatalf("no parser for %s", v)
				}
				cfg, rpt, err := parse(raw)
				wantCfg, wantRpt, wantErr := v3.ParseCompatibleVersion(raw)
				if diff := cmp.Diff(wantCfg, cfg); diff != "" {
					t.Errorf("config (-Ignition +specParser):\n%s", diff)
				}
				if got, want := rpt.String(), wantRpt.String(); got != want {
					t.Errorf("report:\n%s\nIgnition's:\n%s", got, want)
				}
				if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
					t.Errorf("error %v; Ignition's %v", err, wantErr)
				}
				if strings.Contains(name, "invalid") && err == nil {
					t.Errorf("an invalid config parsed")
				}
			})
		}
	}
	if specParser("3.6.0-experimental") != nil || specParser("") != nil {
		t.Error("a parser for a version Ignition's own path must handle")
	}
}

// TestSpec34Is35 guards parseIgnitionFrom's reason to skip the newest spec's
// validation of a translated 3.4.0 config: 3.5.0's types are 3.4.0's and a
// Luks Cex. (That their validation is the same but for Cex's is read in
// Ignition's source, config/v3_4/types against config/v3_5/types; a new
// Ignition with other types fails here first.)
func TestSpec34Is35(t *testing.T) {
	old := shape(reflect.TypeFor[t34.Config](), "")
	newest := shape(reflect.TypeFor[types.Config](), "Luks.Cex")
	if old != newest {
		t.Errorf("3.4.0's types:\n%s\n3.5.0's without Luks.Cex:\n%s", old, newest)
	}
	if shape(reflect.TypeFor[types.Config](), "") == old {
		t.Error("shape does not tell 3.5.0's Luks from 3.4.0's")
	}
}

// shape describes a type's structure (field names, json tags, kinds), but
// not its package, leaving out the field skip ("Type.Field").
func shape(t reflect.Type, skip string) string {
	seen := map[reflect.Type]bool{}
	var b strings.Builder
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice:
			b.WriteString(t.Kind().String() + " ")
			walk(t.Elem(), depth)
		case reflect.Struct:
			b.WriteString(t.Name())
			if seen[t] {
				return
			}
			seen[t] = true
			b.WriteString(" {\n")
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				if t.Name()+"."+f.Name == skip {
					continue
				}
				fmt.Fprintf(&b, "%s%s %q ", strings.Repeat("\t", depth+1), f.Name, f.Tag)
				walk(f.Type, depth+1)
				b.WriteString("\n")
			}
			b.WriteString(strings.Repeat("\t", depth) + "}")
		default:
			b.WriteString(t.Kind().String())
		}
	}
	walk(t, 0)
	return b.String()
}
