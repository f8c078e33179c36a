package reconcile

import (
	"crypto/hmac"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// recordedBase is the first-boot record's base of b under key, as
// firstboot.Use.Apply makes it.
func recordedBase(key []byte, b string) *model.Base {
	sum := sha256.Sum256([]byte(b))
	m := hmac.New(sha256.New, key)
	m.Write(sum[:])
	out := &model.Base{Size: int64(len(b)), Key: model.NewKey(key), Record: "/etc/drift-monitor/desired.d/10-firstboot.record"}
	copy(out.Keyed[:], m.Sum(nil))
	return out
}

// TestAppendBase: an append-only file is rewritten as its recorded base
// followed by its fragments, the base taken from the record's bytes, the
// start of the file, or the /usr/etc twin, each checked against the keyed
// digest; without a record, or with a base nothing holds any more, it is
// refused with the reason, and the file is left as it is. The old rule took
// the file as the base: a file that lost its last fragment got its first
// one twice.
func TestAppendBase(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	const frags = "line 1\nline 2\n"
	tests := []struct {
		name   string
		now    string // the file's content; "" with absent
		absent bool
		twin   string // /usr/etc/motd, when not ""
		base   func() *model.Base
		want   string // the file after the repair
		refuse string // a part of the refusal, when refused
	}{
		{name: "no record", now: "line 1\n", base: func() *model.Base { return nil },
			refuse: "no first-boot record"},
		{name: "record without a base", now: "line 1\n",
			base: func() *model.Base {
				return &model.Base{Unknown: "the first-boot record R has none: it did not end with its fragments"}
			},
			refuse: "did not end with its fragments"},
		{name: "empty base: the file lost its last fragment", now: "line 1\n",
			base: func() *model.Base { return recordedBase(key, "") }, want: frags},
		{name: "empty base: the file is gone", absent: true,
			base: func() *model.Base { return recordedBase(key, "") }, want: frags},
		{name: "base kept by the record", now: "vandalised\n",
			base: func() *model.Base { b := recordedBase(key, "banner\n"); b.Bytes = []byte("banner\n"); return b },
			want: "banner\n" + frags},
		{name: "base at the start of the file", now: "secret base\nline 1\n",
			base: func() *model.Base { return recordedBase(key, "secret base\n") }, want: "secret base\n" + frags},
		{name: "base in the /usr/etc twin", now: "vandalised\n", twin: "image motd\n",
			base: func() *model.Base { b := recordedBase(key, "image motd\n"); b.Twin = "/usr/etc/motd"; return b },
			want: "image motd\n" + frags},
		{name: "twin changed since the first boot", now: "vandalised\n", twin: "newer image motd\n",
			base:   func() *model.Base { b := recordedBase(key, "image motd\n"); b.Twin = "/usr/etc/motd"; return b },
			refuse: "nor /usr/etc/motd holds them"},
		{name: "record's bytes that are not the base", now: "vandalised\n",
			base:   func() *model.Base { b := recordedBase(key, "banner\n"); b.Bytes = []byte("forged\n"); return b },
			refuse: "does not guess"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"etc", "usr/etc"} {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			motd := filepath.Join(root, "etc/motd")
			if !tt.absent {
				if err := os.WriteFile(motd, []byte(tt.now), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.twin != "" {
				if err := os.WriteFile(filepath.Join(root, "usr/etc/motd"), []byte(tt.twin), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			mode := uint32(0o644)
			uid, gid := os.Getuid(), os.Getgid()
			entries := []model.Entry{{Kind: model.KindFile, Path: "/etc/motd", Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
				Content: &model.Content{Suffix: []byte(frags), Base: tt.base()}}}
			res := repairWith(t, root, entries, SysFS{})
			got, err := os.ReadFile(motd)
			if tt.absent && tt.refuse != "" {
				err = nil
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.refuse != "" {
				if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Problem, tt.refuse) || !strings.Contains(res.Refused[0].Problem, "append") {
					t.Errorf("refused %+v, want /etc/motd refused: ...%s...", res.Refused, tt.refuse)
				}
				if string(got) != tt.now {
					t.Errorf("a refused file was written: %q", got)
				}
				return
			}
			if !res.Clean() || string(got) != tt.want {
				t.Errorf("after the repair %q (refused %+v), want %q", got, res.Refused, tt.want)
			}
		})
	}
}

// TestAppendBaseReadsOnlyTheBase: the base is looked for at the start of a
// file that has grown to a terabyte (sparse): only the base's length is
// read, not the file.
func TestAppendBaseReadsOnlyTheBase(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	const frags = "line 1\n"
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	motd := filepath.Join(root, "etc/motd")
	if err := os.WriteFile(motd, []byte("secret base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(motd, 1<<40); err != nil {
		t.Skipf("no sparse terabyte file here: %v", err)
	}
	mode := uint32(0o644)
	uid, gid := os.Getuid(), os.Getgid()
	entries := []model.Entry{{Kind: model.KindFile, Path: "/etc/motd", Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
		Content: &model.Content{Suffix: []byte(frags), Base: recordedBase(key, "secret base\n")}}}
	res := repairWith(t, root, entries, SysFS{})
	got, err := os.ReadFile(motd)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Clean() || string(got) != "secret base\n"+frags {
		t.Errorf("after the repair %q (refused %+v), want the base and the fragment", got, res.Refused)
	}
}
