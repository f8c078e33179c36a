package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProc makes a procfs-like tree: each process of procs by PID (or
// "self") with its network namespace link and, when given, its stat line.
func fakeProc(t *testing.T, procs map[string][2]string) string {
	t.Helper()
	dir := t.TempDir()
	for pid, p := range procs {
		if err := os.MkdirAll(filepath.Join(dir, pid, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if p[0] != "" {
			if err := os.Symlink(p[0], filepath.Join(dir, pid, "ns", "net")); err != nil {
				t.Fatal(err)
			}
		}
		if p[1] != "" {
			if err := os.WriteFile(filepath.Join(dir, pid, "stat"), []byte(p[1]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestInitialNetNS(t *testing.T) {
	const kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 1 0 0 20 0 1 0 24\n"
	for _, tc := range []struct {
		name  string
		procs map[string][2]string
		want  bool
		how   string
	}{
		{"kthreadd's", map[string][2]string{"self": {"net:[1]", ""}, "2": {"net:[1]", kthreadd}}, true, "kthreadd's"},
		{"not kthreadd's", map[string][2]string{"self": {"net:[7]", ""}, "2": {"net:[1]", kthreadd}, "1": {"net:[7]", ""}}, false, "not the kernel's net:[1]"},
		{"pid 2 is no kernel thread", map[string][2]string{
			"self": {"net:[7]", ""}, "2": {"net:[1]", "2 (kthreadd) S 1 1 1 0 -1 4194560 0\n"}, "1": {"net:[7]", ""}}, true, "PID 1's"},
		{"pid 2 is named otherwise", map[string][2]string{
			"self": {"net:[7]", ""}, "2": {"net:[1]", "2 (sh) S 0 0 0 0 -1 2129984 0\n"}, "1": {"net:[7]", ""}}, true, "PID 1's"},
		{"a name with a parenthesis", map[string][2]string{
			"self": {"net:[7]", ""}, "2": {"net:[1]", "2 (kthreadd) S 0) S 0 0 0 0 -1 2129984 0\n"}, "1": {"net:[7]", ""}}, true, "PID 1's"},
		{"not pid 1's", map[string][2]string{"self": {"net:[7]", ""}, "1": {"net:[1]", ""}}, false, "not even PID 1's net:[1]"},
		{"kthreadd's unreadable", map[string][2]string{"self": {"net:[7]", ""}, "2": {"", kthreadd}, "1": {"net:[1]", ""}}, false, "not even PID 1's"},
		{"nothing to compare with", map[string][2]string{"self": {"net:[7]", ""}}, true, "cannot tell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, how := initialNetNS(fakeProc(t, tc.procs))
			if ok != tc.want || !strings.Contains(how, tc.how) {
				t.Errorf("initialNetNS = %v, %q; want %v, with %q", ok, how, tc.want, tc.how)
			}
		})
	}
}

// netnsChildEnv makes the test binary print what initialNetNS says of its
// own process and exit.
const netnsChildEnv = "DM_HARNESS_NETNS_CHILD"

// TestInitialNetNSUnshared holds initialNetNS to the kernel: the test
// binary run again by unshare(1) in a network namespace of its own is
// told it is not in the initial one, as %check under `make rpm` is.
func TestInitialNetNSUnshared(t *testing.T) {
	if os.Getenv(netnsChildEnv) != "" {
		ok, how := initialNetNS("/proc")
		os.Stdout.WriteString(map[bool]string{true: "initial: ", false: "other: "}[ok] + how + "\n")
		return
	}
	RequireRoot(t, "unshare --net")
	RequireTools(t, "unshare")
	here, how := initialNetNS("/proc")
	if !here {
		Unavailable(t, "the tests already run outside of the initial network namespace (%s)", how)
	}
	cmd := exec.Command("unshare", "--net", os.Args[0], "-test.run", "^TestInitialNetNSUnshared$")
	cmd.Env = append(os.Environ(), netnsChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unshare --net %s: %v\n%s", os.Args[0], err, out)
	}
	if !strings.Contains(string(out), "other: ") {
		t.Errorf("in a new network namespace, initialNetNS says:\n%s", out)
	}
}
