package reconcile

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// shown is a step as a plan shows it: one line.
func shown(s Step) string {
	line := string(s.Op) + " " + s.Path + ": " + s.Says
	if len(s.Resolves) > 0 {
		line += " ["
		for i, k := range s.Resolves {
			if i > 0 {
				line += ","
			}
			line += string(k)
		}
		line += "]"
	}
	return line
}

// TestPlanNode: each drift of a node, observed in memory (no disk), plans
// the steps that resolve it, with the metadata apply writes; planning twice
// gives the same plan.
func TestPlanNode(t *testing.T) {
	mode := func(m uint32) *uint32 { return &m }
	file := func(content string) model.Entry {
		return model.Entry{Kind: model.KindFile, Path: "/etc/f", Type: model.TypeRegular, Mode: mode(0o644),
			Content: &model.Content{Exact: []byte(content)}}
	}
	regular := ondisk.Observation{Type: ondisk.Regular, Mode: 0o644, Dev: 1, Ino: 7}
	with := func(ob ondisk.Observation, f func(*ondisk.Observation)) ondisk.Observation { f(&ob); return ob }
	labels := func(string, selinux.FileType) (string, bool) { return "system_u:object_r:etc_t:s0", true }
	dir := model.Entry{Kind: model.KindDirectory, Path: "/etc/d", Type: model.TypeDirectory, Mode: mode(0o750)}
	link := model.Entry{Kind: model.KindLink, Path: "/etc/l", Type: model.TypeSymlink, Target: "/etc/f", UID: ptr(0), GID: ptr(0)}
	hard := model.Entry{Kind: model.KindHardLink, Path: "/etc/h", Type: model.TypeHardLink, Target: "/etc/f"}
	unmask := model.Entry{Kind: model.KindUnmask, Path: "/etc/systemd/system/a.service", Unit: "a.service", Type: model.TypeNotMasked}
	tests := []struct {
		name  string
		e     model.Entry
		kinds []drift.Kind
		f     nodeFacts
		want  []string
		check func(t *testing.T, steps []Step)
		err   string
	}{
		{"content differs", file("hello\n"), []drift.Kind{drift.Content},
			nodeFacts{ob: with(regular, func(o *ondisk.Observation) { o.Content.State = ondisk.Differs }), content: []byte("hello\n")},
			[]string{"write /etc/f: write the declared content (6 bytes), mode 0644, owner 0:0 [content]"},
			func(t *testing.T, s []Step) {
				if string(s[0].content) != "hello\n" || s[0].seen == nil || s[0].seen.ino != 7 || s[0].overDir {
					t.Errorf("write step %+v: want the content, the inode seen, no directory to replace", s[0])
				}
			}, ""},
		{"missing", file("x"), []drift.Kind{drift.Missing}, nodeFacts{content: []byte("x")},
			[]string{"write /etc/f: write the declared content (1 byte), mode 0644, owner 0:0 [missing]"},
			func(t *testing.T, s []Step) {
				if s[0].seen != nil || s[0].parent != (meta{mode: 0o755}) {
					t.Errorf("write step %+v: want nothing seen, parents 0755", s[0])
				}
			}, ""},
		{"mode", file("x"), []drift.Kind{drift.Mode}, nodeFacts{ob: with(regular, func(o *ondisk.Observation) { o.Mode = 0o600 })},
			[]string{"chmod /etc/f: change the mode from 0600 to 0644 [mode]"}, nil, ""},
		{"owner and mode: one step, chown then chmod", withOwner(file("x"), 0), []drift.Kind{drift.Owner, drift.Mode},
			nodeFacts{ob: with(regular, func(o *ondisk.Observation) { o.Mode, o.UID = 0o4755, 5 })},
			[]string{"chown /etc/f: change the owner from 5:0 to 0:0, and the mode from 4755 to 0644 [owner,mode]"}, nil, ""},
		{"the mode kept when none is declared", model.Entry{Kind: model.KindFile, Path: "/etc/f", Type: model.TypeRegular, UID: ptr(3)},
			[]drift.Kind{drift.Owner}, nodeFacts{ob: with(regular, func(o *ondisk.Observation) { o.Mode = 0o600 })},
			[]string{"chown /etc/f: change the owner from 0:0 to 3:0 [owner]"}, nil, ""},
		{"an empty directory in the way", file("x"), []drift.Kind{drift.Type},
			nodeFacts{ob: ondisk.Observation{Type: ondisk.Directory, Mode: 0o755}, emptyDir: true, content: []byte("x")},
			[]string{"write /etc/f: replace the directory with it: write the declared content (1 byte), mode 0644, owner 0:0 [type]"},
			func(t *testing.T, s []Step) {
				if !s[0].overDir {
					t.Errorf("write step %+v: want the directory replaced", s[0])
				}
			}, ""},
		{"a directory that is not empty", file("x"), []drift.Kind{drift.Type},
			nodeFacts{ob: ondisk.Observation{Type: ondisk.Directory}}, nil, nil, "a directory that is not empty stands at"},
		{"content not had", file("x"), []drift.Kind{drift.Content},
			nodeFacts{ob: with(regular, func(o *ondisk.Observation) { o.Content.State = ondisk.Differs }), contentErr: refuse("no bytes")},
			nil, nil, "no bytes"},
		{"directory missing", dir, []drift.Kind{drift.Missing}, nodeFacts{},
			[]string{"mkdir /etc/d: create the directory, mode 0750, owner 0:0 [missing]"}, nil, ""},
		{"a file where a directory belongs", dir, []drift.Kind{drift.Type}, nodeFacts{ob: regular},
			[]string{"mkdir /etc/d: replace the regular file with it: create the directory, mode 0750, owner 0:0 [type]"},
			func(t *testing.T, s []Step) {
				if !s[0].replace || s[0].overDir {
					t.Errorf("mkdir step %+v: want the file replaced", s[0])
				}
			}, ""},
		{"link target", link, []drift.Kind{drift.Target}, nodeFacts{ob: ondisk.Observation{Type: ondisk.Symlink, Target: "/etc/g"}},
			[]string{`symlink /etc/l: link it to "/etc/f" (it links to "/etc/g") [target]`},
			func(t *testing.T, s []Step) {
				if s[0].target != "/etc/f" || !s[0].owned {
					t.Errorf("symlink step %+v: want the target, the declared owner", s[0])
				}
			}, ""},
		{"link owner", link, []drift.Kind{drift.Owner}, nodeFacts{ob: ondisk.Observation{Type: ondisk.Symlink, Target: "/etc/f", UID: 9, Mode: 0o777}},
			[]string{"chown /etc/l: change the owner from 9:0 to 0:0 [owner]"}, nil, ""},
		{"hard link", hard, []drift.Kind{drift.HardLink}, nodeFacts{ob: regular, targetType: ondisk.Regular},
			[]string{`hardlink /etc/h: replace the regular file with it: hard-link it to "/etc/f" [hardlink]`}, nil, ""},
		{"hard link to a directory", hard, []drift.Kind{drift.HardLink}, nodeFacts{targetType: ondisk.Directory}, nil, nil, "is a directory"},
		{"unmasked by a mask", unmask, []drift.Kind{drift.Masked}, nodeFacts{ob: ondisk.Observation{Type: ondisk.Symlink, Target: "/dev/null"}},
			[]string{"remove /etc/systemd/system/a.service: remove the link to /dev/null [masked]"}, nil, ""},
		{"unmask: no mask there", unmask, []drift.Kind{drift.Masked}, nodeFacts{ob: regular}, nil, nil, ""},
		{"immutable, then xattrs and ACLs", file("x"), []drift.Kind{drift.FileAttr, drift.Xattr, drift.ACL}, nodeFacts{ob: with(regular, func(o *ondisk.Observation) {
			o.Meta = ondisk.Meta{Observed: true, Immutable: true, Xattrs: []ondisk.Xattr{{Name: "user.x", Value: []byte("1")},
				{Name: "system.posix_acl_access", Value: aclWithUser()}}}
		})},
			[]string{"clear-flags /etc/f: clear the immutable flag [fileattr]",
				"remove-xattr /etc/f: remove the extended attribute system.posix_acl_access [acl]",
				"remove-xattr /etc/f: remove the extended attribute user.x [xattr]"}, nil, ""},
		{"rewritten: flags cleared, xattrs go with the old inode, labelled", file("x"), []drift.Kind{drift.Content, drift.FileAttr, drift.Xattr}, nodeFacts{
			ob: with(regular, func(o *ondisk.Observation) {
				o.Content.State = ondisk.Differs
				o.Meta = ondisk.Meta{Observed: true, Append: true, Xattrs: []ondisk.Xattr{{Name: "user.x"}}}
			}), content: []byte("x"), label: labels},
			[]string{"clear-flags /etc/f: clear the append-only flag [fileattr]",
				"write /etc/f: write the declared content (1 byte), mode 0644, owner 0:0 [content,xattr]",
				"label /etc/f: set the SELinux label system_u:object_r:etc_t:s0"},
			func(t *testing.T, s []Step) {
				if s[2].seen != nil || s[2].label != "system_u:object_r:etc_t:s0" {
					t.Errorf("label step %+v: want the label, on the new inode", s[2])
				}
			}, ""},
		{"label", file("x"), []drift.Kind{drift.Label}, nodeFacts{ob: with(regular, func(o *ondisk.Observation) {
			o.Meta = ondisk.Meta{Observed: true, Xattrs: []ondisk.Xattr{{Name: ondisk.XattrSELinux, Value: []byte("system_u:object_r:bin_t:s0\x00")}}}
		}), label: labels},
			[]string{"label /etc/f: set the SELinux label system_u:object_r:etc_t:s0 [label]"}, nil, ""},
		{"mode only: no label drift, no label", file("x"), []drift.Kind{drift.Mode}, nodeFacts{ob: with(regular, func(o *ondisk.Observation) { o.Mode = 0o640 }), label: labels},
			[]string{"chmod /etc/f: change the mode from 0640 to 0644 [mode]"}, nil, ""},
		{"cannot be examined", file("x"), []drift.Kind{drift.Content}, nodeFacts{ob: ondisk.Observation{Err: errors.New("EIO")}}, nil, nil, "it cannot be examined: EIO"},
		{"through a link", file("x"), []drift.Kind{drift.Content}, nodeFacts{ob: ondisk.Observation{Detour: &ondisk.Detour{Path: "/etc", Target: "/tmp"}}}, nil, nil, "nothing is written through it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := planNode(&tt.e, tt.kinds, &tt.f)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range steps {
				got = append(got, shown(s))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if tt.check != nil && len(steps) == len(tt.want) {
				tt.check(t, steps)
			}
			again, _ := planNode(&tt.e, tt.kinds, &tt.f)
			if !reflect.DeepEqual(steps, again) {
				t.Errorf("planned again: %+v\nfirst: %+v", again, steps)
			}
		})
	}
}

func withOwner(e model.Entry, uid int) model.Entry { e.UID = &uid; return e }

// aclWithUser is a system.posix_acl_access value with a named user entry
// (user 1000 rw-): beyond the mode bits.
func aclWithUser() []byte {
	entry := func(tag, perm uint16, id uint32) []byte {
		return []byte{byte(tag), byte(tag >> 8), byte(perm), byte(perm >> 8), byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}
	}
	b := []byte{2, 0, 0, 0}
	b = append(b, entry(0x01, 6, 0xffffffff)...) // user::rw-
	b = append(b, entry(0x02, 6, 1000)...)       // user:1000:rw-
	b = append(b, entry(0x04, 4, 0xffffffff)...) // group::r--
	b = append(b, entry(0x10, 6, 0xffffffff)...) // mask::rw-
	b = append(b, entry(0x20, 4, 0xffffffff)...) // other::r--
	return b
}
