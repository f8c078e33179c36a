package drift_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/google/go-cmp/cmp"
)

const (
	secretWant = "$6$want$WANTEDSECRETHASH"
	secretGot  = "$6$got$FOUNDSECRETHASH"
)

// accountsDB is a root's account files: core in /etc with wheel and docker,
// the image's own in /usr/lib (nss-altfiles).
func accountsDB(t *testing.T, edit func(files map[string]string)) *desired.AccountDB {
	t.Helper()
	files := map[string]string{
		desired.PasswdFile:     "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n",
		desired.ShadowFile:     "root:*:19000::::::\ncore:" + secretWant + ":19000:0:99999:7:::\n",
		desired.GroupFile:      "root:x:0:\nwheel:x:10:core\ncore:x:1000:\ndocker:x:990:\nsudo:x:16:\n",
		desired.GShadowFile:    "wheel:::core\ndocker:" + secretWant + "::\n",
		desired.AltFilesPasswd: "bin:x:1:1:bin:/bin:/sbin/nologin\n",
		desired.AltFilesGroup:  "bin:x:1:\nadm:x:4:core\n",
	}
	if edit != nil {
		edit(files)
	}
	var raw [6][]byte
	for i, f := range desired.AccountFiles {
		if c, ok := files[f]; ok {
			raw[i] = []byte(c)
		}
	}
	return desired.ParseAccountDB(raw)
}

func userEntry(a desired.Account) desired.Entry {
	return desired.Entry{Kind: desired.KindUser, Path: desired.PasswdFile, User: a.Name, Type: desired.TypeNone, Account: &a}
}

func groupEntry(a desired.Account) desired.Entry {
	return desired.Entry{Kind: desired.KindGroup, Path: desired.GroupFile, Type: desired.TypeNone, Account: &a}
}

func TestCompareAccount(t *testing.T) {
	core := desired.Account{Name: "core", ID: ptr(1000), Gecos: ptr("CoreOS Admin"), Home: ptr("/var/home/core"),
		Shell: ptr("/bin/bash"), PrimaryGroup: ptr("core"), Groups: []string{"wheel"}, PasswordHash: ptr(secretWant)}
	docker := desired.Account{Name: "docker", ID: ptr(990), PasswordHash: ptr(secretWant)}
	tests := []struct {
		name  string
		entry desired.Entry
		edit  func(map[string]string)
		// want lists kind and path of each drift, in order.
		want []string
	}{
		{name: "user as declared", entry: userEntry(core)},
		{name: "group as declared", entry: groupEntry(docker)},
		{name: "a primary group by gid", entry: userEntry(desired.Account{Name: "core", PrimaryGroup: ptr("1000")})},
		{name: "groups by gid, repeated", entry: userEntry(desired.Account{Name: "core", Groups: []string{"10", "wheel"}})},
		{name: "an undeclared user changed is nothing", entry: userEntry(core),
			edit: func(f map[string]string) { f[desired.PasswdFile] += "eve:x:0:0::/:/bin/sh\n" }},
		{name: "uid", entry: userEntry(core), edit: replace(desired.PasswdFile, "core:x:1000:", "core:x:1001:"),
			want: []string{"uid /etc/passwd"}},
		{name: "gecos", entry: userEntry(core), edit: replace(desired.PasswdFile, "CoreOS Admin", "x"),
			want: []string{"gecos /etc/passwd"}},
		{name: "home", entry: userEntry(core), edit: replace(desired.PasswdFile, "/var/home/core", "/home/core"),
			want: []string{"home-dir /etc/passwd"}},
		{name: "shell", entry: userEntry(core), edit: replace(desired.PasswdFile, "core:/bin/bash", "core:/bin/sh"),
			want: []string{"shell /etc/passwd"}},
		{name: "primary group", entry: userEntry(core), edit: replace(desired.PasswdFile, "1000:1000", "1000:10"),
			want: []string{"primary-group /etc/passwd"}},
		{name: "primary group that does not exist", entry: userEntry(desired.Account{Name: "core", PrimaryGroup: ptr("nosuch")}),
			want: []string{"primary-group /etc/passwd"}},
		{name: "removed from a group", entry: userEntry(core), edit: replace(desired.GroupFile, "wheel:x:10:core", "wheel:x:10:"),
			want: []string{"groups /etc/group"}},
		{name: "an extra group", entry: userEntry(core), edit: replace(desired.GroupFile, "docker:x:990:", "docker:x:990:core"),
			want: []string{"groups /etc/group"}},
		{name: "password", entry: userEntry(core), edit: replace(desired.ShadowFile, secretWant, secretGot),
			want: []string{"password-hash /etc/shadow"}},
		{name: "no shadow line", entry: userEntry(core), edit: replace(desired.ShadowFile, "core:", "other:"),
			want: []string{"password-hash /etc/shadow"}},
		{name: "no /etc/shadow: the hash is passwd's own field", entry: userEntry(core), edit: func(f map[string]string) {
			delete(f, desired.ShadowFile)
			f[desired.PasswdFile] = strings.Replace(f[desired.PasswdFile], "core:x:", "core:"+secretWant+":", 1)
		}},
		{name: "no /etc/shadow: another hash in passwd's own field, where it is reported", entry: userEntry(core), edit: func(f map[string]string) {
			delete(f, desired.ShadowFile)
			f[desired.PasswdFile] = strings.Replace(f[desired.PasswdFile], "core:x:", "core:"+secretGot+":", 1)
		}, want: []string{"password-hash /etc/passwd"}},
		{name: "no /etc/gshadow: the hash is group's own field, where it is reported", entry: groupEntry(docker), edit: func(f map[string]string) {
			delete(f, desired.GShadowFile)
			f[desired.GroupFile] = strings.Replace(f[desired.GroupFile], "docker:x:", "docker:"+secretGot+":", 1)
		}, want: []string{"password-hash /etc/group"}},
		{name: "user deleted", entry: userEntry(core), edit: replace(desired.PasswdFile, "core:x", "coreX:x"),
			want: []string{"missing /etc/passwd"}},
		{name: "user that must not exist", entry: userEntry(desired.Account{Name: "core", Absent: true}),
			want: []string{"present /etc/passwd"}},
		{name: "user that must not exist in altfiles", entry: userEntry(desired.Account{Name: "bin", Absent: true}),
			want: []string{"present /usr/lib/passwd"}},
		{name: "user that must not exist, absent", entry: userEntry(desired.Account{Name: "eve", Absent: true})},
		{name: "gid", entry: groupEntry(docker), edit: replace(desired.GroupFile, "docker:x:990", "docker:x:991"),
			want: []string{"gid /etc/group"}},
		{name: "group password", entry: groupEntry(docker), edit: replace(desired.GShadowFile, secretWant, "!"),
			want: []string{"password-hash /etc/gshadow"}},
		{name: "group deleted", entry: groupEntry(docker), edit: replace(desired.GroupFile, "docker:", "dockerX:"),
			want: []string{"missing /etc/group"}},
		{name: "group that must not exist", entry: groupEntry(desired.Account{Name: "docker", Absent: true}),
			want: []string{"present /etc/group"}},
	}
	key := drift.NewKey([]byte("host key"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := drift.CompareAccount(&tt.entry, accountsDB(t, tt.edit), key)
			var got []string
			for _, d := range ds {
				got = append(got, string(d.Kind)+" "+d.Path)
				if d.EntryID != tt.entry.ID() {
					t.Errorf("EntryID %q, want %q", d.EntryID, tt.entry.ID())
				}
				if !strings.Contains(d.Message, tt.entry.Account.Name) {
					t.Errorf("message %q does not name %q", d.Message, tt.entry.Account.Name)
				}
				js, _ := json.Marshal(d)
				for _, h := range []string{secretWant, secretGot, "WANTEDSECRETHASH", "FOUNDSECRETHASH"} {
					if strings.Contains(string(js), h) || strings.Contains(d.Subject(), h) {
						t.Errorf("a password hash in the drift: %s", js)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("drift (-want +got):\n%s", diff)
			}
		})
	}
}

// A password drift carries keyed digests, which tell two hashes apart, and
// none without a key.
func TestComparePasswordDigests(t *testing.T) {
	e := userEntry(desired.Account{Name: "core", PasswordHash: ptr(secretGot)})
	db := accountsDB(t, nil)
	d := drift.CompareAccount(&e, db, drift.NewKey([]byte("k")))
	if len(d) != 1 || !strings.HasPrefix(d[0].Want, drift.KeyedDigest+":") || d[0].Want == d[0].Got {
		t.Fatalf("with a key: %+v", d)
	}
	d = drift.CompareAccount(&e, db, drift.Key{})
	if len(d) != 1 || d[0].Want != "" || d[0].Got != "" || d[0].Message != `user "core": password hash differs` {
		t.Fatalf("without a key: %+v", d)
	}
}

func replace(file, old, new string) func(map[string]string) {
	return func(f map[string]string) {
		if !strings.Contains(f[file], old) {
			panic(file + " has no " + old)
		}
		f[file] = strings.Replace(f[file], old, new, 1)
	}
}

// A shadow file the check cannot read leaves the hashes unknown: a user
// that declares one is unreadable (not clean, not a differing hash); one
// that does not is judged on the rest.
func TestCompareAccountShadowUnreadable(t *testing.T) {
	db := accountsDB(t, nil)
	db.ShadowErr = errors.New("reading /etc/shadow: permission denied")
	withHash := userEntry(desired.Account{Name: "core", PasswordHash: ptr(secretWant)})
	d := drift.CompareAccount(&withHash, db, drift.Key{})
	if len(d) != 1 || d[0].Kind != drift.Unreadable || d[0].Path != desired.ShadowFile || !strings.Contains(d[0].Message, "permission denied") {
		t.Errorf("with a declared hash: %+v", d)
	}
	without := userEntry(desired.Account{Name: "core", Shell: ptr("/bin/bash")})
	if d := drift.CompareAccount(&without, db, drift.Key{}); len(d) != 0 {
		t.Errorf("without a declared hash: %+v", d)
	}
}
