package image

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// File capabilities, for rpm -V's P: the header's FILECAPS are libcap's
// text (cap_to_text), the file's its security.capability xattr; rpm
// compares the two as sets (rpm lib/verify.cc: cap_compare of
// cap_from_text and cap_get_file).

// capSet is the effective, permitted and inheritable sets of a file.
type capSet struct{ eff, perm, inh uint64 }

const xattrCaps = "security.capability"

// sameCaps compares a file's capabilities with a record's text ("" for
// none; a filesystem without xattrs has none). A file whose xattr or a
// record whose text cannot be read differs.
func sameCaps(x *xattrReader, text string) bool {
	raw, err := x.get(xattrCaps)
	if err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) {
		return false
	}
	var got capSet
	if len(raw) > 0 {
		if got, err = parseVFSCaps(raw); err != nil {
			return false
		}
	}
	var want capSet
	if text != "" {
		if want, err = parseCapText(text); err != nil {
			return false
		}
	}
	return got == want
}

// parseVFSCaps decodes struct vfs_cap_data (linux/capability.h): a
// revision with the effective flag, then the permitted and inheritable
// words, low 32 bits first.
func parseVFSCaps(b []byte) (capSet, error) {
	if len(b) < 4 {
		return capSet{}, errors.New("short capability xattr")
	}
	magic := binary.LittleEndian.Uint32(b)
	words := 0
	switch magic &^ 1 {
	case 0x01000000:
		words = 1
	case 0x02000000, 0x03000000:
		words = 2
	default:
		return capSet{}, fmt.Errorf("capability revision %#x", magic&^1)
	}
	if len(b) < 4+8*words {
		return capSet{}, errors.New("short capability xattr")
	}
	var s capSet
	for i := 0; i < words; i++ {
		s.perm |= uint64(binary.LittleEndian.Uint32(b[4+8*i:])) << (32 * i)
		s.inh |= uint64(binary.LittleEndian.Uint32(b[8+8*i:])) << (32 * i)
	}
	if magic&1 != 0 {
		s.eff = s.perm | s.inh
	}
	return s, nil
}

// capNames are the capabilities by number (linux/capability.h), as
// libcap names them.
var capNames = []string{"cap_chown", "cap_dac_override", "cap_dac_read_search", "cap_fowner", "cap_fsetid",
	"cap_kill", "cap_setgid", "cap_setuid", "cap_setpcap", "cap_linux_immutable", "cap_net_bind_service",
	"cap_net_broadcast", "cap_net_admin", "cap_net_raw", "cap_ipc_lock", "cap_ipc_owner", "cap_sys_module",
	"cap_sys_rawio", "cap_sys_chroot", "cap_sys_ptrace", "cap_sys_pacct", "cap_sys_admin", "cap_sys_boot",
	"cap_sys_nice", "cap_sys_resource", "cap_sys_time", "cap_sys_tty_config", "cap_mknod", "cap_lease",
	"cap_audit_write", "cap_audit_control", "cap_setfcap", "cap_mac_override", "cap_mac_admin", "cap_syslog",
	"cap_wake_alarm", "cap_block_suspend", "cap_audit_read", "cap_perfmon", "cap_bpf", "cap_checkpoint_restore"}

// parseCapText parses libcap's text form (cap_from_text(3)): clauses
// separated by spaces, each a comma-separated list of names (or "all", or
// nothing for all) followed by operations: "=" sets the listed flags and
// clears the others, "+" raises, "-" lowers; flags are e, i and p.
func parseCapText(text string) (capSet, error) {
	var s capSet
	for _, clause := range strings.Fields(text) {
		i := strings.IndexAny(clause, "=+-")
		if i < 0 {
			return capSet{}, fmt.Errorf("capability clause %q has no operator", clause)
		}
		var mask uint64
		if list := clause[:i]; list == "" || list == "all" {
			mask = 1<<len(capNames) - 1
		} else {
			for _, n := range strings.Split(list, ",") {
				bit, err := capBit(strings.ToLower(n))
				if err != nil {
					return capSet{}, err
				}
				mask |= 1 << bit
			}
		}
		ops := clause[i:]
		for len(ops) > 0 {
			op := ops[0]
			j := 1
			for j < len(ops) && strings.IndexByte("eip", ops[j]) >= 0 {
				j++
			}
			flags := ops[1:j]
			if j < len(ops) && strings.IndexByte("=+-", ops[j]) < 0 {
				return capSet{}, fmt.Errorf("capability clause %q: flag %q", clause, ops[j])
			}
			ops = ops[j:]
			if op == '=' {
				s.eff, s.perm, s.inh = s.eff&^mask, s.perm&^mask, s.inh&^mask
			}
			for _, f := range flags {
				set := map[rune]*uint64{'e': &s.eff, 'i': &s.inh, 'p': &s.perm}[f]
				if op == '-' {
					*set &^= mask
				} else {
					*set |= mask
				}
			}
		}
	}
	return s, nil
}

func capBit(name string) (int, error) {
	for i, n := range capNames {
		if n == name {
			return i, nil
		}
	}
	if n, ok := strings.CutPrefix(name, "cap_"); ok {
		if v, err := strconv.Atoi(n); err == nil && v >= 0 && v < 64 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("capability %q unknown", name)
}

// getxattrAt reads an xattr of name in the directory dfd, not following a
// link (lgetxattr through the descriptor's /proc path).
func getxattrAt(dfd int, name, attr string) ([]byte, error) {
	p := "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + name
	return readXattr(func(buf []byte) (int, error) { return unix.Lgetxattr(p, attr, buf) })
}

// fgetxattr reads the xattr attr of the node open as fd.
func fgetxattr(fd int, attr string) ([]byte, error) {
	return readXattr(func(buf []byte) (int, error) { return unix.Fgetxattr(fd, attr, buf) })
}

// flistxattr lists the xattr names of the node open as fd into *scratch
// (grown as needed), NUL-terminated.
func flistxattr(fd int, scratch *[]byte) ([]byte, error) {
	if *scratch == nil {
		*scratch = make([]byte, 256)
	}
	for {
		n, err := unix.Flistxattr(fd, *scratch)
		if errors.Is(err, unix.ERANGE) && len(*scratch) < 64<<10 {
			*scratch = make([]byte, 4*len(*scratch))
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil // a filesystem without xattrs
		}
		if err != nil {
			return nil, err
		}
		return (*scratch)[:n], nil
	}
}

// readXattr reads a value with get, growing its buffer while the kernel
// says it is too small (ERANGE), up to the kernel's XATTR_SIZE_MAX.
func readXattr(get func([]byte) (int, error)) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n, err := get(buf)
		if errors.Is(err, unix.ERANGE) && len(buf) < 64<<10 {
			buf = make([]byte, 4*len(buf))
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
