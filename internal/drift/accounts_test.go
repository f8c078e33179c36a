package drift_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

const (
	secretWant = "$6$want$WANTEDSECRETHASH"
	secretGot  = "$6$got$FOUNDSECRETHASH"
)

// accountsDB is a root's account files: core in /etc with wheel and docker,
// the image's own in /usr/lib (nss-altfiles).
func accountsDB(t *testing.T, edit func(files map[string]string)) *accountdb.DB {
	t.Helper()
	files := map[string]string{
		accountdb.PasswdFile:     "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n",
		accountdb.ShadowFile:     "root:*:19000::::::\ncore:" + secretWant + ":19000:0:99999:7:::\n",
		accountdb.GroupFile:      "root:x:0:\nwheel:x:10:core\ncore:x:1000:\ndocker:x:990:\nsudo:x:16:\n",
		accountdb.GShadowFile:    "wheel:::core\ndocker:" + secretWant + "::\n",
		accountdb.AltFilesPasswd: "bin:x:1:1:bin:/bin:/sbin/nologin\n",
		accountdb.AltFilesGroup:  "bin:x:1:\nadm:x:4:core\n",
	}
	if edit != nil {
		edit(files)
	}
	var raw [6][]byte
	for i, f := range accountdb.Files {
		if c, ok := files[f]; ok {
			raw[i] = []byte(c)
		}
	}
	return accountdb.Parse(raw)
}

func userEntry(a model.Account) model.Entry {
	return model.Entry{Kind: model.KindUser, Path: accountdb.PasswdFile, User: a.Name, Type: model.TypeNone, Account: &a}
}

func groupEntry(a model.Account) model.Entry {
	return model.Entry{Kind: model.KindGroup, Path: accountdb.GroupFile, Type: model.TypeNone, Account: &a}
}

func TestCompareAccount(t *testing.T) {
	core := model.Account{Name: "core", ID: ptr(1000), Gecos: ptr("CoreOS Admin"), Home: ptr("/var/home/core"),
		Shell: ptr("/bin/bash"), PrimaryGroup: ptr("core"), Groups: []string{"wheel"}, PasswordHash: ptr(secretWant)}
	docker := model.Account{Name: "docker", ID: ptr(990), PasswordHash: ptr(secretWant)}
	tests := []struct {
		name  string
		entry model.Entry
		edit  func(map[string]string)
		// want lists kind and path of each drift, in order.
		want []string
	}{
		{name: "user as declared", entry: userEntry(core)},
		{name: "group as declared", entry: groupEntry(docker)},
		{name: "a primary group by gid", entry: userEntry(model.Account{Name: "core", PrimaryGroup: ptr("1000")})},
		{name: "groups by gid, repeated", entry: userEntry(model.Account{Name: "core", Groups: []string{"10", "wheel"}})},
		{name: "an undeclared user changed is nothing", entry: userEntry(core),
			edit: func(f map[string]string) { f[accountdb.PasswdFile] += "eve:x:0:0::/:/bin/sh\n" }},
		{name: "uid", entry: userEntry(core), edit: replace(accountdb.PasswdFile, "core:x:1000:", "core:x:1001:"),
			want: []string{"uid /etc/passwd"}},
		{name: "gecos", entry: userEntry(core), edit: replace(accountdb.PasswdFile, "CoreOS Admin", "x"),
			want: []string{"gecos /etc/passwd"}},
		{name: "home", entry: userEntry(core), edit: replace(accountdb.PasswdFile, "/var/home/core", "/home/core"),
			want: []string{"home-dir /etc/passwd"}},
		{name: "shell", entry: userEntry(core), edit: replace(accountdb.PasswdFile, "core:/bin/bash", "core:/bin/sh"),
			want: []string{"shell /etc/passwd"}},
		{name: "primary group", entry: userEntry(core), edit: replace(accountdb.PasswdFile, "1000:1000", "1000:10"),
			want: []string{"primary-group /etc/passwd"}},
		{name: "primary group that does not exist", entry: userEntry(model.Account{Name: "core", PrimaryGroup: ptr("nosuch")}),
			want: []string{"primary-group /etc/passwd"}},
		{name: "removed from a group", entry: userEntry(core), edit: replace(accountdb.GroupFile, "wheel:x:10:core", "wheel:x:10:"),
			want: []string{"groups /etc/group"}},
		{name: "an extra group", entry: userEntry(core), edit: replace(accountdb.GroupFile, "docker:x:990:", "docker:x:990:core"),
			want: []string{"groups /etc/group"}},
		{name: "password", entry: userEntry(core), edit: replace(accountdb.ShadowFile, secretWant, secretGot),
			want: []string{"password-hash /etc/shadow"}},
		{name: "no shadow line", entry: userEntry(core), edit: replace(accountdb.ShadowFile, "core:", "other:"),
			want: []string{"password-hash /etc/shadow"}},
		{name: "no /etc/shadow: the hash is passwd's own field", entry: userEntry(core), edit: func(f map[string]string) {
			delete(f, accountdb.ShadowFile)
			f[accountdb.PasswdFile] = strings.Replace(f[accountdb.PasswdFile], "core:x:", "core:"+secretWant+":", 1)
		}},
		{name: "no /etc/shadow: another hash in passwd's own field, where it is reported", entry: userEntry(core), edit: func(f map[string]string) {
			delete(f, accountdb.ShadowFile)
			f[accountdb.PasswdFile] = strings.Replace(f[accountdb.PasswdFile], "core:x:", "core:"+secretGot+":", 1)
		}, want: []string{"password-hash /etc/passwd"}},
		{name: "no /etc/gshadow: the hash is group's own field, where it is reported", entry: groupEntry(docker), edit: func(f map[string]string) {
			delete(f, accountdb.GShadowFile)
			f[accountdb.GroupFile] = strings.Replace(f[accountdb.GroupFile], "docker:x:", "docker:"+secretGot+":", 1)
		}, want: []string{"password-hash /etc/group"}},
		{name: "user deleted", entry: userEntry(core), edit: replace(accountdb.PasswdFile, "core:x", "coreX:x"),
			want: []string{"missing /etc/passwd"}},
		{name: "user that must not exist", entry: userEntry(model.Account{Name: "core", Absent: true}),
			want: []string{"present /etc/passwd"}},
		{name: "user that must not exist in altfiles", entry: userEntry(model.Account{Name: "bin", Absent: true}),
			want: []string{"present /usr/lib/passwd"}},
		{name: "user that must not exist, absent", entry: userEntry(model.Account{Name: "eve", Absent: true})},
		{name: "gid", entry: groupEntry(docker), edit: replace(accountdb.GroupFile, "docker:x:990", "docker:x:991"),
			want: []string{"gid /etc/group"}},
		{name: "group password", entry: groupEntry(docker), edit: replace(accountdb.GShadowFile, secretWant, "!"),
			want: []string{"password-hash /etc/gshadow"}},
		{name: "group deleted", entry: groupEntry(docker), edit: replace(accountdb.GroupFile, "docker:", "dockerX:"),
			want: []string{"missing /etc/group"}},
		{name: "group that must not exist", entry: groupEntry(model.Account{Name: "docker", Absent: true}),
			want: []string{"present /etc/group"}},
	}
	key := model.NewKey([]byte("host key"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := drift.CompareAccount(&tt.entry, accountsDB(t, tt.edit), key)
			inRows(t, ds)
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
	e := userEntry(model.Account{Name: "core", PasswordHash: ptr(secretGot)})
	db := accountsDB(t, nil)
	d := drift.CompareAccount(&e, db, model.NewKey([]byte("k")))
	if len(d) != 1 || !strings.HasPrefix(d[0].Want, model.KeyedDigest+":") || d[0].Want == d[0].Got {
		t.Fatalf("with a key: %+v", d)
	}
	d = drift.CompareAccount(&e, db, model.Key{})
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
	withHash := userEntry(model.Account{Name: "core", PasswordHash: ptr(secretWant)})
	d := drift.CompareAccount(&withHash, db, model.Key{})
	if len(d) != 1 || d[0].Kind != drift.Unreadable || d[0].Path != accountdb.ShadowFile || !strings.Contains(d[0].Message, "permission denied") {
		t.Errorf("with a declared hash: %+v", d)
	}
	without := userEntry(model.Account{Name: "core", Shell: ptr("/bin/bash")})
	if d := drift.CompareAccount(&without, db, model.Key{}); len(d) != 0 {
		t.Errorf("without a declared hash: %+v", d)
	}
}
