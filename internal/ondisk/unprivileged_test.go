package ondisk_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"golang.org/x/sys/unix"
)

// The unprivileged tests run this test binary again as nobody: permission
// checks cannot be provoked as root (CAP_DAC_OVERRIDE), and a process cannot
// drop privileges for one goroutine. helperEnv names the fixture root the
// child observes.
const helperEnv = "DRIFT_MONITOR_ONDISK_HELPER_ROOT"

// helperResult is what the child reports for each path.
type helperResult struct {
	Type         string
	Err          string
	ContentState ondisk.ContentState
	ContentErr   string
}

// TestHelperObserveUnprivileged is the child's side; it does nothing in a
// normal run.
func TestHelperObserveUnprivileged(t *testing.T) {
	root := os.Getenv(helperEnv)
	if root == "" {
		return
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	o := ondisk.NewObserver(r)
	out := map[string]helperResult{}
	for _, p := range []string{"/etc/secret", "/locked/file", "/etc/readable"} {
		e := model.Entry{Kind: model.KindFile, Path: p, Type: model.TypeRegular,
			Content: &model.Content{Exact: []byte("wanted")}}
		ob := o.Observe(&e)
		res := helperResult{Type: ob.Type.String(), ContentState: ob.Content.State}
		if ob.Err != nil {
			res.Err = ob.Err.Error()
		}
		if ob.Content.Err != nil {
			res.ContentErr = ob.Content.Err.Error()
		}
		out[p] = res
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		t.Fatal(err)
	}
}

// TestObserveUnprivileged: a file the observer may not read is a ReadFailed
// content, and a directory it may not search makes the observation's Err —
// never "missing", never "equal".
func TestObserveUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as nobody")
	}
	const nobody = 65534
	// The child needs a copy of this binary and a root it can reach: temp
	// directories are 0700.
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "ondisk.test")
	copyFile(t, self, exe)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t)
	// t.TempDir's directories (the root and their common parent) are this
	// test's own to open up; anything above must already be searchable.
	testDir := filepath.Dir(f.root)
	for _, d := range []string{testDir, f.root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for dir := filepath.Dir(testDir); ; dir = filepath.Dir(dir) {
		if st, err := os.Stat(dir); err != nil || st.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by others: the child could not reach the fixture", dir)
		}
		if dir == "/" {
			break
		}
	}
	f.file("/etc/secret", "wanted", 0o600) // same size: a read is needed
	f.file("/etc/readable", "wanted", 0o644)
	f.file("/locked/file", "wanted", 0o644)
	f.mkdir("/locked", 0o700)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestHelperObserveUnprivileged$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+f.root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, stdout, stderr.String())
	}
	// The test binary prints PASS after the helper's JSON line.
	line, _, _ := strings.Cut(string(stdout), "\n")
	var got map[string]helperResult
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("child output %q: %v", stdout, err)
	}
	eacces := unix.EACCES.Error()
	if r := got["/etc/secret"]; r.Type != "regular file" || r.Err != "" || r.ContentState != ondisk.ReadFailed || r.ContentErr != eacces {
		t.Errorf("unreadable file: %+v, want a regular file whose content is ReadFailed (%s)", r, eacces)
	}
	if r := got["/locked/file"]; r.Err != eacces || r.Type != "nothing" {
		t.Errorf("file in an unsearchable directory: %+v, want Err %s", r, eacces)
	}
	if r := got["/etc/readable"]; r.Err != "" || r.ContentState != ondisk.Equal {
		t.Errorf("readable file: %+v, want Equal", r)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
