package reconcile

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"golang.org/x/sys/unix"
)

// After its account tools, Ignition relabels the account files and the
// homes of the users it made: internal/exec/stages/files/passwd.go,
// createPasswd marks /etc/passwd*, /etc/group*, /etc/shadow*,
// /etc/gshadow*, /etc/subuid*, /etc/subgid* and /etc/.pwd.lock, and each
// declared user's home (where it points, when it is a link), for the
// setfiles that ends the stage, which labels a directory and all below it.
// A tool run with --root on a root whose kernel loads no policy leaves its
// new files unlabelled, so reconcile labels them the same way.

// accountFilePrefixes are the names in /etc whose files are relabelled.
var accountFilePrefixes = []string{"passwd", "group", "shadow", "gshadow", "subuid", "subgid", ".pwd.lock"}

// relabelDepth bounds the walk of a home: a home made from /etc/skel is a
// few levels deep.
const relabelDepth = 32

// planRelabel is the step that labels what an account's tools wrote, when
// there is a policy: the account files, and the home of a user whose home
// the tools made or moved.
func (r *Reconciler) planRelabel(e *model.Entry, cmds []command) []Step {
	if r.Labels == nil || len(cmds) == 0 {
		return nil
	}
	s := Step{Op: OpRelabel, Path: e.Path, Says: "label the account files (/etc/passwd*, /etc/group*, /etc/shadow*, /etc/gshadow*, /etc/subuid*, /etc/subgid*) as the policy says"}
	for _, c := range cmds {
		if c.name == "useradd" && hasArg(c.args, "--create-home") || c.name == "usermod" && hasArg(c.args, "--move-home") {
			s.home = e.Account.Name
			s.Says += fmt.Sprintf(", and the home of %s with all it holds", e.Account.Name)
		}
	}
	return []Step{s}
}

func hasArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// relabel does an OpRelabel step: nothing in a dry run's preview (the
// root's files are not the tools' there).
func (r *Reconciler) relabel(w *writer, s *Step) error {
	if r.Accounts != nil || w.label == nil {
		return nil
	}
	dir, resolved, err := w.dirPath("/etc")
	if err != nil {
		return opError("opening directory", "/etc", err)
	}
	defer unix.Close(dir)
	names, err := listDir(dir)
	if err != nil {
		return opError("reading directory", "/etc", err)
	}
	for _, n := range names {
		for _, p := range accountFilePrefixes {
			if strings.HasPrefix(n, p) {
				if err := w.relabelNode(dir, path.Join("/etc", n), path.Join(resolved, n), 0); err != nil {
					return err
				}
				break
			}
		}
	}
	if s.home == "" {
		return nil
	}
	db, err := r.accountDB()
	if err != nil {
		return err
	}
	u, ok := db.Users[s.home]
	if !ok || !path.IsAbs(u.Home) || u.Home == "/" {
		return nil
	}
	home := path.Clean(u.Home)
	parent, err := w.dir(path.Dir(home))
	if errors.Is(err, unix.ENOENT) {
		return nil // --no-create-home after all, or a home not made
	}
	if err != nil {
		return opError("opening directory", path.Dir(home), err)
	}
	defer unix.Close(parent)
	return w.relabelNode(parent, home, w.root.HomeAsRelabelled(home), 0)
}

// relabelNode gives the node name (hostPath) in dir the default label of
// at, and, for a directory, everything below it the labels of the paths
// below at (setfiles on a directory), links not followed.
func (w *writer) relabelNode(dir int, hostPath, at string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, path.Base(hostPath), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return opError("examining", hostPath, err)
	}
	t, ok := labelTypes[typeOf(st.Mode)]
	if !ok {
		return nil
	}
	if err := w.labelNew(dir, hostPath, at, t); err != nil {
		return err
	}
	if t != selinux.Directory || depth >= relabelDepth {
		return nil
	}
	sub, err := unix.Openat(dir, path.Base(hostPath), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return opError("opening directory", hostPath, err)
	}
	defer unix.Close(sub)
	names, err := listDir(sub)
	if err != nil {
		return opError("reading directory", hostPath, err)
	}
	for _, n := range names {
		if err := w.relabelNode(sub, path.Join(hostPath, n), path.Join(at, n), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// listDir lists the names in the directory dir (a descriptor of it, O_PATH
// or not).
func listDir(dir int) ([]string, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

// typeOf is the node type of a stat's mode.
func typeOf(mode uint32) ondisk.FileType {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return ondisk.Regular
	case unix.S_IFDIR:
		return ondisk.Directory
	case unix.S_IFLNK:
		return ondisk.Symlink
	}
	return ondisk.Absent
}
