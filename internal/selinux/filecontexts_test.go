package selinux_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"github.com/drift-monitor/drift-monitor/test/harness"
)

// files serves a policy's files from memory.
func files(m map[string]string) selinux.Reader {
	return func(p string) ([]byte, error) {
		s, ok := m[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
}

// TestLookupRules: libselinux's precedence on small file_contexts.
func TestLookupRules(t *testing.T) {
	const fc = "/fc"
	c, err := selinux.Load(files(map[string]string{
		fc: `# comment
/.*			u:r:default_t:s0
/etc(/.*)?		u:r:etc_t:s0
/etc/ssh(/.*)?		u:r:ssh_etc_t:s0
/etc/ssh/keys		u:r:literal_t:s0
/etc/ssh/.*keys		u:r:later_regex_t:s0
/etc/app\.conf		u:r:escaped_t:s0
/etc/dir(/.*)?	-d	u:r:dir_t:s0
/etc/dir(/.*)?	--	u:r:file_t:s0
/proc(/.*)?		<<none>>
/home/[^/]+(/.*)?	u:r:home_t:s0
/srv/x(/.*)?	u:r:first_t:s0
/srv/x(/.*)?	u:r:second_t:s0
`,
		fc + ".local":     "/srv/x/local\tu:r:local_t:s0\n/etc/ssh/keys\tu:r:local_literal_t:s0\n",
		fc + ".subs_dist": "/var/home /home\n",
		fc + ".subs":      "/aliased /etc\n",
	}), fc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		typ  selinux.FileType
		want string // "" for none
	}{
		{"/etc/passwd", selinux.Regular, "u:r:etc_t:s0"},
		{"/etc", selinux.Directory, "u:r:etc_t:s0"},
		{"/etc/ssh/sshd_config", selinux.Regular, "u:r:ssh_etc_t:s0"},
		// A literal beats a later regular expression; .local's later literal wins.
		{"/etc/ssh/keys", selinux.Regular, "u:r:local_literal_t:s0"},
		{"/etc/ssh/hostkeys", selinux.Regular, "u:r:later_regex_t:s0"},
		{"/etc/app.conf", selinux.Regular, "u:r:escaped_t:s0"},
		{"/etc/appXconf", selinux.Regular, "u:r:etc_t:s0"},
		{"/etc/dir/sub", selinux.Directory, "u:r:dir_t:s0"},
		{"/etc/dir/f", selinux.Regular, "u:r:file_t:s0"},
		{"/etc/dir/l", selinux.Symlink, "u:r:etc_t:s0"},
		{"/proc/1", selinux.Regular, ""},
		{"/srv/x/y", selinux.Regular, "u:r:second_t:s0"},
		{"/srv/x/local", selinux.Regular, "u:r:local_t:s0"},
		{"/var/home/core/.bashrc", selinux.Regular, "u:r:home_t:s0"},
		{"/var/homer", selinux.Regular, "u:r:default_t:s0"},
		{"/aliased/ssh/x", selinux.Regular, "u:r:ssh_etc_t:s0"},
		{"//etc//ssh/", selinux.Directory, "u:r:ssh_etc_t:s0"},
	} {
		got, ok := c.Lookup(tc.path, tc.typ)
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("Lookup(%q, %q) = %q, want %q", tc.path, tc.typ, got, tc.want)
		}
	}
}

// TestLoadRefusesABadExpression: a spec that is no regular expression is
// an error of the load that names its file and line, although expressions
// are compiled only when a lookup reaches them.
func TestLoadRefusesABadExpression(t *testing.T) {
	const fc = "/fc"
	_, err := selinux.Load(files(map[string]string{
		fc:            "/etc(/.*)?\tu:r:etc_t:s0\n",
		fc + ".local": "# local\n/srv/(unclosed\tu:r:srv_t:s0\n",
	}), fc)
	if err == nil || !strings.Contains(err.Error(), fc+".local:2:") || !strings.Contains(err.Error(), "/srv/(unclosed") {
		t.Errorf("Load of a spec that does not compile: %v; want an error naming %s.local:2 and the spec", err, fc)
	}
}

// TestLookupConcurrent: lookups from many goroutines at once, as a check's
// workers make them, each the first to reach some expressions, agree with
// the same lookups made one at a time (run with -race).
func TestLookupConcurrent(t *testing.T) {
	m := map[string]string{"/fc": ""}
	var paths []string
	for i := range 200 {
		m["/fc"] += fmt.Sprintf("/srv/d%d(/.*)?\tu:r:d%d_t:s0\n", i, i)
		paths = append(paths, fmt.Sprintf("/srv/d%d/f", i))
	}
	load := func() *selinux.Contexts {
		c, err := selinux.Load(files(m), "/fc")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	serial, shared := load(), load()
	want := make([]string, len(paths))
	for i, p := range paths {
		want[i], _ = serial.Lookup(p, selinux.Regular)
	}
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range paths {
				c, _ := shared.Lookup(p, selinux.Regular)
				got[g] = append(got[g], c)
			}
		}()
	}
	wg.Wait()
	for g := range got {
		if !slices.Equal(got[g], want) {
			t.Fatalf("goroutine %d: %q, want %q", g, got[g], want)
		}
	}
}

// debianContexts is Debian's selinux-policy-default, policy type "default".
const debianContexts = "/etc/selinux/default/contexts/files/file_contexts"

var mpcTypes = map[selinux.FileType]string{selinux.Regular: "file", selinux.Directory: "dir", selinux.Symlink: "lnk_file",
	selinux.CharDev: "chr_file", selinux.BlockDev: "blk_file", selinux.Socket: "sock_file", selinux.FIFO: "pipe"} // matchpathcon reads the first letter

// TestMatchesMatchpathcon: the lookup equals libselinux's (Debian's
// matchpathcon over selinux-policy-default) on every node of a tree
// generated from the policy's own specs and on thousands of real paths.
func TestMatchesMatchpathcon(t *testing.T) {
	harness.RequireTools(t, "matchpathcon")
	if _, err := os.Stat(debianContexts); err != nil {
		harness.Unavailable(t, "%s: %v (apt-get install selinux-policy-default)", debianContexts, err)
	}
	c, err := selinux.Load(os.ReadFile, debianContexts)
	if err != nil {
		t.Fatal(err)
	}
	byType := map[selinux.FileType]map[string]bool{}
	add := func(p string, typ selinux.FileType) {
		if strings.ContainsAny(p, "\n\t") || p == "" {
			return
		}
		if byType[typ] == nil {
			byType[typ] = map[string]bool{}
		}
		byType[typ][p] = true
	}
	// The generated tree: every spec's literal prefix, and nodes below it
	// (a file, a directory and a link at each of three depths), as every type.
	data, err := os.ReadFile(debianContexts)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		prefix := f[0]
		if i := strings.IndexAny(prefix, `.^$?*+|[({\`); i >= 0 {
			prefix = prefix[:i]
		}
		prefix = strings.TrimSuffix(prefix, "/")
		if prefix == "" {
			prefix = "/"
		}
		for typ := range mpcTypes {
			add(prefix, typ)
		}
		for _, p := range []string{prefix + "/a", prefix + "/.hidden/b.conf", prefix + "-x"} {
			for _, typ := range []selinux.FileType{selinux.Regular, selinux.Directory, selinux.Symlink} {
				add(filepath.Clean(p), typ)
			}
		}
	}
	// Real paths: /etc and /boot whole, 1 in 50 of /var, /home, /opt,
	// /srv, /usr, /root and /run.
	n := 0
	for _, top := range []string{"/etc", "/var", "/boot", "/home", "/opt", "/srv", "/usr", "/root", "/run"} {
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			n++
			if top != "/etc" && top != "/boot" && n%50 != 0 {
				return nil
			}
			switch t := d.Type(); {
			case t.IsDir():
				add(p, selinux.Directory)
			case t&fs.ModeSymlink != 0:
				add(p, selinux.Symlink)
			case t.IsRegular():
				add(p, selinux.Regular)
			case t&fs.ModeNamedPipe != 0:
				add(p, selinux.FIFO)
			case t&fs.ModeSocket != 0:
				add(p, selinux.Socket)
			}
			return nil
		})
	}
	total, mismatches := 0, 0
	for typ, set := range byType {
		paths := make([]string, 0, len(set))
		for p := range set {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		want := matchpathcon(t, mpcTypes[typ], paths)
		for _, p := range paths {
			total++
			got, ok := c.Lookup(p, typ)
			if !ok {
				got = "<<none>>"
			}
			if w, found := want[p]; !found || got != w {
				mismatches++
				if mismatches <= 20 {
					t.Errorf("%s (%s): got %q, matchpathcon %q", p, mpcTypes[typ], got, w)
				}
			}
		}
	}
	t.Logf("%d paths (with their types), %d specs: %d mismatches", total, c.Specs, mismatches)
	if total < 5000 {
		t.Errorf("only %d paths compared", total)
	}
}

// matchpathcon asks libselinux for the contexts of paths, in batches.
func matchpathcon(t *testing.T, typ string, paths []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for len(paths) > 0 {
		batch := paths[:min(len(paths), 2000)]
		paths = paths[len(batch):]
		cmd := exec.Command("matchpathcon", append([]string{"-N", "-m", typ, "-f", debianContexts}, batch...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("matchpathcon: %v\n%s", err, stderr.String())
		}
		sc := bufio.NewScanner(&stdout)
		for sc.Scan() {
			p, ctx, ok := strings.Cut(sc.Text(), "\t")
			if !ok {
				t.Fatalf("matchpathcon printed %q", sc.Text())
			}
			out[p] = ctx
		}
		if len(out) == 0 {
			t.Fatal(fmt.Errorf("matchpathcon printed nothing: %s", stderr.String()))
		}
	}
	return out
}
