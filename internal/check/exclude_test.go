package check_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestExcludeEveryKind: Exclude leaves out the drift it is true of whatever
// the entry's kind, in a full check and in one entry's Outcome alike: a
// user's password hash, reported at /etc/shadow, and an enablement, not
// only a file's content.
func TestExcludeEveryKind(t *testing.T) {
	root := t.TempDir()
	for p, content := range map[string]string{
		"/etc/passwd": "core:x:1000:1000::/home/core:/bin/sh\n",
		"/etc/shadow": "core:$6$got:19000:0:99999:7:::\n",
		"/etc/group":  "core:x:1000:\n",
		"/etc/motd":   "drifted\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries := []model.Entry{
		{Kind: model.KindFile, Path: "/etc/motd", Type: model.TypeRegular, Mode: ptr[uint32](0o644),
			Content: &model.Content{Exact: []byte("hello\n")}},
		{Kind: model.KindUser, Path: accountdb.PasswdFile, User: "core", Type: model.TypeNone,
			Account: &model.Account{Name: "core", Shell: ptr("/bin/bash"), PasswordHash: ptr("$6$want")}},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/app.service", Unit: "app.service", Type: model.TypeNone, Enabled: ptr(true)},
	}
	c := newChecker(t, root)
	c.Units = fakeUnits{"app.service": "disabled"}
	key := func(d drift.Drift) string { return string(d.Kind) + "@" + d.Path }
	all := func() []string {
		var got []string
		for _, d := range c.All(t.Context(), entries).Drift {
			got = append(got, key(d))
		}
		slices.Sort(got)
		return got
	}
	if got, want := all(), []string{"content@/etc/motd", "enablement@/etc/systemd/system/app.service",
		"password-hash@/etc/shadow", "shell@/etc/passwd"}; !slices.Equal(got, want) {
		t.Fatalf("without Exclude: %v, want %v", got, want)
	}
	c.Exclude = func(d *drift.Drift) bool {
		return d.Path == accountdb.ShadowFile || d.Kind == drift.Enablement || d.Kind == drift.Content
	}
	if got, want := all(), []string{"shell@/etc/passwd"}; !slices.Equal(got, want) {
		t.Errorf("full check with Exclude: %v, want %v", got, want)
	}
	var got []string
	for _, d := range oneByOne(c, entries) {
		got = append(got, key(d))
	}
	if want := []string{"shell@/etc/passwd"}; !slices.Equal(got, want) {
		t.Errorf("one by one with Exclude: %v, want %v", got, want)
	}
}
