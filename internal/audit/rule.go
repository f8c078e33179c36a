package audit

import (
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Key is the filter key of drift-monitor's rules: records of its watches
// carry key="drift-monitor", and a CONFIG_CHANGE with it says one of them
// was added or removed.
const Key = "drift-monitor"

// Permissions a watch rule audits (AUDIT_PERM's value): -p wa.
const (
	PermExec  = 1
	PermWrite = 2
	PermRead  = 4
	PermAttr  = 8
)

// Rule is an audit rule as the kernel stores it (struct audit_rule_data).
type Rule struct {
	Flags  uint32 // the filter list (AUDIT_FILTER_EXIT, _TASK...)
	Action uint32 // AUDIT_NEVER, AUDIT_ALWAYS
	Mask   [64]uint32
	Fields []RuleField
}

// RuleField is one -F of a rule; Str is the string of a string field
// (a watch's path, a key), whose Value is then its length.
type RuleField struct {
	Type, Op, Value uint32
	Str             string
}

func stringField(t uint32) bool {
	switch t {
	case unix.AUDIT_WATCH, unix.AUDIT_DIR, unix.AUDIT_FILTERKEY,
		13, 14, 15, 16, 17, // AUDIT_SUBJ_USER.._CLR
		19, 20, 21, 22, 23, // AUDIT_OBJ_USER.._LEV_HIGH
		112: // AUDIT_EXE
		return true
	}
	return false
}

// WatchRule is what `auditctl -w PATH -p wa -k KEY` adds: on the exit
// list, always, every system call, the path as AUDIT_WATCH (a file, which
// need not exist while its parent does) or AUDIT_DIR (a directory tree,
// which must exist), AUDIT_PERM write|attr, AUDIT_FILTERKEY. This is the
// encoding of audit-userspace's lib/libaudit.c (audit_add_watch_dir,
// audit_update_watch_perms, audit_rule_fieldpair_data for "key") as
// auditctl 3.0.9 (Debian 12) sends it; TestRuleRoundTrip checks that
// `auditctl -l` reads ours back as "-w PATH -p wa -k drift-monitor".
func WatchRule(path string, dir bool, key string) Rule {
	r := Rule{Flags: unix.AUDIT_FILTER_EXIT, Action: unix.AUDIT_ALWAYS}
	for i := range r.Mask {
		r.Mask[i] = ^uint32(0)
	}
	t := uint32(unix.AUDIT_WATCH)
	if dir {
		t = unix.AUDIT_DIR
	}
	r.Fields = []RuleField{
		{Type: t, Op: unix.AUDIT_EQUAL, Str: path},
		{Type: unix.AUDIT_PERM, Op: unix.AUDIT_EQUAL, Value: PermWrite | PermAttr},
		{Type: unix.AUDIT_FILTERKEY, Op: unix.AUDIT_EQUAL, Str: key},
	}
	return r
}

// Watch returns the path of a watch rule (-w), whether it is a directory
// watch, and its key; ok false for any other rule.
func (r Rule) Watch() (path string, dir bool, key string, ok bool) {
	for _, f := range r.Fields {
		switch f.Type {
		case unix.AUDIT_WATCH:
			path, ok = f.Str, true
		case unix.AUDIT_DIR:
			path, dir, ok = f.Str, true, true
		case unix.AUDIT_FILTERKEY:
			// Several keys are joined with \x01 (AUDIT_KEY_SEPARATOR).
			key = f.Str
		}
	}
	return path, dir, key, ok
}

// HasKey reports whether key is one of the rule's keys.
func (r Rule) HasKey(key string) bool {
	for _, f := range r.Fields {
		if f.Type == unix.AUDIT_FILTERKEY {
			for _, k := range strings.Split(f.Str, "\x01") {
				if k == key {
					return true
				}
			}
		}
	}
	return false
}

// NeverTask reports whether r is a `-a never,task` rule: tasks it matches
// (all, without fields) get no audit context, so no watch sees their
// writes (Fedora ships one in /etc/audit/rules.d/audit.rules).
func (r Rule) NeverTask() bool {
	return r.Flags&^uint32(0x10) == unix.AUDIT_FILTER_TASK && r.Action == unix.AUDIT_NEVER
}

// String writes r in auditctl's syntax: "-w PATH -p wa -k KEY" for a watch,
// else an approximation of the -a form naming the fields by number.
func (r Rule) String() string {
	if p, _, key, ok := r.Watch(); ok {
		perm := r.perm()
		s := "-w " + p
		if perm != "" {
			s += " -p " + perm
		}
		if key != "" {
			s += " -k " + key
		}
		return s
	}
	action := map[uint32]string{unix.AUDIT_NEVER: "never", unix.AUDIT_ALWAYS: "always"}[r.Action]
	list := map[uint32]string{unix.AUDIT_FILTER_TASK: "task", unix.AUDIT_FILTER_EXIT: "exit", 5: "exclude", 0: "user", 6: "filesystem", 7: "io_uring"}[r.Flags&^uint32(0x10)]
	s := fmt.Sprintf("-a %s,%s", action, list)
	for _, f := range r.Fields {
		if stringField(f.Type) {
			s += fmt.Sprintf(" -F %d=%s", f.Type, f.Str)
		} else {
			s += fmt.Sprintf(" -F %d=%d", f.Type, f.Value)
		}
	}
	return s
}

// File writes r as a line of an audit rules file (/etc/audit/rules.d),
// which auditctl -R loads as this very rule. A watch is written as
// "-a always,exit -F path=PATH -F perm=wa -F key=KEY" (or dir= for a tree
// watch), not as -w: auditctl makes a -w of what is a directory when the
// file is loaded a recursive -F dir= watch (auditctl(8), -w), whatever the
// rule was. Other rules are written as String writes them.
func (r Rule) File() string {
	p, dir, key, ok := r.Watch()
	if !ok {
		return r.String()
	}
	field := "path"
	if dir {
		field = "dir"
	}
	s := "-a always,exit -F " + field + "=" + p
	if perm := r.perm(); perm != "" {
		s += " -F perm=" + perm
	}
	if key != "" {
		s += " -F key=" + key
	}
	return s
}

// perm is r's AUDIT_PERM as auditctl writes it ("wa").
func (r Rule) perm() string {
	perm := ""
	for _, f := range r.Fields {
		if f.Type == unix.AUDIT_PERM {
			for _, c := range []struct {
				bit uint32
				c   string
			}{{PermRead, "r"}, {PermWrite, "w"}, {PermExec, "x"}, {PermAttr, "a"}} {
				if f.Value&c.bit != 0 {
					perm += c.c
				}
			}
		}
	}
	return perm
}

const ruleHeader = 3*4 + 4*64*4 + 4 // flags action field_count mask fields values fieldflags buflen

func (r Rule) marshal() []byte {
	b := make([]byte, ruleHeader)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], r.Flags)
	ne.PutUint32(b[4:], r.Action)
	ne.PutUint32(b[8:], uint32(len(r.Fields)))
	for i, m := range r.Mask {
		ne.PutUint32(b[12+4*i:], m)
	}
	var buf []byte
	for i, f := range r.Fields {
		v := f.Value
		if stringField(f.Type) {
			v = uint32(len(f.Str))
			buf = append(buf, f.Str...)
		}
		ne.PutUint32(b[12+256+4*i:], f.Type)
		ne.PutUint32(b[12+512+4*i:], v)
		ne.PutUint32(b[12+768+4*i:], f.Op)
	}
	ne.PutUint32(b[ruleHeader-4:], uint32(len(buf)))
	return append(b, buf...)
}

func unmarshalRule(b []byte) (Rule, error) {
	if len(b) < ruleHeader {
		return Rule{}, fmt.Errorf("audit rule: %d bytes, want at least %d", len(b), ruleHeader)
	}
	ne := binary.NativeEndian
	r := Rule{Flags: ne.Uint32(b[0:]), Action: ne.Uint32(b[4:])}
	n := int(ne.Uint32(b[8:]))
	if n > 64 {
		return Rule{}, fmt.Errorf("audit rule: %d fields", n)
	}
	for i := range r.Mask {
		r.Mask[i] = ne.Uint32(b[12+4*i:])
	}
	buf := b[ruleHeader:]
	if bl := int(ne.Uint32(b[ruleHeader-4:])); bl <= len(buf) {
		buf = buf[:bl]
	}
	for i := 0; i < n; i++ {
		f := RuleField{Type: ne.Uint32(b[12+256+4*i:]), Value: ne.Uint32(b[12+512+4*i:]), Op: ne.Uint32(b[12+768+4*i:])}
		if stringField(f.Type) {
			l := int(f.Value)
			if l > len(buf) {
				return Rule{}, fmt.Errorf("audit rule: string field %d of %d bytes past the buffer", f.Type, l)
			}
			f.Str, buf = string(buf[:l]), buf[l:]
		}
		r.Fields = append(r.Fields, f)
	}
	return r, nil
}
