package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Commands runs the shadow-utils tools that repair accounts; nil runs them
// from PATH. stdin, when not nil, is the command's input: password hashes
// go there (chpasswd -e), never into an argument list that any user can
// read in /proc while the command runs.
type Commands interface {
	Run(ctx context.Context, name string, args []string, stdin []byte) error
}

type execCommands struct{}

func (execCommands) Run(ctx context.Context, name string, args []string, stdin []byte) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			return fmt.Errorf("%s: %w", name, err)
		}
		return fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return nil
}

// command is one tool run of an account's repair.
type command struct {
	name string
	// args holds rootArg where the tool takes the root's directory: it is
	// given when the command runs (the root's, or a dry run's scratch
	// copy of its account files).
	args  []string
	stdin []byte // a password line: never shown
	// writes are the host paths the tool may write (leave.go): the
	// account files, a home directory.
	writes []string
}

// rootArg stands for the directory --root names until the command runs. A
// NUL is in no argument a process can be given.
const rootArg = "\x00root"

// withRoot is c's arguments with rootArg replaced by dir.
func (c command) withRoot(dir string) []string {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		if a == rootArg {
			a = dir
		}
		args[i] = a
	}
	return args
}

// String is the command as the admin would run it on the host the root
// is: without --root (reports name host paths only, never the root's
// directory); stdin is named, not shown.
func (c command) String() string {
	s := c.name
	for i := 0; i < len(c.args); i++ {
		if c.args[i] == "--root" {
			i++
			continue
		}
		s += " " + shellQuote(c.args[i])
	}
	if c.stdin != nil {
		s += " (the declared password hash on its input)"
	}
	return s
}

// planAccount plans a user's or group's repair as Ignition's passwd.go
// writes it: the same tools with --root, groups before users
// (internal/exec/stages/files/passwd.go, createPasswd), and the fields that
// drifted only. It reads the account files, and writes nothing.
func (r *Reconciler) planAccount(e *model.Entry, kinds []drift.Kind) ([]Step, error) {
	acct := e.Account
	if field, err := model.AccountProblem(acct); err != nil {
		// The loader refuses such a config; a state from elsewhere is
		// refused here, before any tool is handed the value.
		return nil, refuse("its %s is refused: %v", field, err)
	}
	db, err := r.accountDB()
	if err != nil {
		return nil, refuse("the account files cannot be read: %v", err)
	}
	var cmds []command
	if e.Kind == model.KindGroup {
		cmds, err = groupCommands(acct, kinds, db)
	} else {
		o := ondisk.NewObserver(r.Root)
		defer o.Close()
		homeExists := acct.Home != nil && o.TypeOf(*acct.Home) == ondisk.Directory
		cmds, err = userCommands(acct, kinds, db, homeExists)
	}
	var steps []Step
	for _, c := range cmds {
		steps = append(steps, Step{Op: OpRun, Path: e.Path, Says: c.String(), Resolves: kinds, cmd: c, hash: acct.PasswordHash})
	}
	if err != nil {
		return steps, err
	}
	return append(steps, r.planRelabel(e, cmds)...), nil
}

// run runs an account's tool; its message never shows the declared hash.
func (r *Reconciler) run(ctx context.Context, c command, hash *string) error {
	run := r.Commands
	if run == nil {
		run = execCommands{}
	}
	if err := run.Run(ctx, c.name, c.withRoot(r.accountsDir()), c.stdin); err != nil {
		return refuse("%s", withoutHash(err.Error(), hash))
	}
	return nil
}

// withoutHash is a tool's message with the declared hash taken out, should
// the tool ever echo its input: a hash is never shown. One too short to be
// a secret ("*", "!") is left, or every star of the message would go.
func withoutHash(msg string, hash *string) string {
	if hash == nil || len(*hash) < 8 {
		return msg
	}
	return strings.ReplaceAll(msg, *hash, "(the declared password hash)")
}

// passwordLine is chpasswd's and chgpasswd's input for -e: NAME:HASH.
func passwordLine(name, hash string) []byte { return []byte(name + ":" + hash + "\n") }

// userCommands plans a user's repair. homeExists says the declared home
// is a directory already: usermod --move-home refuses to move onto one
// (shadow-utils src/usermod.c, move_home: "directory exists"), where
// Ignition's usermod would have failed; the home is then only named.
func userCommands(acct *model.Account, kinds []drift.Kind, db *accountdb.DB, homeExists bool) ([]command, error) {
	u, exists := db.Users[acct.Name]
	switch {
	case acct.Absent && exists && u.Source != accountdb.PasswdFile:
		// userdel edits /etc/passwd only, and fails on a user that is not
		// there ("user 'NAME' does not exist"), as Ignition's would.
		return nil, refuse("user %q is in %s (the image's, read through nss-altfiles): userdel removes users from %s only, so it cannot be removed", acct.Name, u.Source, accountdb.PasswdFile)
	case acct.Absent:
		// EnsureUser: userdel --remove --root.
		c := command{name: "userdel", args: []string{"--remove", "--root", rootArg, acct.Name}, writes: userFiles}
		if exists {
			c.writes = append(slices.Clone(userFiles), u.Home)
		}
		return []command{c}, nil
	case exists && u.Source != accountdb.PasswdFile:
		return nil, refuse("user %q is in %s (the image's, read through nss-altfiles): usermod changes %s only; copy its line there first", acct.Name, u.Source, accountdb.PasswdFile)
	}
	if acct.PrimaryGroup != nil && has(kinds, drift.PrimaryGroup) || !exists && acct.PrimaryGroup != nil {
		if _, ok := db.GroupOf(*acct.PrimaryGroup); !ok {
			return nil, refuse("its primary group %q does not exist", *acct.PrimaryGroup)
		}
	}
	args := []string{"--root", rootArg}
	var name string
	if !exists {
		// useradd with every declared field, as EnsureUser does for a user
		// that does not exist.
		name = "useradd"
		if acct.Home != nil {
			args = append(args, "--home-dir", *acct.Home)
		}
		if acct.Creation.NoCreateHome {
			args = append(args, "--no-create-home")
		} else {
			args = append(args, "--create-home")
		}
		for _, f := range []struct {
			on   bool
			flag string
		}{{acct.Creation.NoUserGroup, "--no-user-group"}, {acct.Creation.System, "--system"}, {acct.Creation.NoLogInit, "--no-log-init"}} {
			if f.on {
				args = append(args, f.flag)
			}
		}
		// A user created without a declared hash gets "*" (no password
		// login); a declared one is set by chpasswd below.
		args = append(args, "--password", "*")
		kinds = []drift.Kind{drift.UID, drift.Gecos, drift.PrimaryGroup, drift.Groups, drift.Shell, drift.PasswordHash}
	} else {
		name = "usermod"
		if acct.Home != nil && has(kinds, drift.HomeDir) {
			args = append(args, "--home", *acct.Home)
			if !homeExists {
				args = append(args, "--move-home")
			}
		}
	}
	if acct.ID != nil && has(kinds, drift.UID) {
		args = append(args, "--uid", strconv.Itoa(*acct.ID))
	}
	if acct.Gecos != nil && has(kinds, drift.Gecos) {
		args = append(args, "--comment", *acct.Gecos)
	}
	if acct.PrimaryGroup != nil && has(kinds, drift.PrimaryGroup) {
		args = append(args, "--gid", *acct.PrimaryGroup)
	}
	if acct.Groups != nil && has(kinds, drift.Groups) {
		args = append(args, "--groups", strings.Join(acct.Groups, ","))
	}
	if acct.Shell != nil && has(kinds, drift.Shell) {
		args = append(args, "--shell", *acct.Shell)
	}
	var cmds []command
	if len(args) > 2 || name == "useradd" {
		cmds = append(cmds, command{name: name, args: append(args, acct.Name), writes: userWrites(acct, u, args)})
	}
	if acct.PasswordHash != nil && has(kinds, drift.PasswordHash) {
		// What usermod --password writes (SetPasswordHash), through stdin.
		cmds = append(cmds, command{name: "chpasswd", args: []string{"--encrypted", "--root", rootArg}, stdin: passwordLine(acct.Name, *acct.PasswordHash), writes: chpasswdFiles})
	}
	return cmds, nil
}

// userWrites are the host paths useradd (u nil) or usermod with args
// writes: the account files (leave.go) and the home directory useradd
// --create-home makes, usermod --move-home moves, and usermod --uid or
// --gid chowns the tree of (src/usermod.c: move_home, chown_tree).
func userWrites(acct *model.Account, u *accountdb.Passwd, args []string) []string {
	home := "/home/" + acct.Name // useradd's default HOME=/home (/etc/default/useradd)
	if acct.Home != nil {
		home = *acct.Home
	}
	if u == nil {
		w := slices.Clone(userFiles)
		if !slices.Contains(args, "--no-create-home") {
			w = append(w, home)
		}
		return w
	}
	w := slices.Clone(usermodFiles)
	if slices.Contains(args, "--groups") {
		w = append(w, usermodGroupsFiles...)
	}
	if slices.Contains(args, "--move-home") {
		w = append(w, u.Home, home)
	} else if slices.Contains(args, "--uid") || slices.Contains(args, "--gid") {
		w = append(w, u.Home)
	}
	return w
}

func groupCommands(acct *model.Account, kinds []drift.Kind, db *accountdb.DB) ([]command, error) {
	g, exists := db.Groups[acct.Name]
	switch {
	case acct.Absent && exists && g.Source != accountdb.GroupFile:
		return nil, refuse("group %q is in %s (the image's, read through nss-altfiles): groupdel removes groups from %s only, so it cannot be removed", acct.Name, g.Source, accountdb.GroupFile)
	case acct.Absent:
		return []command{{name: "groupdel", args: []string{"--root", rootArg, acct.Name}, writes: groupFiles}}, nil
	case exists && g.Source != accountdb.GroupFile:
		return nil, refuse("group %q is in %s (the image's, read through nss-altfiles): groupmod changes %s only; copy its line there first", acct.Name, g.Source, accountdb.GroupFile)
	}
	args := []string{"--root", rootArg}
	name := "groupmod"
	if !exists {
		name = "groupadd"
		kinds = []drift.Kind{drift.GID, drift.PasswordHash}
		if acct.Creation.System {
			args = append(args, "--system")
		}
	}
	if acct.ID != nil && has(kinds, drift.GID) {
		args = append(args, "--gid", strconv.Itoa(*acct.ID))
	}
	var cmds []command
	if len(args) > 2 || !exists {
		w := groupFiles
		if exists {
			w = groupmodFiles
		}
		cmds = append(cmds, command{name: name, args: append(args, acct.Name), writes: w})
	}
	if acct.PasswordHash != nil && has(kinds, drift.PasswordHash) {
		// What groupadd/groupmod --password writes, through stdin.
		cmds = append(cmds, command{name: "chgpasswd", args: []string{"--encrypted", "--root", rootArg}, stdin: passwordLine(acct.Name, *acct.PasswordHash), writes: groupFiles})
	}
	return cmds, nil
}
