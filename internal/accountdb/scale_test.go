package accountdb

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// bigHost is the number of accounts of the account files TestAccountsScale
// takes as the largest real ones: a shared login host with its users in
// /etc/passwd (useradd's range, login.defs UID_MIN 1000 to UID_MAX 60000,
// is rarely a sixth full).
const bigHost = 10_000

// bigAccountFiles makes the account files of a host with the accounts of
// this machine's /etc/passwd and /etc/group (their lines as they are)
// followed by n users, each in a group of their own and in a shared one,
// with shadow and gshadow lines as shadow-utils writes them.
func bigAccountFiles(t testing.TB, n int) [filesCount][]byte {
	t.Helper()
	var raw [filesCount][]byte
	var passwd, shadow, group, gshadow strings.Builder
	for _, f := range []struct {
		path string
		b    *strings.Builder
	}{{"/etc/passwd", &passwd}, {"/etc/group", &group}} {
		if b, err := os.ReadFile(f.path); err == nil {
			f.b.Write(b)
		}
	}
	members := make([]string, 0, n)
	for i := range n {
		name := fmt.Sprintf("user%05d", i)
		fmt.Fprintf(&passwd, "%s:x:%d:%d:User %d,,,:/home/%s:/bin/bash\n", name, 10000+i, 10000+i, i, name)
		fmt.Fprintf(&shadow, "%s:$y$j9T$%022d$%043d:20000:0:99999:7:::\n", name, i, i)
		fmt.Fprintf(&group, "%s:x:%d:\n", name, 10000+i)
		fmt.Fprintf(&gshadow, "%s:!::\n", name)
		members = append(members, name)
	}
	fmt.Fprintf(&group, "staff-all:x:9999:%s\n", strings.Join(members, ","))
	raw[0], raw[1], raw[2], raw[3] = []byte(passwd.String()), []byte(shadow.String()), []byte(group.String()), []byte(gshadow.String())
	return raw
}

// TestAccountsScale: the account files are read in time and memory linear
// in their size, held at ten times the accounts of a big host, and every
// account in them is there with its hash and groups.
func TestAccountsScale(t *testing.T) {
	inputs := map[int][filesCount][]byte{1: bigAccountFiles(t, bigHost), 10: bigAccountFiles(t, 10*bigHost)}
	harness.Linear(t, "reading the account files", func(scale int) {
		db := Parse(inputs[scale])
		n := scale * bigHost
		last := fmt.Sprintf("user%05d", n-1)
		u, g := db.Users[last], db.Groups["staff-all"]
		if len(db.Users) < n || u == nil || !u.HasShadow || u.UID != 10000+n-1 || g == nil || len(g.Members) != n {
			t.Fatalf("%d users of %d; %s: %+v; staff-all: %d members", len(db.Users), n, last, u, len(g.Members))
		}
	})
}

// FuzzParse: whatever the account files hold, Parse
// never panics, and every user and group it returns is a line of its
// files, named by its first field, with the source file it came from.
func FuzzParse(f *testing.F) {
	f.Add([]byte("root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/var/home/core:/bin/bash\n"),
		[]byte("root:!:19000:0:99999:7:::\n"), []byte("root:x:0:\nwheel:x:10:core,alice\n"), []byte("wheel:::core\n"),
		[]byte("nobody:x:65534:65534:Kernel Overflow User:/:/sbin/nologin\n"))
	f.Add([]byte("a:x:1\n:x:2:2::/:\n#c:x:3:3::/:\nb:x:-1:x::/\n"), []byte(nil), []byte("g:x:nope\n::0:\n"), []byte("g\n"), []byte("\n\n"))
	f.Fuzz(func(t *testing.T, passwd, shadow, group, gshadow, alt []byte) {
		raw := [filesCount][]byte{passwd, shadow, group, gshadow, alt, alt}
		db := Parse(raw)
		for name, u := range db.Users {
			src := map[string][]byte{PasswdFile: passwd, AltFilesPasswd: alt}[u.Source]
			if u.Name != name || src == nil || !strings.Contains("\n"+string(src), "\n"+name+":") {
				t.Fatalf("user %q (%+v) is no line of %s", name, u, u.Source)
			}
		}
		for name, g := range db.Groups {
			src := map[string][]byte{GroupFile: group, AltFilesGroup: alt}[g.Source]
			if g.Name != name || src == nil || !strings.Contains("\n"+string(src), "\n"+name+":") {
				t.Fatalf("group %q (%+v) is no line of %s", name, g, g.Source)
			}
		}
	})
}
