package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/cli"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// run runs one command line and returns its exit status and output.
func run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(ctx, args, cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// Markers of secret content: they must never appear in any output.
const (
	secretWant = "MARKER-WANT-SECRET"
	secretGot  = "MARKER-GOT-SECRET"
	keyWant    = "MARKER-WANT-KEY"
	keyGot     = "MARKER-GOT-KEY"
)

// machine is a small root that testdata/check/config.ign describes, drifted
// in one way per entry (see the comments), and the config's path.
func machine(t *testing.T) (root, config string) {
	t.Helper()
	root = t.TempDir()
	w := func(p, content string, mode uint32) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(p, target string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	w("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n", 0o644)
	w("/usr/lib/passwd", "core:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n", 0o644)
	w("/etc/etc-file", "hello\nworld\n", 0o644)              // content: want "there"
	w("/etc/clean.conf", "all good\n", 0o644)                // clean
	w("/etc/mode.conf", "mode\n", 0o664)                     // mode: want 0644
	w("/etc/secret.conf", "password="+secretGot+"\n", 0o600) // content of a secret
	w("/etc/remote.conf", "fetched at first boot\n", 0o644)  // unverifiable: a notice
	w("/etc/systemd/system/app.service", "[Service]\nExecStart=/usr/bin/app\n", 0o644)
	ln("/etc/systemd/system/debug-shell.service", "/dev/null") // masked as wanted
	ln("/etc/localtime", "/usr/share/zoneinfo/Europe/Berlin")  // target: want UTC
	w("/var/home/core/.ssh/authorized_keys.d/ignition", "ssh-ed25519 "+keyGot+" mallory\n", 0o600)
	if err := unix.Chown(filepath.Join(root, "/var/home/core/.ssh/authorized_keys.d/ignition"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	// /var/lib/app (a directory) is missing.
	config, err := filepath.Abs("testdata/check/config.ign")
	if err != nil {
		t.Fatal(err)
	}
	return root, config
}

func TestCheckText(t *testing.T) {
	harness.RequireRoot(t, "the fixture, which chowns a file,")
	root, config := machine(t)
	code, stdout, stderr := run(t, context.Background(), "check", "--root", root, "--config", config)
	if code != cli.ExitDrift {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, cli.ExitDrift, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr: %q", stderr)
	}
	golden(t, "testdata/check/text.golden", stdout)
	noSecrets(t, stdout)
	if strings.Contains(stdout, root) {
		t.Errorf("output names the --root directory %s:\n%s", root, stdout)
	}
}

func TestCheckJSON(t *testing.T) {
	harness.RequireRoot(t, "the fixture, which chowns a file,")
	root, config := machine(t)
	code, stdout, stderr := run(t, context.Background(), "check", "--root", root, "--config", config, "--format", "json")
	if code != cli.ExitDrift {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, cli.ExitDrift, stderr)
	}
	noSecrets(t, stdout)

	// The top-level shape, with no field left out.
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &top); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"root", "clean", "checked", "configs", "drift", "notices"} {
		if _, ok := top[k]; !ok {
			t.Errorf("no %q in the JSON report", k)
		}
	}
	var rep harness.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Root != root || rep.Clean || rep.Checked != 11 || !cmp.Equal(rep.Configs, []string{config}) {
		t.Errorf("root %q clean %v checked %d configs %q; want %q false 11 [%q]", rep.Root, rep.Clean, rep.Checked, rep.Configs, root, config)
	}
	type brief struct{ Kind, Entry, Path, Unit, User string }
	var got []brief
	for _, d := range rep.Drift {
		if d.Message == "" {
			t.Errorf("drift without a message: %+v", d)
		}
		if strings.HasPrefix(d.Path, root) || strings.Contains(d.Message, root) {
			t.Errorf("drift names the --root directory: %+v", d)
		}
		got = append(got, brief{d.Kind, d.Entry, d.Path, d.Unit, d.User})
	}
	want := []brief{
		{"content", "file", "/etc/etc-file", "", ""},
		{"target", "link", "/etc/localtime", "", ""},
		{"mode", "file", "/etc/mode.conf", "", ""},
		{"content", "file", "/etc/secret.conf", "", ""},
		{"content", "sshkeys", "/var/home/core/.ssh/authorized_keys.d/ignition", "", "core"},
		{"missing", "directory", "/var/lib/app", "", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	if d := rep.Drift[0]; !strings.HasPrefix(d.Diff, "--- /etc/etc-file (want)\n+++ /etc/etc-file (got)\n") {
		t.Errorf("no diff for a world-readable file: %+v", d)
	}
	for _, d := range rep.Drift[1:] {
		if d.Diff != "" { // a secret, a link, a mode, a directory
			t.Errorf("diff for %s: %q", d.Path, d.Diff)
		}
	}
	if len(rep.Notices) != 1 || rep.Notices[0].Kind != "unverifiable" || rep.Notices[0].Path != "/etc/remote.conf" {
		t.Errorf("notices = %+v, want one unverifiable /etc/remote.conf", rep.Notices)
	}
}

func TestCheckClean(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/drift-monitor/desired.d")
	if err := os.MkdirAll(filepath.Join(root, "etc/ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "10-sshd.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.3.0"},"storage":{"directories":[{"path":"/etc/ssh","mode":493}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "etc/ssh"), 0o755); err != nil {
		t.Fatal(err)
	}

	// No --config: the default locations, inside the root.
	code, stdout, stderr := run(t, context.Background(), "check", "--root", root)
	if code != cli.ExitClean || stdout != "No drift: 1 entry matches 1 config file.\n" || stderr != "" {
		t.Errorf("check = %d, %q, %q; want 0 and a one-line summary", code, stdout, stderr)
	}
	code, stdout, _ = run(t, context.Background(), "check", "--root", root, "--format", "json")
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	// configs are the host's paths, as every path in the report.
	want := map[string]any{"root": root, "clean": true, "checked": float64(1), "configs": []any{"/etc/drift-monitor/desired.d/10-sshd.ign"}, "drift": []any{}, "notices": []any{}, "left_alone": []any{}}
	if diff := cmp.Diff(want, rep); code != cli.ExitClean || diff != "" {
		t.Errorf("check --format json = %d (-want +got):\n%s", code, diff)
	}

	t.Run("no configuration at all", func(t *testing.T) {
		// Nothing declared is not clean: the check could not be done.
		empty := t.TempDir()
		code, stdout, stderr := run(t, context.Background(), "check", "--root", empty)
		want := "drift-monitor check: no desired configuration: no config file in " +
			empty + "/usr/lib/drift-monitor/desired.d or " + empty + "/etc/drift-monitor/desired.d: nothing to check\n"
		if code != cli.ExitFailed || stdout != "" || stderr != want {
			t.Errorf("check = %d, %q, %q; want 2, nothing on stdout and %q", code, stdout, stderr, want)
		}
		dir := t.TempDir()
		code, _, stderr = run(t, context.Background(), "check", "--root", empty, "--config", dir, "--format", "json")
		if code != cli.ExitFailed || !strings.Contains(stderr, "no config file in "+dir+": nothing to check") {
			t.Errorf("check --config EMPTY-DIR = %d, %q; want 2 naming the directory", code, stderr)
		}
	})

	t.Run("files not loaded are named", func(t *testing.T) {
		d := filepath.Join(root, "etc/drift-monitor/desired.d")
		for _, n := range []string{"20-extra.ign~", ".10-sshd.ign.swp", "notes.txt", "README"} {
			if err := os.WriteFile(filepath.Join(d, n), []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/opt/file"}]}}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(d, "old"), 0o700); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := run(t, context.Background(), "check", "--root", root)
		if code != cli.ExitClean || stdout != "No drift: 1 entry matches 1 config file.\n" {
			t.Errorf("check = %d, %q; want 0: the files not loaded declare nothing", code, stdout)
		}
		for _, n := range []string{"20-extra.ign~", ".10-sshd.ign.swp", "notes.txt", "README", "old"} {
			line := "drift-monitor check: warning: " + filepath.Join(d, n) + ": not loaded: "
			if !strings.Contains(stderr, line) {
				t.Errorf("stderr does not name %s (%q):\n%s", n, line, stderr)
			}
		}
		for _, hint := range []string{"a backup", "a hidden file", `extension ".txt"`, "no extension", "not read recursively", "only *.ign, *.json, *.yaml, *.yml, *.bu are loaded"} {
			if !strings.Contains(stderr, hint) {
				t.Errorf("stderr lacks %q:\n%s", hint, stderr)
			}
		}
	})
}

func TestCheckFailures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.ign", `{"ignition":{"version":"3.4.0"}}`)
	badJSON := write("bad.ign", "{\"ignition\": {\"version\": \"3.4.0\"},\n}")
	badVersion := write("exp.ign", `{"ignition":{"version":"3.6.0-experimental"}}`)
	badYAML := write("mc.yaml", "kind: MachineConfig\nspec:\n  config:\n    ignition: {version: 3.2.0}\n    storage: {files: [{path: relative}]}\n")
	escape := write("esc\x1b[2J.ign", `{`)
	conflictA := write("10-a.ign", `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/x"}]}}`)
	conflictB := write("20-b.ign", `{"ignition":{"version":"3.4.0"},"storage":{"directories":[{"path":"/x"}]}}`)
	aFile := write("plain-file", "")
	missing := filepath.Join(dir, "missing.ign")

	tests := []struct {
		name   string
		args   []string
		stderr []string
	}{
		{"no command", nil, []string{"usage:"}},
		{"unknown command", []string{"chekc"}, []string{`unknown command "chekc"`, "usage:"}},
		{"unknown flag", []string{"check", "--bogus"}, []string{"flag provided but not defined: -bogus"}},
		{"bad format", []string{"check", "--config", good, "--format", "xml"}, []string{"must be text or json"}},
		{"extra argument", []string{"check", "--config", good, "extra"}, []string{`unexpected argument "extra"`}},
		{"missing root", []string{"check", "--root", filepath.Join(dir, "nope"), "--config", good}, []string{"root:", filepath.Join(dir, "nope")}},
		{"root is a file", []string{"check", "--root", aFile, "--config", good}, []string{aFile, "not a directory"}},
		{"missing config", []string{"check", "--root", dir, "--config", missing}, []string{missing + ": no such file or directory"}},
		{"unparsable config", []string{"check", "--root", dir, "--config", badJSON}, []string{badJSON + ":2:1: ", "invalid character '}'"}},
		{"unsupported spec", []string{"check", "--root", dir, "--config", badVersion}, []string{badVersion + ": ", `"3.6.0-experimental"`}},
		{"bad MachineConfig", []string{"check", "--root", dir, "--config", badYAML}, []string{badYAML + ": spec.config.storage.files.0.path: path not absolute"}},
		{"fragments conflict", []string{"check", "--root", dir, "--config", conflictA, "--config", conflictB}, []string{conflictB + ": ", conflictA}},
		{"control characters in a file name", []string{"check", "--root", dir, "--config", escape}, []string{`esc\x1b[2J.ign`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, context.Background(), tt.args...)
			if code != cli.ExitFailed {
				t.Errorf("exit status %d, want %d", code, cli.ExitFailed)
			}
			if stdout != "" {
				t.Errorf("stdout: %q", stdout)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
			if strings.ContainsRune(stderr, 0x1b) {
				t.Errorf("stderr holds a raw escape character: %q", stderr)
			}
		})
	}

	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		code, stdout, stderr := run(t, ctx, "check", "--root", dir, "--config", good)
		if code != cli.ExitFailed || stdout != "" || !strings.Contains(stderr, "interrupted") {
			t.Errorf("check with a canceled context = %d, %q, %q; want 2 and a message", code, stdout, stderr)
		}
	})
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, stdout, _ := run(t, context.Background(), args...)
		if code != 0 || !strings.Contains(stdout, "drift-monitor check") {
			t.Errorf("%q = %d, %q", args, code, stdout)
		}
	}
	code, _, stderr := run(t, context.Background(), "check", "--help")
	if code != 0 || !strings.Contains(stderr, "usage: drift-monitor check") || !strings.Contains(stderr, "-root") {
		t.Errorf("check --help = %d, %q", code, stderr)
	}
	for _, want := range []string{"spec 3.0.0 to 3.6.0", "Ignition 2.27.0", "spec 3.7.0-experimental", ".ignition-cache.json", "drift-monitor adopt"} {
		if !strings.Contains(strings.Join(strings.Fields(stderr), " "), want) {
			t.Errorf("check --help lacks %q: %s", want, stderr)
		}
	}
	code, stdout, _ := run(t, context.Background(), "version")
	if code != 0 || !strings.HasPrefix(stdout, "drift-monitor ") {
		t.Errorf("version = %d, %q", code, stdout)
	}
}

// TestCheckEscapes: a declared path with control characters never reaches
// the terminal raw.
func TestCheckEscapes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "esc.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/\u001b[2Jevil\nline","contents":{"source":"data:,x"}}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json"} {
		code, stdout, stderr := run(t, context.Background(), "check", "--root", dir, "--config", cfg, "--format", format)
		if code != cli.ExitDrift {
			t.Errorf("%s: exit status %d; stderr %q", format, code, stderr)
		}
		if strings.ContainsRune(stdout, 0x1b) {
			t.Errorf("%s output holds a raw escape character: %q", format, stdout)
		}
		if format == "text" && strings.Count(stdout, "\n") != 2 {
			t.Errorf("text output has a line break from the path: %q", stdout)
		}
	}
}

// noSecrets asserts that out holds neither secret content nor a plain
// digest of it (SHA-256 or SHA-512, which the size and a dictionary turn
// back into the secret).
func noSecrets(t *testing.T, out string) {
	t.Helper()
	for _, m := range []string{secretWant, secretGot, keyWant, keyGot} {
		if strings.Contains(out, m) {
			t.Errorf("output holds secret content %q:\n%s", m, out)
		}
	}
	for _, c := range []string{"password=" + secretWant + "\n", "password=" + secretGot + "\n",
		"ssh-ed25519 " + keyWant + " core@example\n", "ssh-ed25519 " + keyGot + " mallory\n"} {
		a, b := sha256.Sum256([]byte(c)), sha512.Sum512([]byte(c))
		if d, ok := contains(out, hex.EncodeToString(a[:]), hex.EncodeToString(b[:])); ok {
			t.Errorf("output holds a plain digest %s of the secret %q:\n%s", d, c, out)
		}
	}
}

// TestCheckWithoutDigestKey: where the key cannot be had (here, a state
// directory where nothing can be made), secret contents get their sizes
// only, with a warning; the verdict is the same.
func TestCheckWithoutDigestKey(t *testing.T) {
	harness.RequireRoot(t, "the fixture, which chowns a file,")
	t.Setenv("STATE_DIRECTORY", "/proc/self/drift-monitor")
	root, config := machine(t)
	code, stdout, stderr := run(t, context.Background(), "check", "--root", root, "--config", config)
	if code != cli.ExitDrift {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, cli.ExitDrift, stderr)
	}
	if !strings.HasPrefix(stderr, "drift-monitor check: warning: ") || !strings.Contains(stderr, "/proc/self/drift-monitor") ||
		!strings.HasSuffix(stderr, ": secret contents get no digests\n") {
		t.Errorf("stderr = %q, want one warning naming the key's directory", stderr)
	}
	noSecrets(t, stdout)
	for _, want := range []string{
		"content mismatch for file \"/etc/secret.conf\"\n  want: 28 bytes\n  got:  27 bytes\n",
		"  want: 41 bytes\n  got:  35 bytes\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output has no %q:\n%s", want, stdout)
		}
	}
	if d, ok := contains(stdout, "hmac-sha256:"); ok {
		t.Errorf("output holds %s without a key:\n%s", d, stdout)
	}
}

// golden compares got with a file in testdata, or rewrites it with -update.
func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", file, diff)
	}
}

// Ignition's warnings (an unused key is usually a typo) reach the admin on
// stderr, with the file and the place, without changing the verdict.
func TestCheckPrintsConfigWarnings(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "typo.ign")
	os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.3.0"},"storage":{"directories":[{"path":"/","mdoe":493}]}}`), 0o644)
	code, _, stderr := run(t, context.Background(), "check", "--root", root, "--config", cfg)
	want := "drift-monitor check: warning: " + cfg + ": warning at $.storage.directories.0.mdoe, line 1 col 71: unused key mdoe\n"
	if stderr != want {
		t.Errorf("stderr = %q, want %q", stderr, want)
	}
	if code == cli.ExitFailed {
		t.Errorf("a warning made the check fail (exit %d)", code)
	}
}

// contains reports whether out holds any of subs, and which.
func contains(out string, subs ...string) (string, bool) {
	for _, s := range subs {
		if strings.Contains(out, s) {
			return s, true
		}
	}
	return "", false
}

// TestCheckParentSwappedForSymlink: a declared file's directory replaced by
// a symlink into a directory only root may enter is a type drift of that
// directory, and no output shows (or digests) what is behind the link.
func TestCheckParentSwappedForSymlink(t *testing.T) {
	const marker = "MARKER-BEHIND-THE-LINK"
	root := t.TempDir()
	for p, mode := range map[string]os.FileMode{"etc/bar": 0o755, "root/private": 0o700} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "root/private/file"), []byte(marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/root/private", filepath.Join(root, "etc/bar/sub")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "swap.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/bar/sub/file","mode":420,"contents":{"source":"data:,public%0A"}}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(marker + "\n"))
	for _, format := range []string{"text", "json"} {
		code, stdout, stderr := run(t, context.Background(), "check", "--root", root, "--config", cfg, "--format", format)
		if code != cli.ExitDrift {
			t.Errorf("%s: exit status %d, want %d; stderr:\n%s", format, code, cli.ExitDrift, stderr)
		}
		if s, ok := contains(stdout+stderr, marker, hex.EncodeToString(sum[:])); ok {
			t.Errorf("%s: output holds %s, what is behind the link:\n%s", format, s, stdout)
		}
		want := `type mismatch for file "/etc/bar/sub/file": "/etc/bar/sub": want directory, got symbolic link to "/root/private"`
		if format == "json" {
			want = `"kind": "type"`
		}
		if !strings.Contains(stdout, want) {
			t.Errorf("%s: output has no %q:\n%s", format, want, stdout)
		}
	}
}

// TestCheckExclusions: check reads the exclusion file the daemon reads,
// inside the root: a declared file that another component rewrites, listed
// there, is clean and listed as left alone; a bad file is exit 2 naming the
// file and line; --exclude-from "" reads none.
func TestCheckExclusions(t *testing.T) {
	root := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("/etc/drift-monitor/desired.d/50-a.ign", `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/a.conf","mode":420,"contents":{"source":"data:,declared%0A"}},
 {"path":"/etc/b.conf","mode":420,"contents":{"source":"data:,declared%0A"}}]}}`)
	write("/etc/a.conf", "rewritten by its operator\n")
	write("/etc/b.conf", "declared\n")
	os.Chmod(filepath.Join(root, "etc/b.conf"), 0o600)
	write("/etc/drift-monitor/exclude.conf", "# rotated by the operator\n/etc/a.conf\nmode:/etc/b.conf\n")

	code, stdout, stderr := run(t, context.Background(), "check", "--root", root)
	if code != cli.ExitClean || stdout != "No drift: 1 entry matches 1 config file; 1 declared entry left alone (excluded).\n" || stderr != "" {
		t.Errorf("check = %d, %q, %q; want 0, the excluded file and mode left alone", code, stdout, stderr)
	}
	code, stdout, _ = run(t, context.Background(), "check", "--root", root, "--format", "json")
	var rep struct {
		Clean     bool             `json:"clean"`
		LeftAlone []map[string]any `json:"left_alone"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"entry": "file", "path": "/etc/a.conf", "excluded_by": "/etc/a.conf (/etc/drift-monitor/exclude.conf:2)"}}
	if diff := cmp.Diff(want, rep.LeftAlone); code != cli.ExitClean || !rep.Clean || diff != "" {
		t.Errorf("check --format json = %d, clean %v, left alone (-want +got):\n%s", code, rep.Clean, diff)
	}

	code, stdout, _ = run(t, context.Background(), "check", "--root", root, "--exclude-from", "")
	if code != cli.ExitDrift || !strings.Contains(stdout, `"/etc/a.conf"`) || !strings.Contains(stdout, `mode mismatch for file "/etc/b.conf"`) {
		t.Errorf(`check --exclude-from "" = %d, want 1 and both files' drift:\n%s`, code, stdout)
	}
	code, _, _ = run(t, context.Background(), "check", "--root", root, "--exclude-from", "", "--exclude", "/etc/a.conf", "--exclude", "mode:/etc/b.conf")
	if code != cli.ExitClean {
		t.Errorf("check with the same patterns as flags = %d, want 0", code)
	}

	write("/etc/drift-monitor/exclude.conf", "/etc/a.conf\netc/b.conf\n")
	code, stdout, stderr = run(t, context.Background(), "check", "--root", root)
	if code != cli.ExitFailed || stdout != "" || stderr != "drift-monitor check: /etc/drift-monitor/exclude.conf:2: pattern \"etc/b.conf\" is not an absolute path\n" {
		t.Errorf("a bad exclude.conf: check = %d, %q, %q; want 2 naming the file and line", code, stdout, stderr)
	}
	code, _, stderr = run(t, context.Background(), "check", "--root", root, "--exclude-from", "/etc/nosuch.conf")
	if code != cli.ExitFailed || !strings.Contains(stderr, "reading /etc/nosuch.conf: no such file or directory") {
		t.Errorf("a missing --exclude-from: check = %d, %q; want 2 naming it", code, stderr)
	}
}
