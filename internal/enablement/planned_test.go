package enablement

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlanned: the links of an enable are computed from the unit files a
// repair is about to write, as if they were on disk: a unit file that is
// not there yet, a drop-in that adds a WantedBy=, a mask about to be
// removed, a drop-in about to be removed, and a mask about to be made.
func TestPlanned(t *testing.T) {
	wants := func(unit string) []Link {
		return []Link{{Path: etc + wnts + unit, Target: etc + unit}}
	}
	tests := []struct {
		name    string
		fx      fixture
		planned map[string]Planned
		want    []Link
		wantErr error
	}{
		{name: "a unit file not written yet", planned: map[string]Planned{etc + "foo.service": {Content: []byte(wantedBy)}},
			want: wants("foo.service")},
		{name: "a drop-in not written yet adds WantedBy=",
			fx:      fixture{files: map[string]string{etc + "foo.service": noInstall}},
			planned: map[string]Planned{etc + "foo.service.d/10-install.conf": {Content: []byte("[Install]\nWantedBy=multi-user.target\n")}},
			want:    wants("foo.service")},
		{name: "a mask about to be removed",
			fx:      fixture{files: map[string]string{usr + "foo.service": wantedBy}, links: map[string]string{etc + "foo.service": "/dev/null"}},
			planned: map[string]Planned{etc + "foo.service": {Removed: true}},
			// Found through /lib, a link to usr/lib, first: as systemctl finds it.
			want: []Link{{Path: etc + wnts + "foo.service", Target: "/lib/systemd/system/foo.service"}}},
		{name: "a drop-in about to be removed",
			fx: fixture{files: map[string]string{etc + "foo.service": noInstall,
				etc + "foo.service.d/10-install.conf": "[Install]\nWantedBy=multi-user.target\n"}},
			planned: map[string]Planned{etc + "foo.service.d/10-install.conf": {Removed: true}}},
		{name: "a mask about to be made", fx: fixture{files: map[string]string{etc + "foo.service": wantedBy}},
			planned: map[string]Planned{etc + "foo.service": {Masked: true}}, wantErr: ErrMasked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := openTree(t, buildRoot(t, tt.fx))
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			tree.Plan(tt.planned)
			got, err := tree.EnableLinks("foo.service")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("EnableLinks: %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("links (-want +got):\n%s", diff)
			}
		})
	}
}
