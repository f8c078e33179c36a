package ignspec

import (
	"errors"
	"reflect"
	"testing"

	"github.com/coreos/vcontext/path"
	"github.com/google/go-cmp/cmp"
)

// TestDowngrade: a field the stable types lack may be declared by the
// experimental ones, but not used.
func TestDowngrade(t *testing.T) {
	type inner struct {
		Name string `json:"name"`
	}
	type embedded struct {
		Mode *int `json:"mode,omitempty"`
	}
	type exp struct {
		embedded
		List  []inner `json:"list,omitempty"`
		New   *bool   `json:"newField,omitempty"`
		Inner inner   `json:"inner"`
	}
	type stable struct {
		embedded
		List  []inner `json:"list,omitempty"`
		Inner inner   `json:"inner"`
	}
	type otherType struct {
		embedded
		List  []inner `json:"list,omitempty"`
		Inner string  `json:"inner"`
	}
	mode, yes := 420, true
	tests := []struct {
		name    string
		from    exp
		to      any // a pointer to the stable type
		want    any
		context string // of the error; "" for none
	}{
		{"unused new field", exp{embedded{&mode}, []inner{{"a"}}, nil, inner{"b"}}, &stable{},
			&stable{embedded{&mode}, []inner{{"a"}}, inner{"b"}}, ""},
		{"new field set", exp{New: &yes}, &stable{}, nil, "$.newField"},
		{"a field of another type", exp{Inner: inner{"b"}}, &otherType{}, nil, "$.inner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := downgrade(reflect.ValueOf(tt.from), reflect.ValueOf(tt.to).Elem(), path.New("json"))
			if tt.context == "" {
				if err != nil {
					t.Fatalf("downgrade: %v at %s", err, c)
				}
				if diff := cmp.Diff(tt.want, tt.to, cmp.AllowUnexported(stable{})); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, errNotInStable) || c.String() != tt.context {
				t.Errorf("downgrade = %v at %s, want errNotInStable at %s", err, c, tt.context)
			}
		})
	}
}
