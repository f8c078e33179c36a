package conformance_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// Password hashes of the accounts config: secrets that no output may show.
// Their tails are what the outputs are searched for (a hash cut or quoted
// is still a leak).
const (
	coreHash   = "$6$drmCoreSalt$CoreHashTailNeverShownAnywhere0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"
	dockerHash = "$6$drmGroupSalt$DockerGroupHashTailNeverShown0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
	otherHash  = "$6$drmOtherSalt$AnAttackersHashTailNeverShown0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
)

var secretTails = []string{"CoreHashTailNeverShown", "DockerGroupHashTailNeverShown", "AnAttackersHashTailNeverShown", "drmCoreSalt", "drmGroupSalt", "drmOtherSalt"}

// accountsConfig declares every field Ignition sets on users and groups:
// core (which the image has) modified, svc created (its empty
// passwordHash is "*"), docker and monitoring created; from spec 3.2.0
// (shouldExist), eve and oldgrp (the image's) deleted.
func accountsConfig(version string) []byte {
	var oldgrp, eve string
	if version >= "3.2.0" {
		oldgrp = `,
      {"name": "oldgrp", "shouldExist": false}`
		eve = `,
      {"name": "eve", "shouldExist": false}`
	}
	return fmt.Appendf(nil, `{
  "ignition": {"version": %q},
  "passwd": {
    "groups": [
      {"name": "docker", "gid": 1500, "passwordHash": %q},
      {"name": "monitoring"}%s
    ],
    "users": [
      {"name": "core", "gecos": "CoreOS Admin", "shell": "/bin/sh", "groups": ["docker", "users"],
       "passwordHash": %q, "sshAuthorizedKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAccounts core@example"]},
      {"name": "svc", "uid": 1600, "homeDir": "/var/lib/svc", "primaryGroup": "monitoring",
       "shell": "/usr/sbin/nologin", "noUserGroup": true, "passwordHash": ""}%s
    ]
  }
}`, version, dockerHash, oldgrp, coreHash, eve)
}

// imageAccounts adds what the image holds before Ignition runs: eve and
// oldgrp, which the config deletes.
func imageAccounts(t *testing.T, root string) {
	t.Helper()
	for file, line := range map[string]string{
		"passwd":  "eve:x:1700:1700::/home/eve:/bin/bash\n",
		"shadow":  "eve:!:19000:0:99999:7:::\n",
		"group":   "eve:x:1700:\noldgrp:x:1800:\n",
		"gshadow": "eve:!::\noldgrp:!::\n",
	} {
		appendTo(t, root, "/etc/"+file, line)
	}
}

// shadowTool runs a shadow-utils command on root (its own --root flag is
// in args), feeding it stdin.
func shadowTool(t *testing.T, stdin string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// copyRoot copies a provisioned root (cp -a keeps owners and modes) into a
// fresh directory that the users can reach, as runIgnition's is.
func copyRoot(t *testing.T, root string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "drift-monitor-accounts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "root")
	if out, err := exec.Command("cp", "-a", root, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	return dst
}

// noSecrets fails if any output of check or reconcile (text and JSON)
// shows a password hash, or a part of one.
func noSecrets(t *testing.T, what string, outs ...string) {
	t.Helper()
	for _, o := range outs {
		for _, s := range secretTails {
			if strings.Contains(o, s) {
				t.Errorf("%s shows a password hash (%s):\n%s", what, s, o)
			}
		}
	}
}

func userDrift(kind, path, user string) key {
	return key{Kind: kind, Entry: "user", Path: path, User: user}
}

func groupDrift(kind, path, group string) key {
	return key{Kind: kind, Entry: "group", Path: path, Group: group}
}

// accountMutation is a change made with the real shadow-utils, and the one
// drift it must bring (none: a change to an undeclared account).
type accountMutation struct {
	name  string
	stdin string
	cmd   []string // ROOT stands for the root
	want  []key
	// since is the first spec the mutation means something for
	// (shouldExist: 3.2.0).
	since string
}

var accountMutations = []accountMutation{
	{name: "usermod -s", cmd: []string{"usermod", "-R", "ROOT", "-s", "/bin/bash", "core"},
		want: []key{userDrift("shell", "/etc/passwd", "core")}},
	{name: "usermod -c", cmd: []string{"usermod", "-R", "ROOT", "-c", "Someone Else", "core"},
		want: []key{userDrift("gecos", "/etc/passwd", "core")}},
	{name: "gpasswd -d: removed from a declared group", cmd: []string{"gpasswd", "-Q", "ROOT", "-d", "core", "docker"},
		want: []key{userDrift("groups", "/etc/group", "core")}},
	{name: "gpasswd -a: an extra group", cmd: []string{"gpasswd", "-Q", "ROOT", "-a", "core", "monitoring"},
		want: []key{userDrift("groups", "/etc/group", "core")}},
	{name: "chpasswd -e", stdin: "core:" + otherHash + "\n", cmd: []string{"chpasswd", "-e", "-R", "ROOT"},
		want: []key{userDrift("password-hash", "/etc/shadow", "core")}},
	// An empty passwordHash is "*" (no password login): one set is drift.
	{name: "usermod -p: a password where none may be", cmd: []string{"usermod", "-R", "ROOT", "-p", otherHash, "svc"},
		want: []key{userDrift("password-hash", "/etc/shadow", "svc")}},
	// svc declares no gecos: Ignition leaves it as it finds it.
	{name: "a field a declared user does not declare", cmd: []string{"usermod", "-R", "ROOT", "-c", "Anything", "svc"}},
	{name: "usermod -u", cmd: []string{"usermod", "-R", "ROOT", "-u", "1601", "svc"},
		want: []key{userDrift("uid", "/etc/passwd", "svc")}},
	{name: "usermod -d", cmd: []string{"usermod", "-R", "ROOT", "-d", "/srv/svc", "svc"},
		want: []key{userDrift("home-dir", "/etc/passwd", "svc")}},
	{name: "usermod -g", cmd: []string{"usermod", "-R", "ROOT", "-g", "users", "svc"},
		want: []key{userDrift("primary-group", "/etc/passwd", "svc")}},
	{name: "userdel", cmd: []string{"userdel", "-R", "ROOT", "svc"},
		want: []key{userDrift("missing", "/etc/passwd", "svc")}},
	{name: "useradd of a user declared shouldExist false", cmd: []string{"useradd", "-R", "ROOT", "eve"},
		want: []key{userDrift("present", "/etc/passwd", "eve")}, since: "3.2.0"},
	{name: "groupmod -g", cmd: []string{"groupmod", "-R", "ROOT", "-g", "1501", "docker"},
		want: []key{groupDrift("gid", "/etc/group", "docker")}},
	{name: "chgpasswd -e", stdin: "docker:" + otherHash + "\n", cmd: []string{"chgpasswd", "-e", "-R", "ROOT"},
		want: []key{groupDrift("password-hash", "/etc/gshadow", "docker")}},
	{name: "groupdel of a declared group", cmd: []string{"groupdel", "-R", "ROOT", "docker"},
		// core was in it: its groups differ too.
		want: []key{groupDrift("missing", "/etc/group", "docker"), userDrift("groups", "/etc/group", "core")}},
	{name: "groupadd of a group declared shouldExist false", cmd: []string{"groupadd", "-R", "ROOT", "oldgrp"},
		want: []key{groupDrift("present", "/etc/group", "oldgrp")}, since: "3.2.0"},
	// In docker, which core is declared in: only core's list is exact.
	{name: "a new undeclared user", cmd: []string{"useradd", "-R", "ROOT", "-m", "-G", "docker", "mallory"}},
	{name: "an undeclared user changed", cmd: []string{"usermod", "-R", "ROOT", "-s", "/bin/sh", "-aG", "users", "alice"}},
}

// TestAccounts: users and groups as real Ignition writes them (2.14 for
// specs 3.0.0 to 3.3.0, the pinned 2.27 for 3.4.0 to 3.6.0, with Debian's
// SELinux policy and setfiles) read as clean; each field changed with the
// real shadow-utils is one drift naming the account and the field, a
// change to an account the config does not declare is none, no password
// hash appears in any output, and one `reconcile --root` puts every
// declared account back: the account files then hold what Ignition wrote
// (line for line, in any order, but the date of a password's last change)
// with Ignition's labels, and so do the homes.
func TestAccounts(t *testing.T) {
	requireTier(t)
	for _, version := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", "3.6.0"} {
		t.Run(version, func(t *testing.T) {
			prep := prepare{before: imageAccounts, selinux: true}
			if version >= "3.4.0" {
				prep.ignition = harness.IgnitionBinary(t, harness.PinnedIgnition(t))
			}
			cfgJSON := accountsConfig(version)
			root := applyIgnition(t, cfgJSON, prep)
			cfg := filepath.Join(t.TempDir(), "accounts.ign")
			mustWrite(t, cfg, string(cfgJSON), 0o600)

			if passwd := read(t, root, "/etc/passwd"); strings.Contains(passwd, "\neve:") != (version < "3.2.0") || !strings.Contains(passwd, "\nsvc:x:1600:") {
				t.Fatalf("Ignition did not apply the accounts as declared:\n%s", passwd)
			}
			if labelOf(at(root, "/etc/passwd")) == "" {
				t.Fatalf("Ignition left /etc/passwd unlabelled: the labels compared below mean nothing")
			}
			exit, rep := check(t, root, cfg)
			wantClean(t, root, exit, rep)
			scanOutputs(t, root, cfg)

			for _, m := range accountMutations {
				if version < m.since {
					continue
				}
				t.Run(m.name, func(t *testing.T) {
					r := copyRoot(t, root)
					args := make([]string, len(m.cmd)-1)
					for i, a := range m.cmd[1:] {
						args[i] = strings.ReplaceAll(a, "ROOT", r)
					}
					shadowTool(t, m.stdin, m.cmd[0], args...)
					exit, rep := check(t, r, cfg)
					if len(m.want) == 0 {
						wantClean(t, r, exit, rep)
					} else {
						wantDrift(t, r, exit, rep, m.want)
						for _, it := range rep.Drift {
							if !strings.Contains(it.Message, fmt.Sprintf("%q", it.User+it.Group)) {
								t.Errorf("message %q does not name the account", it.Message)
							}
						}
					}
					scanOutputs(t, r, cfg)
					if len(m.want) == 0 {
						return
					}
					rexit, rrep := reconcileRoot(t, r, cfg)
					noSecrets(t, "reconcile --format json", fmt.Sprintf("%+v", rrep))
					if rexit != 0 || !rrep.Clean {
						t.Errorf("reconcile: exit %d, report %s", rexit, pretty(rrep))
					}
					exit, rep = check(t, r, cfg)
					wantClean(t, r, exit, rep)
					if diff := cmp.Diff(accountState(t, root), accountState(t, r)); diff != "" {
						t.Errorf("the accounts after reconcile differ from Ignition's (-Ignition +reconcile):\n%s", diff)
					}
				})
			}
		})
	}
}

// scanOutputs runs check and reconcile --dry-run in text and JSON on root,
// and fails if any of their output shows a password hash.
func scanOutputs(t *testing.T, root, cfg string) {
	t.Helper()
	var all bytes.Buffer
	for _, args := range [][]string{
		{"check", "--root", root, "--config", cfg},
		{"check", "--root", root, "--config", cfg, "--format", "json"},
		{"reconcile", "--root", root, "--config", cfg, "--dry-run"},
		{"reconcile", "--root", root, "--config", cfg, "--dry-run", "--format", "json"},
	} {
		r := runBinary(t, args...)
		all.WriteString(r.stdout + r.stderr)
	}
	noSecrets(t, "check or reconcile --dry-run", all.String())
}

// accountState is what TestAccounts compares of a root's accounts: the
// lines of the account files, sorted (a line a tool removed and another
// added back is at the end), the date of the last password change left
// out, and the labels of the account files and of the homes and all in
// them.
func accountState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"passwd", "group", "shadow", "gshadow"} {
		lines := strings.Split(strings.TrimSpace(read(t, root, "/etc/"+f)), "\n")
		for i, l := range lines {
			if fields := strings.Split(l, ":"); f == "shadow" && len(fields) > 2 {
				fields[2] = "(last change)"
				lines[i] = strings.Join(fields, ":")
			}
		}
		slices.Sort(lines)
		out["/etc/"+f] = strings.Join(lines, "\n")
		out["/etc/"+f+" label"] = labelOf(at(root, "/etc/"+f))
	}
	for _, home := range []string{"/home", "/var/lib/svc"} {
		filepath.WalkDir(at(root, home), func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				out[strings.TrimPrefix(p, root)+" label"] = labelOf(p)
			}
			return nil
		})
	}
	return out
}
