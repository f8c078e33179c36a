package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// rpmLine is rpmQueryFormat's output for a package of one file.
func rpmLine(p, pkg, digest string, mode uint32, flags, verify uint32, link string, state int, size int64) string {
	return pkg + "\t8\n" + strings.Join([]string{p, digest, strconv.FormatInt(int64(mode), 10), "root", "root", strconv.FormatInt(int64(flags), 10), strconv.FormatInt(int64(verify), 10),
		link, strconv.FormatInt(int64(state), 10), strconv.FormatInt(size, 10), "0", "(none)"}, "\t")
}

// TestRPMVerify: rpm -V's rules over a root without rpm: flags, states,
// %ghost, %config(missingok), %verify(not …).
func TestRPMVerify(t *testing.T) {
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	write(t, etc+"/a.conf", "changed\n")            // content differs
	write(t, etc+"/same", "same\n")                 // equal
	write(t, etc+"/verify", "more than recorded\n") // %verify(not md5 size mtime)
	write(t, etc+"/replaced", "whatever\n")         // state replaced
	write(t, etc+"/notinstalled-but-there", "x\n")  // state not installed
	write(t, etc+"/ghost", "anything\n")            // %ghost: content not verified
	must(t, os.Chmod(etc+"/same", 0o600))           // mode differs too
	must(t, os.Symlink("elsewhere", etc+"/link"))   // target differs
	must(t, os.Mkdir(etc+"/dir", 0o700))            // directory mode
	write(t, etc+"/sub/same", "same\n")             // siblings: their directory opened once
	write(t, etc+"/sub/changed", "changed\n")
	const all = 0xffffffff
	q := strings.Join([]string{
		rpmLine("/etc/a.conf", "p", sha("conf\n"), 0o100644, 1, all, "", 0, 5),
		rpmLine("/etc/same", "p", sha("same\n"), 0o100644, 0, all, "", 0, 5),
		rpmLine("/etc/verify", "setup", sha("v\n"), 0o100644, 1, all&^(verifyDigest|verifySize|verifyMtime), "", 0, 2),
		rpmLine("/etc/replaced", "p", sha("orig\n"), 0o100644, 1, all, "", stateReplaced, 5),
		rpmLine("/etc/notinstalled", "p", sha("x\n"), 0o100644, 0, all, "", stateNotInstalled, 2),
		rpmLine("/etc/ghost", "p", "", 0o100644, fileGhost, all, "", 0, 0),
		rpmLine("/etc/ghost-missing", "p", "", 0o100644, fileGhost, all, "", 0, 0),
		rpmLine("/etc/missingok", "p", sha("m\n"), 0o100644, 1|fileMissingOK, all, "", 0, 2),
		rpmLine("/etc/missing", "p", sha("m\n"), 0o100644, 1, all, "", 0, 2),
		rpmLine("/etc/link", "p", "", 0o120777, 0, all, "target", 0, 6),
		rpmLine("/etc/dir", "p", "", 0o40755, 0, all, "", 0, 0),
		rpmLine("/etc/gone/a", "p", sha("a\n"), 0o100644, 0, all, "", 0, 2), // their directory missing
		rpmLine("/etc/gone/b", "p", sha("b\n"), 0o100644, 0, all, "", 0, 2),
		rpmLine("/etc/sub/changed", "p", sha("orig\n"), 0o100644, 0, all, "", 0, 5),
		rpmLine("/etc/sub/same", "p", sha("same\n"), 0o100644, 0, all, "", 0, 5),
		rpmLine("/usr/bin/tool", "p", sha("x"), 0o100755, 0, all, "", 0, 1),
	}, "\n") + "\n"
	b, cs := verifyBoth(t, root, q)
	if _, ok := b.Files["/usr/bin/tool"]; ok {
		t.Error("a file outside /etc was kept")
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for _, c := range cs {
		got = append(got, c.RPM+" "+c.Path)
	}
	want := []string{
		"S.5...... /etc/a.conf",
		".M....... /etc/dir",
		"missing /etc/gone/a",
		"missing /etc/gone/b",
		"....L.... /etc/link",
		"missing /etc/missing",
		".M....... /etc/same",
		"S.5...... /etc/sub/changed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verified (-want +got):\n%s", diff)
	}
	// VerifyAt: the path and what is under it.
	cs, err = b.VerifyAt(context.Background(), r, "/etc/dir")
	if err != nil || len(cs) != 1 || cs[0].Path != "/etc/dir" {
		t.Errorf("VerifyAt(/etc/dir) = %v, %v", short(cs), err)
	}
}

// TestRPMSharedPath: a path two packages own differs where either says
// so, and names both when both do.
func TestRPMSharedPath(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "etc/shared"), "x\n")
	q := rpmLine("/etc/shared", "a", sha("x\n"), 0o100644, 0, 0xffffffff, "", 0, 2) + "\n" +
		rpmLine("/etc/shared", "b", sha("x\n"), 0o100600, 0, 0xffffffff, "", 0, 2) + "\n"
	if _, cs := verifyBoth(t, root, q); len(cs) != 1 || cs[0].Owner != "b" || cs[0].What != WMode {
		t.Fatalf("Verify = %+v; want one mode difference of b", cs)
	}
	write(t, filepath.Join(root, "etc/shared"), "changed\n")
	if _, cs := verifyBoth(t, root, q); len(cs) != 1 || cs[0].Owner != "a,b" || cs[0].RPM != "SM5......" {
		t.Fatalf("Verify = %+v; want one difference of a and b, their letters merged", cs)
	}
}

// verifyBoth verifies the records of the query output q in root both
// ways: after the query (Verify, as the daemon does) and as the query
// reads them (verifyAhead, as FindDiff does); they must agree.
func verifyBoth(t *testing.T, root, q string) (*RPM, []Change) {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	b, err := parseRPMQuery(strings.NewReader(q), nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := b.Verify(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	a, err := startVerifyAhead(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := parseRPMQuery(strings.NewReader(q), a)
	a.finish()
	if err != nil {
		t.Fatal(err)
	}
	beside, err := a.changes(b2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(after, beside); diff != "" {
		t.Errorf("verified beside the query (-after +beside):\n%s", diff)
	}
	return b, after
}

func TestRPMQueryRefusesBadLines(t *testing.T) {
	for _, tc := range []struct{ what, q string }{
		{"a short line", "p\t8\n/etc/x\tonly three\tfields\n"},
		{"a long line", "p\t8\n/etc/x\t\t0\troot\troot\t0\t0\t\t0\t0\t0\t(none)\textra\n"},
		{"a mode that is no number", "p\t8\n/etc/x\t\tNaN\troot\troot\t0\t0\t\t0\t0\t0\t(none)\n"},
		{"a file before any package", "/etc/x\t\t0\troot\troot\t0\t0\t\t0\t0\t0\t(none)\n"},
		{"a package's line without its algorithm", "p\n"},
		{"a digest algorithm that is no number", "p\tsha\n"},
	} {
		if _, err := parseRPMQuery(strings.NewReader(tc.q), nil); err == nil {
			t.Errorf("%s was taken", tc.what)
		}
	}
	// Lines outside /etc are skipped unread: what they hold is never
	// looked at (a file under /usr of any shape).
	b, err := parseRPMQuery(strings.NewReader("p\t(none)\n/usr/x\tnot a record\n/etc/x\t\t33188\troot\troot\t0\t4294967295\t\t0\t0\t0\t(none)\n"), nil)
	if err != nil || len(b.Paths) != 1 || b.Files["/etc/x"][0].algo != 1 || b.Files["/etc/x"][0].pkg != "p" {
		t.Errorf("parseRPMQuery = %+v, %v; want /etc/x of p, MD5 for a package without FILEDIGESTALGO", b, err)
	}
}

func TestCapText(t *testing.T) {
	for _, tc := range []struct {
		text string
		want capSet
	}{
		{"cap_net_raw=ep", capSet{eff: 1 << 13, perm: 1 << 13}},
		{"cap_net_raw+ep", capSet{eff: 1 << 13, perm: 1 << 13}},
		{"cap_net_admin,cap_net_raw=eip", capSet{eff: 3 << 12, perm: 3 << 12, inh: 3 << 12}},
		{"cap_setuid=p cap_setgid+i", capSet{perm: 1 << 7, inh: 1 << 6}},
		{"cap_chown=ep cap_chown-e", capSet{perm: 1}},
	} {
		got, err := parseCapText(tc.text)
		if err != nil || got != tc.want {
			t.Errorf("parseCapText(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
		}
	}
	// setcap cap_net_raw+ep: revision 2 with the effective flag.
	raw, _ := hex.DecodeString("0100000200200000000000000000000000000000")
	got, err := parseVFSCaps(raw)
	if want := (capSet{eff: 1 << 13, perm: 1 << 13}); err != nil || got != want {
		t.Errorf("parseVFSCaps = %+v, %v; want %+v", got, err, want)
	}
}
