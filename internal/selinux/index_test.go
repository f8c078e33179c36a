package selinux

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// plainMatch is the lookup without any shortcut: the literals, then every
// regular expression of the policy in reverse file order, its stem and
// type as libselinux 3.4's lookup_all tests them, matched by the regexp
// package alone (no literal prefix, suffix or infix, no shape).
func (c *Contexts) plainMatch(k string, t FileType) *spec {
	if s := c.matchLiteral(k, t); s != nil {
		return s
	}
	plainOrderMu.Lock()
	all, ok := plainOrder[c]
	if !ok {
		for _, specs := range c.regexes {
			all = append(all, specs...)
		}
		slices.SortFunc(all, func(a, b *spec) int { return b.order - a.order })
		plainOrder[c] = all
	}
	plainOrderMu.Unlock()
	st := stemOfPath(k)
	for _, s := range all {
		if (s.stem == "" || s.stem == st) && typeMatches(s, t) && s.matches(k) {
			return s
		}
	}
	return nil
}

// plainOrder keeps, by policy, its expressions in the order plainMatch
// tries them.
var (
	plainOrderMu sync.Mutex
	plainOrder   = map[*Contexts][]*spec{}
)

// sameSpec says which of three lookups disagree, "" when none.
func sameSpec(c *Contexts, k string, t FileType) string {
	name := func(s *spec) string {
		if s == nil {
			return "none"
		}
		return fmt.Sprintf("%q (line order %d)", s.src, s.order)
	}
	idx, lin, plain := c.matchIndexed(k, t), c.match(k, t), c.plainMatch(k, t)
	if idx != lin || idx != plain {
		return fmt.Sprintf("%q as %q: indexed %s, linear %s, plain %s", k, t, name(idx), name(lin), name(plain))
	}
	return ""
}

var fuzzTypes = []FileType{AnyType, Regular, Directory, Symlink, CharDev, BlockDev, Socket, FIFO}

// FuzzIndexedLookup: on any policy and any path, the indexed lookup (the
// prefix index, the literals' tests, the shapes matched without the
// regexp package) finds the spec the linear lookup finds, and both the one
// that every expression tried in order finds.
func FuzzIndexedLookup(f *testing.F) {
	policy := `/.*	u:r:default_t:s0
/etc(/.*)?	u:r:etc_t:s0
/etc/ssh(/.*)?	u:r:ssh_etc_t:s0
/etc/ssh/.*keys	u:r:keys_t:s0
/etc/?x	u:r:etcx_t:s0
/etc/.*l2tp(/.*)?	u:r:l2tp_t:s0
/usr/(.*/)?bin(/.*)?	u:r:bin_t:s0
/usr/(.*/)?dh-python/dh_pypy	u:r:pypy_t:s0
/srv/[^/]+/data	--	u:r:data_t:s0
/srv/(a|b)c	u:r:ac_t:s0
/opt|/mnt	u:r:alt_t:s0
(/.*)?/\.cache(/.*)?	u:r:cache_t:s0
/home/[^/]+/\.ssh(/.*)?	u:r:ssh_home_t:s0
/var/run(/.*)?	-d	u:r:run_t:s0
/var/.*	<<none>>
`
	for _, p := range []string{"/etc/ssh/hostkeys", "/etcx", "/etc/x", "/etc/ppp/l2tp/a", "/usr/local/bin/x", "/usr/x/dh-python/dh_pypy",
		"/srv/a/data", "/srv/ac", "/opt", "/mnt", "/home/u/.cache/x", "/home/u/.ssh", "/var/run/a", "/var/lib/x", "/etc\n/x", "/etc/\xff",
		"/", "/etc", "/usr/bin"} {
		f.Add(policy, p, uint8(1))
	}
	f.Fuzz(func(t *testing.T, policy, path string, typ uint8) {
		c, err := Load(files(map[string]string{"/fc": policy}), "/fc")
		if err != nil || path == "" {
			return
		}
		k := c.key(path)
		if d := sameSpec(c, k, fuzzTypes[int(typ)%len(fuzzTypes)]); d != "" {
			t.Fatal(d)
		}
	})
}

// FuzzIndexedLookupDebian: the same on Debian's whole policy.
func FuzzIndexedLookupDebian(f *testing.F) {
	c := loadedDebianPolicy(f)
	for _, p := range []string{"/etc/bench/d0001/f000123.conf", "/etc/systemd/system/foo.service", "/usr/local/bin/tool", "/home/core/.ssh/authorized_keys.d/ignition",
		"/var/lib/kubelet/config.json", "/etc/NetworkManager/system-connections/x.nmconnection", "/usr/lib/x86_64-linux-gnu/libfoo.so.1", "/etc/ppp/l2tp"} {
		f.Add(p, uint8(1))
	}
	f.Fuzz(func(t *testing.T, path string, typ uint8) {
		if path == "" {
			return
		}
		if d := sameSpec(c, c.key(path), fuzzTypes[int(typ)%len(fuzzTypes)]); d != "" {
			t.Fatal(d)
		}
	})
}

// TestIndexedLookupEveryPrefix: on Debian's policy, the three lookups agree
// on each spec's literal prefix and on paths just past it, of every type:
// the paths where an index cut in the wrong place would show.
func TestIndexedLookupEveryPrefix(t *testing.T) {
	c := loadedDebianPolicy(t)
	n, bad := 0, 0
	for _, specs := range c.regexes {
		for _, s := range specs {
			for _, p := range []string{s.prefix, s.prefix + "x", s.prefix + "/a/b.so", s.lit + "/z", strings.TrimSuffix(s.prefix, "/")} {
				for _, typ := range []FileType{Regular, Directory, Symlink} {
					if p == "" {
						continue
					}
					n++
					if d := sameSpec(c, c.key(p), typ); d != "" {
						bad++
						if bad <= 10 {
							t.Error(d)
						}
					}
				}
			}
		}
	}
	if n < 10000 {
		t.Errorf("only %d lookups compared", n)
	}
}

// loadedDebianPolicy loads Debian's selinux-policy-default.
func loadedDebianPolicy(t testing.TB) *Contexts {
	const contexts = "/etc/selinux/default/contexts/files/file_contexts"
	if _, err := os.Stat(contexts); err != nil {
		harness.Unavailable(t, "Debian's policy (selinux-policy-default): %v", err)
	}
	c, err := Load(os.ReadFile, contexts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// files serves a policy's files from memory.
func files(m map[string]string) Reader {
	return func(p string) ([]byte, error) {
		s, ok := m[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
}
