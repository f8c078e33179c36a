package desired

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestConfigWriters: a config file, or the directory that holds it, or one
// above that (package writers: every node of its path), that a user other
// than root (or whoever runs this) could write is refused, naming it, its
// mode and its owner; the directory of a config named on the command line
// may be sticky (/tmp), a desired-state directory may not.
func TestConfigWriters(t *testing.T) {
	const cfg = `{"ignition":{"version":"3.4.0"}}`
	type node struct {
		mode     os.FileMode
		uid, gid int // -1: as made
	}
	tests := []struct {
		name      string
		file, dir node
		up        *node // /etc/drift-monitor, above the directory
		explicit  bool
		want      string // "" loads; else the refused node's name and words
		rootOnly  bool
	}{
		{name: "0600 in 0700", file: node{0o600, -1, -1}, dir: node{0o700, -1, -1}},
		{name: "0644 in 0755", file: node{0o644, -1, -1}, dir: node{0o755, -1, -1}},
		{name: "a world-writable file", file: node{0o666, -1, -1}, dir: node{0o755, -1, -1}, want: "a.ign: mode 0666"},
		{name: "a world-writable directory", file: node{0o600, -1, -1}, dir: node{0o777, -1, -1}, want: "desired.d: mode 0777"},
		{name: "a sticky directory of desired state", file: node{0o600, -1, -1}, dir: node{0o777 | os.ModeSticky, -1, -1}, want: "desired.d: mode 1777"},
		{name: "a sticky directory of a config named", file: node{0o600, -1, -1}, dir: node{0o777 | os.ModeSticky, -1, -1}, explicit: true},
		{name: "a world-writable directory of a config named", file: node{0o600, -1, -1}, dir: node{0o777, -1, -1}, explicit: true,
			want: "desired.d: mode 0777"},
		{name: "a world-writable directory above", file: node{0o600, -1, -1}, dir: node{0o755, -1, -1}, up: &node{0o777, -1, -1},
			want: "through directory ROOT/etc/drift-monitor: mode 0777"},
		{name: "a world-writable directory above a config named", file: node{0o600, -1, -1}, dir: node{0o755, -1, -1}, up: &node{0o777, -1, -1},
			explicit: true, want: "through directory ROOT/etc/drift-monitor: mode 0777"},
		{name: "a file of another user's", file: node{0o600, 1000, 0}, dir: node{0o755, 0, 0}, rootOnly: true, want: "a.ign: owned by uid 1000"},
		{name: "a directory of another user's", file: node{0o600, 0, 0}, dir: node{0o755, 1000, 0}, rootOnly: true, want: "desired.d: owned by uid 1000"},
		{name: "group-writable, root's group", file: node{0o660, 0, 0}, dir: node{0o775, 0, 0}, rootOnly: true},
		{name: "group-writable, another group", file: node{0o660, 0, 1000}, dir: node{0o755, 0, 0}, rootOnly: true,
			want: "a.ign: mode 0660, owned by uid 0 and group 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rootOnly && os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			root := t.TempDir()
			dir := filepath.Join(root, model.AdminDir)
			file := filepath.Join(dir, "a.ign")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			nodes := []struct {
				p string
				n node
			}{{file, tt.file}, {dir, tt.dir}}
			if tt.up != nil {
				nodes = append(nodes, struct {
					p string
					n node
				}{filepath.Dir(dir), *tt.up})
			}
			for _, n := range nodes {
				if err := os.Chmod(n.p, n.n.mode); err != nil {
					t.Fatal(err)
				}
				if n.n.uid >= 0 {
					if err := os.Chown(n.p, n.n.uid, n.n.gid); err != nil {
						t.Fatal(err)
					}
				}
			}
			var explicit []string
			if tt.explicit {
				explicit = []string{file}
			}
			_, err := LoadState(dirHost(root), explicit)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if want := strings.ReplaceAll(tt.want, "ROOT", root); !errors.Is(err, discover.ErrOthersMayWrite) || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one saying %q", err, want)
			}
		})
	}
}
