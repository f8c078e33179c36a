package audit

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Unset is the kernel's value of a login uid or session that was never set
// (AUDIT_UID_UNSET, AUDIT_SID_UNSET): a process that no login started.
const Unset = 4294967295

// Writer is who made one audited system call.
type Writer struct {
	PID, PPID int
	UID, EUID uint32
	// AUID is the login uid (Unset: not from a login); it survives sudo,
	// su and setpriv. Session is the audit session, which logind keeps
	// equal to its session id.
	AUID, Session uint32
	Comm, Exe     string
	Syscall       string // its name by the record's architecture, or "syscall N" (SyscallName)
	Success       bool
	Exit          int
}

// LoginUID reports whether the writer came from a login.
func (w Writer) LoginUID() bool { return w.AUID != Unset }

// Inode names a node the way a PATH record does: the device as
// "major:minor" in hex and the inode number.
type Inode struct {
	Dev string
	Ino uint64
}

// DevString is the PATH record's spelling of a stat(2) st_dev.
func DevString(dev uint64) string {
	return fmt.Sprintf("%02x:%02x", unix.Major(dev), unix.Minor(dev))
}

// PathItem is one PATH record of an event.
type PathItem struct {
	// Name as the writer gave it; Path the same made absolute with the
	// event's CWD ("" when the name was relative to a directory
	// descriptor the record does not name).
	Name, Path string
	Inode      Inode
	// NameType: NORMAL, PARENT, CREATE, DELETE, UNKNOWN.
	NameType string
}

// Event is one audited system call: its records assembled.
type Event struct {
	Stamp  Stamp
	Writer Writer
	Key    string
	CWD    string
	Paths  []PathItem
	// Partial: the EOE never came; what is here may be incomplete.
	Partial bool
	// Config is set for an AUDIT_CONFIG_CHANGE event (a rule added or
	// removed, audit enabled or disabled), which has no syscall.
	Config *ConfigChange
}

// ConfigChange is an AUDIT_CONFIG_CHANGE record.
type ConfigChange struct {
	Op, Key string
	OK      bool
	Fields  []Field
}

// event builds an Event from the records of one stamp; what it keeps of
// them comes from in (nil: copies).
func event(rs []Record, partial bool, in *interner) Event {
	e := Event{Stamp: rs[0].Stamp, Partial: partial}
	for _, r := range rs {
		switch r.Type {
		case TypeSyscall:
			e.Writer = writer(r, in)
			key, _ := r.Get("key")
			e.Key = in.get(key)
		case TypeCWD:
			cwd, _ := r.Get("cwd")
			e.CWD = in.get(cwd)
		case TypePath:
			e.Paths = append(e.Paths, pathItem(r, in))
		case TypeConfigChange:
			op, _ := r.Get("op")
			key, _ := r.Get("key")
			res, _ := r.Get("res")
			e.Config = &ConfigChange{Op: op, Key: key, OK: res == "1" || res == "success", Fields: r.Fields}
			e.Key = key
		}
	}
	for i := range e.Paths {
		p := &e.Paths[i]
		switch {
		case strings.HasPrefix(p.Name, "/"):
			p.Path = in.get(path.Clean(p.Name))
		case e.CWD != "" && p.Name != "" && p.Name != "(null)" && !dirfdRelative(e.Writer.Syscall, e.Paths, i):
			p.Path = in.get(path.Join(e.CWD, p.Name))
		}
	}
	return e
}

// interner keeps one copy of each string events keep (a writer's comm and
// exe, a path, a device): a storm's events name the same few again and
// again, and a value parsed from a record would keep the whole record
// alive. It forgets everything when it holds internMax strings: memory is
// bounded, whatever the names seen.
type interner struct{ m map[string]string }

const internMax = 1 << 14

// get is s's kept copy.
func (in *interner) get(s string) string {
	if in == nil {
		return strings.Clone(s)
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	if in.m == nil || len(in.m) >= internMax {
		in.m = make(map[string]string, 256)
	}
	v := strings.Clone(s)
	in.m[v] = v
	return v
}

// dirfdRelative reports whether the i'th item's relative name may be
// relative to a directory descriptor rather than the CWD: for the *at
// calls the record does not say which, unless a PARENT item with an
// absolute or CWD-relative name precedes it. Then the name is taken as
// the CWD-relative one only when no such doubt exists.
func dirfdRelative(syscall string, items []PathItem, i int) bool {
	if !strings.HasSuffix(syscall, "at") && !strings.HasSuffix(syscall, "at2") {
		return false
	}
	// The kernel writes the dirfd's path nowhere; a name with no
	// directory part is then as likely relative to the dirfd. The
	// inode index still finds the node.
	return !strings.Contains(items[i].Name, "/")
}

func writer(r Record, in *interner) Writer {
	w := Writer{AUID: Unset, Session: Unset}
	arch, _ := r.Get("arch")
	for _, f := range r.Fields {
		switch f.Key {
		case "pid":
			w.PID, _ = strconv.Atoi(f.Value)
		case "ppid":
			w.PPID, _ = strconv.Atoi(f.Value)
		case "uid":
			w.UID = uid(f.Value)
		case "euid":
			w.EUID = uid(f.Value)
		case "auid":
			w.AUID = uid(f.Value)
		case "ses":
			w.Session = uid(f.Value)
		case "comm":
			w.Comm = in.get(f.Value)
		case "exe":
			w.Exe = in.get(f.Value)
		case "syscall":
			n, err := strconv.Atoi(f.Value)
			if err != nil {
				w.Syscall = in.get(f.Value) // interpreted already (ausearch -i style)
			} else {
				w.Syscall = SyscallName(arch, n)
			}
		case "success":
			w.Success = f.Value == "yes"
		case "exit":
			w.Exit, _ = strconv.Atoi(f.Value)
		}
	}
	return w
}

func uid(s string) uint32 {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return Unset
	}
	return uint32(n)
}

func pathItem(r Record, in *interner) PathItem {
	var p PathItem
	name, _ := r.Get("name")
	nametype, _ := r.Get("nametype")
	dev, _ := r.Get("dev")
	p.Name, p.NameType, p.Inode.Dev = in.get(name), in.get(nametype), in.get(dev)
	if v, ok := r.Get("inode"); ok {
		p.Inode.Ino, _ = strconv.ParseUint(v, 10, 64)
	}
	return p
}
