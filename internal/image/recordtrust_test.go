package image

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/writers"
)

// TestRecordRefused: the image's first-boot record is held to the rule of
// every file of settings (package writers): refused when another user
// could have written it or a directory on its path; and it is one JSON
// object, nothing after it.
func TestRecordRefused(t *testing.T) {
	const p = "/var/lib/drift-monitor/image-firstboot.json"
	for _, tc := range []struct {
		name  string
		spoil func(root string) error
		want  string
		is    error
	}{
		{"as saved", func(string) error { return nil }, "", nil},
		{"world-writable", func(root string) error { return os.Chmod(filepath.Join(root, p), 0o666) }, "mode 0666", writers.ErrOthersMayWrite},
		{"a directory above it world-writable", func(root string) error { return os.Chmod(filepath.Join(root, "var/lib"), 0o777) },
			"through directory ROOT/var/lib: mode 0777", writers.ErrOthersMayWrite},
		{"a second record after it", func(root string) error {
			raw, err := os.ReadFile(filepath.Join(root, p))
			if err == nil {
				err = os.WriteFile(filepath.Join(root, p), append(raw, raw...), 0o600)
			}
			return err
		}, "invalid character", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Chmod(root, 0o755); err != nil {
				t.Fatal(err)
			}
			r, err := ondisk.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := SaveRecord(r, p, &Record{Version: RecordVersion, Baseline: KindOstree}); err != nil {
				t.Fatal(err)
			}
			if err := tc.spoil(root); err != nil {
				t.Fatal(err)
			}
			rec, err := LoadRecord(r, p)
			want := strings.ReplaceAll(tc.want, "ROOT", root)
			switch {
			case want == "" && (err != nil || rec == nil):
				t.Errorf("LoadRecord = %v, %v; want the record", rec, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want) || tc.is != nil && !errors.Is(err, tc.is)):
				t.Errorf("LoadRecord = %v, %v; want it refused, saying %q", rec, err, want)
			}
		})
	}
}
