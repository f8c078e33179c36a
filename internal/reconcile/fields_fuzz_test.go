package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/test/harness"
)

// The fields FuzzAccountFields hands the tools, and where each lands:
// the file, the field's index on the account's line (-1: the member lists
// of /etc/group and /etc/gshadow).
var fuzzFields = []struct {
	name  string
	kind  drift.Kind
	group bool
	file  string
	index int
}{
	{"passwordHash", drift.PasswordHash, false, "etc/shadow", 1},
	{"gecos", drift.Gecos, false, "etc/passwd", 4},
	{"homeDir", drift.HomeDir, false, "etc/passwd", 5},
	{"shell", drift.Shell, false, "etc/passwd", 6},
	{"groups", drift.Groups, false, "etc/group etc/gshadow", -1},
	{"group passwordHash", drift.PasswordHash, true, "etc/gshadow", 1},
	{"name", drift.PasswordHash, false, "etc/shadow", 1},
	{"new user", drift.Missing, false, "etc/passwd etc/shadow etc/group etc/gshadow", -2},
}

const (
	fuzzPasswd  = "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/bash\nnext:x:1001:1001::/home/next:/bin/bash\n"
	fuzzShadow  = "root:*:19000:0:99999:7:::\ncore:!:19000:0:99999:7:::\nnext:!:19000:0:99999:7:::\n"
	fuzzGroup   = "root:x:0:\nwheel:x:10:\ncore:x:1000:\nnext:x:1001:\n"
	fuzzGShadow = "root:*::\nwheel:!::\ncore:!::\nnext:!::\n"
)

// FuzzAccountFields: a value that model.AccountFieldProblem takes as one
// field, handed to the real shadow-utils (Debian's passwd package, with
// --root on a temporary root) by the commands reconcile builds and runs,
// sets that field of that account and nothing else: every other line of
// every account file is as it was, and so is every other field of the
// account's line (but the date of the last password change). A tool may
// refuse a value the rule takes (it has rules of its own): it then changes
// nothing else (usermod may fail after it wrote the field: moving the home
// comes last). A new user's name (and gecos) handed to useradd adds that
// user's line, and nothing else. `make fuzz` runs it with new inputs;
// `make test` runs the seeds.
func FuzzAccountFields(f *testing.F) {
	for i := range fuzzFields {
		for _, v := range []string{"$6$salt$abc", "a\nroot:$6$evil$x", "x:0:0", "Core,Room 1", "/var/home/core", "/bin/sh", "wheel",
			"a\rb", "tab\there", "-o", "é", "+nis", "a b", "1234", ""} {
			f.Add(uint8(i), v)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		harness.RequireRoot(t, "the account tools (they chroot into --root)")
		harness.RequireTools(t, "useradd", "usermod", "chpasswd", "chgpasswd")
		fl := fuzzFields[int(which)%len(fuzzFields)]
		acct := &model.Account{Name: "core"}
		files := map[string]string{"etc/passwd": fuzzPasswd, "etc/shadow": fuzzShadow, "etc/group": fuzzGroup, "etc/gshadow": fuzzGShadow}
		switch fl.name {
		case "passwordHash", "group passwordHash":
			acct.PasswordHash = &value
		case "gecos":
			acct.Gecos = &value
		case "homeDir":
			acct.Home = &value
		case "shell":
			acct.Shell = &value
		case "groups":
			acct.Groups = []string{value}
		case "name":
			// An account of that name, whose hash is set.
			acct.Name = value
			hash := "$6$fuzz$hash"
			acct.PasswordHash = &hash
		case "new user":
			// A user that is not there, made by useradd.
			acct.Name = value
			acct.Creation.NoCreateHome = true
			acct.Gecos = &value
		}
		if _, err := model.AccountProblem(acct); err != nil {
			return // refused before any tool: nothing to run
		}
		switch fl.name {
		case "groups":
			// The group exists, so that usermod --groups takes it.
			files["etc/group"] += value + ":x:5000:\n"
			files["etc/gshadow"] += value + ":!::\n"
		case "name":
			files["etc/passwd"] += value + ":x:5000:5000::/:/bin/sh\n"
			files["etc/shadow"] += value + ":!:19000:0:99999:7:::\n"
		}
		dir := t.TempDir()
		for name, content := range files {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		db, err := accountdb.Read(osHost(dir))
		if err != nil {
			t.Fatal(err)
		}
		var cmds []command
		if fl.group {
			acct.Name = "wheel"
			cmds, err = groupCommands(acct, []drift.Kind{fl.kind}, db)
		} else {
			cmds, err = userCommands(acct, []drift.Kind{fl.kind}, db, false)
		}
		if err != nil {
			return // refused by the planner (a primary group that is not there...)
		}
		failed := false
		for _, c := range cmds {
			if err := (execCommands{}).Run(context.Background(), c.name, c.withRoot(dir), c.stdin); err != nil {
				failed = true
				break
			}
		}
		target, want := acct.Name, value
		if fl.name == "name" {
			want = *acct.PasswordHash
		}
		for name, before := range files {
			after, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			// A tool that fails may have written part of its change
			// (usermod writes /etc/passwd before it moves the home): that
			// part, too, is the field and nothing else.
			if fl.index == -2 {
				newLines(t, name, before, string(after), value, failed)
				continue
			}
			oneField(t, name, before, string(after), target, fl.file, fl.index, want)
		}
		if !failed && fl.name == "groups" {
			// A number is a gid to the tools (getgr_nam_gid), as to GroupOf.
			g, ok := db.GroupOf(value)
			if !ok {
				t.Fatalf("%q: usermod --groups took a group that is not there", value)
			}
			if group := readString(t, dir, "etc/group"); !strings.Contains("\n"+group, fmt.Sprintf("\n%s:x:%d:core\n", g.Name, g.GID)) {
				t.Fatalf("%q: core is not the member of group %q:\n%s", value, g.Name, group)
			}
		}
	})
}

// oneField fails unless after is before with at most the account's line
// of the field's file changed, and only in the field (and, in a shadow
// file, the date of the last change).
func oneField(t *testing.T, name, before, after, account, file string, index int, value string) {
	t.Helper()
	bl, al := strings.Split(before, "\n"), strings.Split(after, "\n")
	if len(bl) != len(al) {
		t.Fatalf("%q: %s went from %d lines to %d:\n%s", value, name, len(bl), len(al), after)
	}
	for i := range bl {
		if bl[i] == al[i] {
			continue
		}
		bf, af := strings.Split(bl[i], ":"), strings.Split(al[i], ":")
		switch {
		case !slices.Contains(strings.Fields(file), name):
			t.Fatalf("%q: %s changed, not %s: %q became %q", value, name, file, bl[i], al[i])
		case index < 0:
			// --groups: a group's member list, the last field.
			if len(af) != len(bf) || !slices.Equal(af[:len(af)-1], bf[:len(bf)-1]) {
				t.Fatalf("%q: %q became %q", value, bl[i], al[i])
			}
			continue
		case bf[0] != account || len(af) != len(bf):
			t.Fatalf("%q: the line %q became %q (the fields of %s's line may change only)", value, bl[i], al[i], account)
		}
		for j := range bf {
			if j != index && bf[j] != af[j] && !(strings.HasSuffix(name, "shadow") && j == 2) {
				t.Fatalf("%q: field %d of %q changed: %q", value, j, bl[i], al[i])
			}
		}
		if af[index] != value {
			t.Fatalf("%q: field %d of %s's line is %q, want the value", value, index, account, af[index])
		}
	}
}

// newLines fails unless after is before with lines added, each of them the
// new user's (or its group's, named after it): in /etc/passwd, one whose
// name and gecos are the value (none when useradd failed).
func newLines(t *testing.T, name, before, after, value string, failed bool) {
	t.Helper()
	added, ok := strings.CutPrefix(after, before)
	if !ok {
		t.Fatalf("%q: useradd changed a line of %s:\n%s", value, name, after)
	}
	for _, l := range strings.Split(strings.TrimSuffix(added, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.Split(l, ":")
		if f[0] != value || name == "etc/passwd" && (len(f) != 7 || f[4] != value) {
			t.Fatalf("%q: useradd added %q to %s", value, l, name)
		}
	}
	if n := strings.Count(added, "\n"); name == "etc/passwd" && n != 1 && !(failed && n == 0) {
		t.Fatalf("%q: useradd added %d lines to %s", value, n, name)
	}
}

func readString(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// osHost reads a directory's files as a desired.Host, for ReadAccountDB.
type osHost string

func (h osHost) Dir() string                     { return string(h) }
func (h osHost) Join(p string) string            { return filepath.Join(string(h), p) }
func (h osHost) Open(p string) (*os.File, error) { return os.Open(h.Join(p)) }
func (h osHost) ReadFile(p string) ([]byte, error) {
	return os.ReadFile(h.Join(p))
}
func (h osHost) ReadDir(p string) ([]os.DirEntry, error) { return os.ReadDir(h.Join(p)) }
func (h osHost) StatDir(p string) (os.FileInfo, error)   { return os.Stat(h.Join(p)) }
