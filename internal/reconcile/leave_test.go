package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestLeaveWhatARepairWrites: a path left alone is never written, whatever
// entry's repair reaches it: the account files a shadow-utils tool rewrites
// (useradd writes /etc/shadow although a missing user is reported at
// /etc/passwd), a home directory, the links of an enable; what writes only
// other files is done.
func TestLeaveWhatARepairWrites(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"etc/passwd":                         "core:x:1000:1000::/home/core:/bin/bash\n",
		"etc/shadow":                         "core:!:19000::::::\n",
		"etc/group":                          "core:x:1000:\nwheel:x:10:\n",
		"etc/gshadow":                        "core:!::\nwheel:!::\n",
		"usr/lib/systemd/system/app.service": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hash := secretHash
	user := func(a model.Account) *model.Entry {
		return &model.Entry{Kind: model.KindUser, Path: accountdb.PasswdFile, User: a.Name, Type: model.TypeNone, Account: &a}
	}
	tests := []struct {
		name    string
		leave   string
		entry   *model.Entry
		kinds   []drift.Kind
		problem string // "": repaired
	}{
		{"a missing user: useradd writes /etc/shadow", "/etc/shadow",
			user(model.Account{Name: "svc", Creation: model.Creation{NoCreateHome: true}}), []drift.Kind{drift.Missing},
			"it would write /etc/shadow, which is excluded"},
		{"a missing user's home", "/var/home",
			user(model.Account{Name: "svc", Home: ptr("/var/home/svc")}), []drift.Kind{drift.Missing},
			"it would write /var/home/svc, which is excluded"},
		{"a shell: usermod writes /etc/passwd only", "/etc/shadow",
			user(model.Account{Name: "core", Shell: ptr("/bin/sh")}), []drift.Kind{drift.Shell}, ""},
		{"groups: usermod --groups writes /etc/gshadow", "/etc/gshadow",
			user(model.Account{Name: "core", Groups: []string{"wheel"}}), []drift.Kind{drift.Groups},
			"it would write /etc/gshadow, which is excluded"},
		{"a password: chpasswd writes /etc/shadow", "/etc/shadow",
			user(model.Account{Name: "core", PasswordHash: &hash}), []drift.Kind{drift.PasswordHash},
			"it would write /etc/shadow, which is excluded"},
		{"a uid: usermod chowns the home", "/home/core",
			user(model.Account{Name: "core", ID: ptr(1001)}), []drift.Kind{drift.UID},
			"it would write /home/core, which is excluded"},
		{"a group's gid: groupmod --gid writes /etc/group only", "/etc/gshadow",
			&model.Entry{Kind: model.KindGroup, Path: accountdb.GroupFile, Type: model.TypeNone, Account: &model.Account{Name: "wheel", ID: ptr(11)}},
			[]drift.Kind{drift.GID}, ""},
		{"a missing group: groupadd writes /etc/gshadow", "/etc/gshadow",
			&model.Entry{Kind: model.KindGroup, Path: accountdb.GroupFile, Type: model.TypeNone, Account: &model.Account{Name: "docker"}},
			[]drift.Kind{drift.Missing}, "it would write /etc/gshadow, which is excluded"},
		{"an enable writes the .wants link", "/etc/systemd/system/multi-user.target.wants",
			&model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/app.service", Unit: "app.service", Type: model.TypeNone, Enabled: ptr(true)},
			[]drift.Kind{drift.Enablement},
			"it would write /etc/systemd/system/multi-user.target.wants/app.service, which is excluded"},
		{"an enable elsewhere", "/etc/systemd/system/other.target.wants",
			&model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/app.service", Unit: "app.service", Type: model.TypeNone, Enabled: ptr(true)},
			[]drift.Kind{drift.Enablement}, ""},
	}
	for _, tt := range tests {
		// An enable is planned offline (the links) and through systemd
		// (a live host) alike.
		lives := []bool{false}
		if tt.entry.Kind == model.KindEnablement {
			lives = append(lives, true)
		}
		for _, live := range lives {
			t.Run(fmt.Sprintf("%s (live %v)", tt.name, live), func(t *testing.T) {
				cmds := &recorded{}
				rec := &Reconciler{Root: r, Commands: cmds, DryRun: true,
					Leave: func(p string) bool { return p == tt.leave || strings.HasPrefix(p, tt.leave+"/") }}
				if live {
					rec.Units = noUnitFiles{}
				}
				res := rec.Repair(context.Background(), []*model.Entry{tt.entry}, map[string][]drift.Kind{tt.entry.ID(): tt.kinds})
				if tt.problem == "" {
					if len(res.Repaired) != 1 || len(res.Refused) != 0 {
						t.Errorf("refused %+v, want it repaired", res.Refused)
					}
					return
				}
				if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Problem, tt.problem) || len(res.Refused[0].Steps) != 0 {
					t.Errorf("result %+v, want it refused, without steps, with %q", res, tt.problem)
				}
			})
		}
	}
}

// noUnitFiles is systemd that is never called: a dry run asks it nothing.
type noUnitFiles struct{}

func (noUnitFiles) EnableUnitFiles(context.Context, []string) error  { panic("enabled") }
func (noUnitFiles) DisableUnitFiles(context.Context, []string) error { panic("disabled") }
