package desired

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func ptr[T any](v T) *T { return &v }

// cmpEntries compares entries, whatever unexported state Content keeps.
var cmpEntries = cmpopts.IgnoreUnexported(model.Content{})

type emptyAccounts struct{}

func (emptyAccounts) LookupUser(string) (derive.User, bool) { return derive.User{}, false }
func (emptyAccounts) LookupGroup(string) (int, bool)        { return 0, false }

// fixtureAccounts reads testdata/root: alice and wheel in /etc, core and adm
// in /usr/lib (nss-altfiles), shadowed in both (the /etc entry wins).
func fixtureAccounts(t *testing.T) *derive.RootAccounts {
	t.Helper()
	a, err := readAccounts(dirHost("testdata/root"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestReadAccounts(t *testing.T) {
	a := fixtureAccounts(t)
	users := []struct {
		name string
		want derive.User
		ok   bool
	}{
		{"root", derive.User{Name: "root", UID: 0, GID: 0, Home: "/root"}, true},
		{"alice", derive.User{Name: "alice", UID: 1000, GID: 1000, Home: "/home/alice"}, true},
		{"core", derive.User{Name: "core", UID: 1001, GID: 1001, Home: "/var/home/core"}, true},
		{"shadowed", derive.User{Name: "shadowed", UID: 1500, GID: 1500, Home: "/home/shadowed-etc"}, true},
		{"broken", derive.User{}, false}, // its uid is not a number
		{"nobody", derive.User{}, false},
		{"# a comment", derive.User{}, false},
	}
	for _, u := range users {
		got, ok := a.LookupUser(u.name)
		if ok != u.ok || got != u.want {
			t.Errorf("LookupUser(%q) = %+v, %v; want %+v, %v", u.name, got, ok, u.want, u.ok)
		}
	}
	groups := []struct {
		name string
		want int
		ok   bool
	}{
		{"root", 0, true}, {"wheel", 10, true}, {"adm", 4, true}, {"core", 1001, true}, {"shadowed", 1500, true}, {"nogroup", 0, false},
	}
	for _, g := range groups {
		got, ok := a.LookupGroup(g.name)
		if ok != g.ok || got != g.want {
			t.Errorf("LookupGroup(%q) = %d, %v; want %d, %v", g.name, got, ok, g.want, g.ok)
		}
	}

	t.Run("no account files", func(t *testing.T) {
		a, err := readAccounts(dirHost(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := a.LookupUser("root"); ok {
			t.Error("found root in an empty root")
		}
	})
	t.Run("unreadable account file", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "etc/passwd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := readAccounts(dirHost(root)); err == nil {
			t.Error("ReadAccounts with a directory as etc/passwd succeeded")
		}
	})
}

// config wraps the storage, systemd and passwd sections of a config in the
// newest spec.
func config(body string) string {
	return `{"ignition":{"version":"` + types.MaxVersion.String() + `"},` + body + `}`
}

func deriveOf(t *testing.T, acct derive.Accounts, raw string) []model.Entry {
	t.Helper()
	frag, err := Parse("test.ign", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	st, err := derive.Derive(frag.Config, acct)
	if err != nil {
		t.Fatal(err)
	}
	return st.Entries
}

const (
	sha512OfBase = "9225b916768c9d224ca68a3c74052617df0f59f85647fdd88e2b130d29a60bb8b66a94b0a10812c7ef2b94326eeb71f73e309f76e16f5110bc4472b706c11731"
	sha256OfBase = "cae662172fd450bb0cd710a769079c05bfc5d8e35efa6576edc7d0377afdd4a2"
)

func TestDerive(t *testing.T) {
	root, mode644, mode755 := ptr(0), ptr[uint32](0o644), ptr[uint32](0o755)
	file := func(p string) model.Entry {
		return model.Entry{Kind: model.KindFile, Path: p, Type: model.TypeRegular, Mode: mode644, UID: root, GID: root}
	}
	// kept is a file Ignition may find there: it keeps its mode and owner.
	kept := func(p string) model.Entry { return model.Entry{Kind: model.KindFile, Path: p, Type: model.TypeRegular} }
	withContent := func(e model.Entry, c *model.Content) model.Entry { e.Content = c; return e }
	// user is the entry of a passwd.users item that declares nothing but
	// its name (and keys): the account must exist.
	user := func(name string) model.Entry {
		return model.Entry{Kind: model.KindUser, Path: "/etc/passwd", User: name, Type: model.TypeNone, Account: &model.Account{Name: name}}
	}

	tests := []struct {
		name string
		cfg  string
		want []model.Entry
	}{
		{
			// Ignition keeps an existing file: its mode and owner are not declared.
			name: "file without a source or overwrite",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a"}]}`),
			want: []model.Entry{kept("/etc/a")},
		},
		{
			name: "file with a source: Ignition's defaults",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,"}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Exact: []byte{}})},
		},
		{
			name: "append only: an existing file keeps its mode and owner",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","append":[{"source":"data:,x"}]}]}`),
			want: []model.Entry{withContent(kept("/etc/a"), &model.Content{Suffix: []byte("x")})},
		},
		{
			name: "append only, owner declared: that owner, no mode",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","user":{"id":7},"append":[{"source":"data:,x"}]}]}`),
			want: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular, UID: ptr(7), Content: &model.Content{Suffix: []byte("x")}}},
		},
		{
			name: "directory without overwrite keeps an existing one's mode and owner",
			cfg:  config(`"storage":{"directories":[{"path":"/var/lib/x"}]}`),
			want: []model.Entry{{Kind: model.KindDirectory, Path: "/var/lib/x", Type: model.TypeDirectory}},
		},
		{
			name: "directory with overwrite: Ignition's defaults",
			cfg:  config(`"storage":{"directories":[{"path":"/var/lib/x","overwrite":true}]}`),
			want: []model.Entry{{Kind: model.KindDirectory, Path: "/var/lib/x", Type: model.TypeDirectory, Mode: mode755, UID: root, GID: root}},
		},
		{
			name: "modes with setuid, setgid and sticky",
			cfg: config(`"storage":{"files":[{"path":"/usr/local/bin/su","mode":3565}],
				"directories":[{"path":"/srv/shared","mode":1023},{"path":"/srv/group","mode":1533}]}`),
			want: []model.Entry{
				// Spec 3.6.0 applies them.
				{Kind: model.KindDirectory, Path: "/srv/group", Type: model.TypeDirectory, Mode: ptr[uint32](0o2775)},
				{Kind: model.KindDirectory, Path: "/srv/shared", Type: model.TypeDirectory, Mode: ptr[uint32](0o1777)},
				{Kind: model.KindFile, Path: "/usr/local/bin/su", Type: model.TypeRegular, Mode: ptr[uint32](0o6755)},
			},
		},
		{
			name: "owner and group by id",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","user":{"id":1234},"group":{"id":4321}}]}`),
			want: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular, UID: ptr(1234), GID: ptr(4321)}},
		},
		{
			name: "owner and group by name in /etc",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","user":{"name":"alice"},"group":{"name":"wheel"}}]}`),
			want: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular, UID: ptr(1000), GID: ptr(10)}},
		},
		{
			name: "owner and group by name in /usr/lib (nss-altfiles)",
			cfg:  config(`"storage":{"directories":[{"path":"/var/home/core/x","user":{"name":"core"},"group":{"name":"adm"}}]}`),
			want: []model.Entry{{Kind: model.KindDirectory, Path: "/var/home/core/x", Type: model.TypeDirectory, UID: ptr(1001), GID: ptr(4)}},
		},
		{
			name: "/etc/passwd wins over /usr/lib/passwd",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","user":{"name":"shadowed"},"group":{"name":"shadowed"}}]}`),
			want: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular, UID: ptr(1500), GID: ptr(1500)}},
		},
		{
			name: "unknown user",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","user":{"name":"mallory"}}]}`),
			want: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular,
				OwnerProblem: `user "mallory" does not exist in the target's passwd`}},
		},
		{
			name: "unknown user and group",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","user":{"name":"mallory"},"group":{"name":"evil"}}]}`),
			want: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular,
				OwnerProblem: `user "mallory" does not exist in the target's passwd`,
				GroupProblem: `group "evil" does not exist in the target's group file`}},
		},
		{
			name: "data URL, plain",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,hello%20world%0A"}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Exact: []byte("hello world\n")})},
		},
		{
			name: "data URL, base64",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:text/plain;charset=utf-8;base64,aGVsbG8="}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Exact: []byte("hello")})},
		},
		{
			name: "data URL, gzip",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAACA8tIzcnJV0ivyizgAgA5fGNWCwAAAA=="}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Exact: []byte("hello gzip\n")})},
		},
		{
			name: "empty data URL",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,"}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Exact: []byte{}})},
		},
		{
			name: "contents and append fragments",
			cfg: config(`"storage":{"files":[{"path":"/etc/a","overwrite":true,"contents":{"source":"data:,base%0A"},
				"append":[{"source":"data:,one%0A"},{"source":"data:;base64,H4sIAAAAAAACA8tIzcnJV0ivyizgAgA5fGNWCwAAAA==","compression":"gzip"}]}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Exact: []byte("base\none\nhello gzip\n")})},
		},
		{
			name: "append fragments to whatever is there",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","append":[{"source":"data:,one%0A"},{"source":"data:,two%0A"}]}]}`),
			want: []model.Entry{withContent(kept("/etc/a"), &model.Content{Suffix: []byte("one\ntwo\n")})},
		},
		{
			name: "no source and no overwrite declares no content",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","mode":384}]}`),
			want: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular, Mode: ptr[uint32](0o600)}},
		},
		{
			name: "empty source is an empty file",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","overwrite":true,"contents":{"source":""}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Exact: []byte{}})},
		},
		{
			name: "remote source with a sha512 verification hash",
			cfg: config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"https://example.com/a",
				"verification":{"hash":"sha512-` + strings.ToUpper(sha512OfBase) + `"}}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Hash: &model.Hash{Algorithm: "sha512", Hex: sha512OfBase}})},
		},
		{
			name: "remote source with a sha256 hash, then an append",
			cfg: config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"s3://bucket/a",
				"verification":{"hash":"sha256-` + sha256OfBase + `"}},"append":[{"source":"data:,tail"}]}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256OfBase}, Suffix: []byte("tail")})},
		},
		{
			name: "compressed remote source: the hash describes the decompressed file",
			cfg: config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"https://example.com/a.gz","compression":"gzip",
				"verification":{"hash":"sha256-` + sha256OfBase + `"}}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256OfBase}})},
		},
		{
			name: "remote source without a hash",
			cfg:  config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"https://example.com/a"}}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Unverifiable: "remote https source without verification.hash (never fetched)"})},
		},
		{
			name: "remote append after a data URL",
			cfg: config(`"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,x"},
				"append":[{"source":"https://example.com/tail","verification":{"hash":"sha256-` + sha256OfBase + `"}}]}]}`),
			want: []model.Entry{withContent(file("/etc/a"), &model.Content{Unverifiable: "append 0: remote source: its length is unknown, so the content after it cannot be located"})},
		},
		{
			name: "symbolic links: target as written, owner only when declared",
			cfg: config(`"storage":{"links":[{"path":"/etc/rel","target":"../usr/share/x"},
				{"path":"/etc/owned","target":"/x","user":{"id":5},"group":{"name":"wheel"}}]}`),
			want: []model.Entry{
				{Kind: model.KindLink, Path: "/etc/owned", Type: model.TypeSymlink, Target: "/x", UID: ptr(5), GID: ptr(10)},
				{Kind: model.KindLink, Path: "/etc/rel", Type: model.TypeSymlink, Target: "../usr/share/x"},
			},
		},
		{
			name: "hard link",
			cfg: config(`"storage":{"files":[{"path":"/etc/target"}],
				"links":[{"path":"/etc/hard","target":"/etc/target","hard":true}]}`),
			want: []model.Entry{
				{Kind: model.KindHardLink, Path: "/etc/hard", Type: model.TypeHardLink, Target: "/etc/target"},
				kept("/etc/target"),
			},
		},
		{
			name: "unit with contents, drop-ins and enablement",
			cfg: config(`"systemd":{"units":[{"name":"app.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n",
				"dropins":[{"name":"10-env.conf","contents":"[Service]\nEnvironment=A=1\n"},{"name":"20-empty.conf"}]}]}`),
			want: []model.Entry{
				{Kind: model.KindUnit, Path: "/etc/systemd/system/app.service", Unit: "app.service", Type: model.TypeRegular,
					Mode: mode644, UID: root, GID: root, Content: &model.Content{Exact: []byte("[Service]\nExecStart=/bin/true\n")}},
				{Kind: model.KindEnablement, Path: "/etc/systemd/system/app.service", Unit: "app.service", Type: model.TypeNone, Enabled: ptr(true)},
				{Kind: model.KindDropin, Path: "/etc/systemd/system/app.service.d/10-env.conf", Unit: "app.service", Type: model.TypeRegular,
					Mode: mode644, UID: root, GID: root, Content: &model.Content{Exact: []byte("[Service]\nEnvironment=A=1\n")}},
			},
		},
		{
			// Ignition writes no unit file for empty contents, but an empty drop-in.
			name: "unit with empty contents: no unit file",
			cfg: config(`"systemd":{"units":[{"name":"e.service","contents":"","enabled":true,"mask":false,
				"dropins":[{"name":"x.conf","contents":""}]}]}`),
			want: []model.Entry{
				{Kind: model.KindUnmask, Path: "/etc/systemd/system/e.service", Unit: "e.service", Type: model.TypeNotMasked},
				{Kind: model.KindEnablement, Path: "/etc/systemd/system/e.service", Unit: "e.service", Type: model.TypeNone, Enabled: ptr(true)},
				{Kind: model.KindDropin, Path: "/etc/systemd/system/e.service.d/x.conf", Unit: "e.service", Type: model.TypeRegular,
					Mode: mode644, UID: root, GID: root, Content: &model.Content{Exact: []byte{}}},
			},
		},
		{
			name: "drop-in for a unit the config does not write",
			cfg:  config(`"systemd":{"units":[{"name":"sshd.service","dropins":[{"name":"x.conf","contents":""}]}]}`),
			want: []model.Entry{
				{Kind: model.KindDropin, Path: "/etc/systemd/system/sshd.service.d/x.conf", Unit: "sshd.service", Type: model.TypeRegular,
					Mode: mode644, UID: root, GID: root, Content: &model.Content{Exact: []byte{}}},
			},
		},
		{
			name: "masked unit: no enablement",
			cfg:  config(`"systemd":{"units":[{"name":"bad.service","mask":true,"enabled":false}]}`),
			want: []model.Entry{{Kind: model.KindMask, Path: "/etc/systemd/system/bad.service", Unit: "bad.service", Type: model.TypeSymlink, Target: "/dev/null"}},
		},
		{
			name: "mask false: unmasked, and disabled",
			cfg:  config(`"systemd":{"units":[{"name":"x.service","mask":false,"enabled":false}]}`),
			want: []model.Entry{
				{Kind: model.KindUnmask, Path: "/etc/systemd/system/x.service", Unit: "x.service", Type: model.TypeNotMasked},
				{Kind: model.KindEnablement, Path: "/etc/systemd/system/x.service", Unit: "x.service", Type: model.TypeNone, Enabled: ptr(false)},
			},
		},
		{
			name: "enablement only",
			cfg:  config(`"systemd":{"units":[{"name":"chronyd.service","enabled":true}]}`),
			want: []model.Entry{{Kind: model.KindEnablement, Path: "/etc/systemd/system/chronyd.service", Unit: "chronyd.service", Type: model.TypeNone, Enabled: ptr(true)}},
		},
		{
			name: "SSH keys of a user in /etc/passwd",
			cfg:  config(`"passwd":{"users":[{"name":"alice","sshAuthorizedKeys":["ssh-ed25519 AAAA one","ssh-rsa BBBB two"]},{"name":"nokeys"}]}`),
			want: []model.Entry{user("alice"), user("nokeys"), {Kind: model.KindSSHKeys, Path: "/home/alice/.ssh/authorized_keys.d/ignition", User: "alice", Type: model.TypeRegular,
				Mode: ptr[uint32](0o600), UID: ptr(1000), GID: ptr(1000),
				Content: &model.Content{Exact: []byte("ssh-ed25519 AAAA one\nssh-rsa BBBB two\n")}}},
		},
		{
			name: "SSH keys of core from /usr/lib/passwd, already newline-terminated",
			cfg:  config(`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA core\n"]}]}`),
			want: []model.Entry{user("core"), {Kind: model.KindSSHKeys, Path: "/var/home/core/.ssh/authorized_keys.d/ignition", User: "core", Type: model.TypeRegular,
				Mode: ptr[uint32](0o600), UID: ptr(1001), GID: ptr(1001), Content: &model.Content{Exact: []byte("ssh-ed25519 AAAA core\n")}}},
		},
		{
			name: "SSH keys with homeDir in the config",
			cfg:  config(`"passwd":{"users":[{"name":"alice","homeDir":"/srv/alice","sshAuthorizedKeys":["k"]}]}`),
			want: []model.Entry{{Kind: model.KindUser, Path: "/etc/passwd", User: "alice", Type: model.TypeNone, Account: &model.Account{Name: "alice", Home: ptr("/srv/alice")}},
				{Kind: model.KindSSHKeys, Path: "/srv/alice/.ssh/authorized_keys.d/ignition", User: "alice", Type: model.TypeRegular,
					Mode: ptr[uint32](0o600), UID: ptr(1000), GID: ptr(1000), Content: &model.Content{Exact: []byte("k\n")}}},
		},
		{
			name: "SSH keys of a user the target does not know",
			cfg:  config(`"passwd":{"users":[{"name":"bob","sshAuthorizedKeys":["k"]}]}`),
			want: []model.Entry{user("bob"), {Kind: model.KindSSHKeys, Path: "/home/bob/.ssh/authorized_keys.d/ignition", User: "bob", Type: model.TypeRegular,
				Mode: ptr[uint32](0o600), OwnerProblem: `user "bob" does not exist in the target's passwd`,
				Content: &model.Content{Exact: []byte("k\n")}}},
		},
		{
			// internal/exec/util/passwd.go: empty strings are not passed
			// (NotEmpty), a user's empty hash is "*", a group's is not
			// applied; a user that must not exist gets no keys.
			name: "users and groups as Ignition applies them",
			cfg: config(`"passwd":{"groups":[{"name":"docker","gid":990,"passwordHash":"$6$g"},{"name":"blank","passwordHash":""},{"name":"old","shouldExist":false,"gid":5}],
				"users":[{"name":"core","uid":1000,"gecos":"Admin","homeDir":"/var/home/core","shell":"/bin/zsh","primaryGroup":"core","groups":["wheel","docker"],"passwordHash":"$6$u","noCreateHome":true,"system":true},
				{"name":"nopw","passwordHash":"","gecos":""},{"name":"gone","shouldExist":false,"uid":7,"sshAuthorizedKeys":["k"]}]}`),
			want: []model.Entry{
				{Kind: model.KindGroup, Path: "/etc/group", Type: model.TypeNone, Account: &model.Account{Name: "docker", ID: ptr(990), PasswordHash: ptr("$6$g")}},
				{Kind: model.KindGroup, Path: "/etc/group", Type: model.TypeNone, Account: &model.Account{Name: "blank"}},
				{Kind: model.KindGroup, Path: "/etc/group", Type: model.TypeNone, Account: &model.Account{Name: "old", Absent: true}},
				{Kind: model.KindUser, Path: "/etc/passwd", User: "core", Type: model.TypeNone, Account: &model.Account{Name: "core", ID: ptr(1000), Gecos: ptr("Admin"),
					Home: ptr("/var/home/core"), Shell: ptr("/bin/zsh"), PrimaryGroup: ptr("core"), Groups: []string{"wheel", "docker"}, PasswordHash: ptr("$6$u"),
					Creation: model.Creation{NoCreateHome: true, System: true}}},
				{Kind: model.KindUser, Path: "/etc/passwd", User: "nopw", Type: model.TypeNone, Account: &model.Account{Name: "nopw", PasswordHash: ptr("*")}},
				{Kind: model.KindUser, Path: "/etc/passwd", User: "gone", Type: model.TypeNone, Account: &model.Account{Name: "gone", Absent: true}},
			},
		},
		{
			name: "kernel arguments",
			cfg:  config(`"kernelArguments":{"shouldExist":["nosmt","foo=\"a b\""],"shouldNotExist":["quiet"]}`),
			want: []model.Entry{
				{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: "nosmt", ArgPresent: true},
				{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: `foo="a b"`, ArgPresent: true},
				{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: "quiet"},
			},
		},
		{
			name: "entries sorted by path",
			cfg: config(`"storage":{"files":[{"path":"/z"},{"path":"/a/b"}],"directories":[{"path":"/m"}]},
				"systemd":{"units":[{"name":"a.service","enabled":true}]}`),
			want: []model.Entry{
				kept("/a/b"),
				{Kind: model.KindEnablement, Path: "/etc/systemd/system/a.service", Unit: "a.service", Type: model.TypeNone, Enabled: ptr(true)},
				{Kind: model.KindDirectory, Path: "/m", Type: model.TypeDirectory},
				kept("/z"),
			},
		},
	}
	acct := fixtureAccounts(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deriveOf(t, acct, tt.cfg)
			if diff := cmp.Diff(tt.want, got, cmpEntries); diff != "" {
				t.Errorf("Derive (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeriveOverwriteWithoutSource: every spec refuses overwrite: true
// without a source (see TestParseErrors), but Derive is pure and may be given
// any config: Ignition would truncate, so the file must be empty.
func TestDeriveOverwriteWithoutSource(t *testing.T) {
	var cfg types.Config
	cfg.Storage.Files = []types.File{
		{Node: types.Node{Path: "/etc/empty", Overwrite: ptr(true)}},
		{Node: types.Node{Path: "/etc/appended", Overwrite: ptr(true)},
			FileEmbedded1: types.FileEmbedded1{Append: []types.Resource{{Source: ptr("data:,x")}}}},
	}
	st, err := derive.Derive(cfg, emptyAccounts{})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Entry{
		{Kind: model.KindFile, Path: "/etc/appended", Type: model.TypeRegular, Mode: ptr[uint32](0o644), UID: ptr(0), GID: ptr(0), Content: &model.Content{Exact: []byte("x")}},
		{Kind: model.KindFile, Path: "/etc/empty", Type: model.TypeRegular, Mode: ptr[uint32](0o644), UID: ptr(0), GID: ptr(0), Content: &model.Content{Exact: []byte{}}},
	}
	if diff := cmp.Diff(want, st.Entries, cmpEntries); diff != "" {
		t.Errorf("Derive (-want +got):\n%s", diff)
	}
	if st.Entries[1].Content.Exact == nil {
		t.Error("overwrite without source: Exact is nil (no content declared), want empty")
	}
}

func TestEntryHelpers(t *testing.T) {
	secret := []struct {
		mode *uint32
		want bool
	}{{nil, true}, {ptr[uint32](0o600), true}, {ptr[uint32](0o640), true}, {ptr[uint32](0o644), false}, {ptr[uint32](0o604), false}}
	for _, s := range secret {
		e := model.Entry{Mode: s.mode}
		if got := e.Secret(); got != s.want {
			t.Errorf("Secret() with mode %v = %v, want %v", s.mode, got, s.want)
		}
	}
	ids := map[string]model.Entry{
		"file:/etc/a":                {Kind: model.KindFile, Path: "/etc/a"},
		"enablement:a.service":       {Kind: model.KindEnablement, Path: "/etc/systemd/system/a.service", Unit: "a.service"},
		"kernel-argument:nosmt":      {Kind: model.KindKernelArg, Path: "/proc/cmdline", Arg: "nosmt"},
		"unit:/etc/systemd/system/x": {Kind: model.KindUnit, Path: "/etc/systemd/system/x", Unit: "x"},
	}
	for want, e := range ids {
		if got := e.ID(); got != want {
			t.Errorf("ID() = %q, want %q", got, want)
		}
	}
	for bits, want := range map[uint32]string{0o644: "0644", 0o4755: "4755", 0o1777: "1777", 0o7: "0007"} {
		if got := model.FormatMode(bits); got != want {
			t.Errorf("FormatMode(%o) = %q, want %q", bits, got, want)
		}
	}
	if got := model.FileMode(0o7755).String(); got != "ugtrwxr-xr-x" {
		t.Errorf("FileMode(07755) = %q", got)
	}
	c := &model.Content{Exact: []byte("x")}
	first, second := c.Digest(), c.Digest()
	if first != second || first == (&model.Content{Exact: []byte("y")}).Digest() {
		t.Error("Digest is not a stable digest of Exact")
	}
}

// TestDigestConcurrent: entries are shared by concurrent checks; run with
// -race.
func TestDigestConcurrent(t *testing.T) {
	c := &model.Content{Exact: []byte("shared by a full check and an event's re-check")}
	want := c.Digest()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Digest() != want {
				t.Error("Digest changed")
			}
		}()
	}
	wg.Wait()
}

// A special bit a spec before 3.6.0 ignores is dropped, as Ignition's
// translation to 3.6.0 drops it (config/v3_6/translate/translate.go), and
// keeps Ignition's warning; 3.6.0 applies it, without a warning.
func TestSpecialBits(t *testing.T) {
	frag, err := Parse("test.ign", []byte(`{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/usr/bin/x","mode":2541,"contents":{"source":"data:,"}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(frag.Warnings) != 0 {
		t.Errorf("spec 3.6.0: warnings %q", frag.Warnings)
	}
	if st, err := derive.Derive(frag.Config, emptyAccounts{}); err != nil || *st.Entries[0].Mode != 0o4755 {
		t.Errorf("spec 3.6.0: Derive = %+v, %v; want mode 04755", st.Entries, err)
	}
	for _, v := range []string{"3.0.0", "3.3.0", "3.4.0", "3.5.0"} {
		frag, err := Parse("test.ign", []byte(`{"ignition":{"version":"`+v+`"},"storage":{"files":[{"path":"/usr/bin/x","mode":2541,"contents":{"source":"data:,"}}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(frag.Warnings, "\n"), "setuid/setgid/sticky") {
			t.Errorf("spec %s: warnings %q lack Ignition's on special bits", v, frag.Warnings)
		}
		st, err := derive.Derive(frag.Config, emptyAccounts{})
		if err != nil {
			t.Fatal(err)
		}
		if e := st.Entries[0]; *e.Mode != 0o755 || e.ModeOptional != 0 {
			t.Errorf("spec %s: mode %04o, optional %04o; want 0755, none", v, *e.Mode, e.ModeOptional)
		}
	}
}
