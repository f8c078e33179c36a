package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestDeclaredAccountLines: an account file that differs from the image,
// or from the first boot's record, only in the declared accounts' lines
// (and their membership of other groups) is the user and group entries'
// to report, not undeclared — as reconcile leaves it after putting a
// declared user back with useradd, which appends the line. Another line
// changed or added is undeclared.
func TestDeclaredAccountLines(t *testing.T) {
	root := baseTree(t)
	etc := filepath.Join(root, "etc")
	const (
		passwd = "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/var/home/core:/bin/bash\n"
		group  = "root:x:0:\nwheel:x:10:core\ncore:x:1000:\n"
	)
	write(t, root+"/usr/etc/passwd", passwd)
	write(t, root+"/usr/etc/group", group)
	alice := "alice:x:1001:1001::/home/alice:/bin/bash\n"
	write(t, etc+"/passwd", passwd+alice)
	write(t, etc+"/group", "root:x:0:\nwheel:x:10:core,alice\ncore:x:1000:\nalice:x:1001:\ndevs:x:1002:\n")
	write(t, etc+"/subuid", "alice:100000:65536\n") // made by useradd
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	b := &Baseline{Kind: KindOstree, Tree: &Tree{Root: r, Base: UsrEtcDir, Live: EtcDir}}
	entries := []model.Entry{
		{Kind: model.KindUser, Account: &model.Account{Name: "alice", Groups: []string{"wheel"}}},
		{Kind: model.KindGroup, Account: &model.Account{Name: "devs"}},
	}
	key := model.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	const recPath = "/var/lib/drift-monitor/image-firstboot.json"
	classes := func() map[string]string {
		t.Helper()
		cl, _ := NewClassifierFor(r, b, entries, key, nil)
		rec, err := LoadRecord(r, recPath)
		if err != nil {
			t.Fatal(err)
		}
		cl.Record = rec
		cs, err := b.Diff(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, d := range cl.Classify(ctx, cs) {
			if d.Path == "/etc/passwd" || d.Path == "/etc/group" || d.Path == "/etc/subuid" {
				m[d.Path] = string(d.Class)
			}
		}
		return m
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		if diff := cmp.Diff(want, classes()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", when, diff)
		}
	}

	check("the declared accounts added to the image's files", map[string]string{"/etc/passwd": "declared", "/etc/group": "declared", "/etc/subuid": "declared"})
	must(t, os.Remove(etc+"/subuid"))
	write(t, etc+"/passwd", passwd+alice+"mallory:x:0:0::/:/bin/sh\n")
	write(t, etc+"/group", "root:x:0:\nwheel:x:10:core,alice,mallory\ncore:x:1000:\nalice:x:1001:\ndevs:x:1002:\n")
	check("an undeclared account and membership besides", map[string]string{"/etc/passwd": "undeclared", "/etc/group": "undeclared"})

	// The first boot added a system user besides alice; the record holds
	// the files as they were.
	oom := "systemd-oom:x:999:999::/:/usr/sbin/nologin\n"
	write(t, etc+"/passwd", passwd+alice+oom)
	write(t, etc+"/group", "root:x:0:\nwheel:x:10:core,alice\ncore:x:1000:\nalice:x:1001:\nsystemd-oom:x:999:\n")
	if _, err := RecordNow(ctx, r, b, &Recorder{Root: r, Key: key}, recPath); err != nil {
		t.Fatal(err)
	}
	check("as recorded", map[string]string{"/etc/passwd": "first-boot", "/etc/group": "first-boot"})
	// userdel alice, then reconcile's useradd: the line comes back at the
	// end, another uid, the membership last in wheel's list.
	write(t, etc+"/passwd", passwd+oom+"alice:x:1005:1005::/home/alice:/bin/bash\n")
	write(t, etc+"/group", "root:x:0:\nwheel:x:10:core,alice\ncore:x:1000:\nsystemd-oom:x:999:\nalice:x:1005:\n")
	check("alice put back", map[string]string{"/etc/passwd": "declared", "/etc/group": "declared"})
	write(t, etc+"/passwd", "root:x:0:0:root:/root:/bin/sh\ncore:x:1000:1000::/var/home/core:/bin/bash\n"+oom+"alice:x:1005:1005::/home/alice:/bin/bash\n")
	write(t, etc+"/group", "root:x:0:\nwheel:x:10:core,alice\ncore:x:1000:\nalice:x:1005:\n")
	check("root's shell changed, a recorded group removed", map[string]string{"/etc/passwd": "undeclared", "/etc/group": "undeclared"})
}
