package selinux

import (
	"bytes"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// debianPolicy reads Debian's file_contexts (selinux-policy-default), the
// largest real one at hand, or calls Unavailable.
func debianPolicy(t *testing.T) []byte {
	t.Helper()
	const contexts = "/etc/selinux/default/contexts/files/file_contexts"
	data, err := os.ReadFile(contexts)
	if err != nil {
		harness.Unavailable(t, "Debian's policy (selinux-policy-default): %v", err)
	}
	return data
}

// reader serves files from memory, as a policy's Reader.
func reader(files map[string][]byte) Reader {
	return func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, fs.ErrNotExist
	}
}

// TestLoadScales: a load is linear in the size of the policy, held at ten
// times Debian's file_contexts (each line ten times over), and loads every
// spec of it.
func TestLoadScales(t *testing.T) {
	base := debianPolicy(t)
	one, err := Load(reader(map[string][]byte{"/fc": base}), "/fc")
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[int][]byte{1: base, 10: bytes.Repeat(base, 10)}
	harness.Linear(t, "loading file_contexts", func(scale int) {
		c, err := Load(reader(map[string][]byte{"/fc": inputs[scale]}), "/fc")
		if err != nil {
			t.Fatal(err)
		}
		if c.Specs != scale*one.Specs {
			t.Fatalf("%d specs loaded of %d", c.Specs, scale*one.Specs)
		}
	})
}

// TestLoadLineTooLong: a line longer than any spec is an error that names
// the file and the line, not a policy loaded in part.
func TestLoadLineTooLong(t *testing.T) {
	data := "/etc(/.*)?\tsystem_u:object_r:etc_t:s0\n/x" + strings.Repeat("y", maxLine) + "\tsystem_u:object_r:etc_t:s0\n"
	_, err := Load(reader(map[string][]byte{"/fc": []byte(data)}), "/fc")
	if err == nil || !strings.Contains(err.Error(), "/fc:2: a line longer than") {
		t.Errorf("Load of a file with a line of %d bytes: %v", maxLine+2, err)
	}
}

// FuzzLoad: whatever a file_contexts holds, Load never panics, refuses it
// with an error that names the file, or loads it so that every lookup
// answers (every expression it accepted compiles).
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"/etc(/.*)?\tsystem_u:object_r:etc_t:s0\n/etc/shadow.*\t--\tsystem_u:object_r:shadow_t:s0\n",
		"/home/[^/]+/\\.ssh(/.*)?\t<<none>>\n/var/run\t-l\tsystem_u:object_r:var_run_t:s0\n",
		"# comment\n\n/a\\.b\tctx\n/(a|b)+\tctx\n/x{2,3}\t-d\tctx\n",
		"/bad(\tctx\n", "/a\t-q\tctx\n", "/a b c d\n",
	} {
		f.Add([]byte(s), []byte("/usr/local /usr\n"))
	}
	f.Fuzz(func(t *testing.T, fc, subs []byte) {
		c, err := Load(reader(map[string][]byte{"/p/fc": fc, "/p/fc.subs": subs}), "/p/fc")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "/p/fc") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, p := range []string{"/", "/etc/shadow", "/home/u/.ssh/id", "/usr/local/bin/x", "//a//b/", "/a.b"} {
			for _, typ := range []FileType{AnyType, Regular, Directory, Symlink} {
				c.Lookup(p, typ)
			}
		}
		for _, specs := range c.regexes {
			for _, s := range specs {
				s.matches("/")
			}
		}
	})
}
