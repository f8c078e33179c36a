package exclude

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
)

func openRoot(t *testing.T, dir string) *ondisk.Root {
	t.Helper()
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoad: the flags' patterns first, then the file's, read inside the
// root; a missing default file is empty, every other file that cannot be
// read an error naming it as the host's path.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	flagged, err := ParsePattern("/srv", "--exclude")
	if err != nil {
		t.Fatal(err)
	}

	r, err := Options{Patterns: []Pattern{flagged}, File: DefaultFile}.Load(root)
	if err != nil {
		t.Fatalf("a missing default file: %v", err)
	}
	if diff := cmp.Diff([]Pattern{flagged}, r.Patterns()); diff != "" {
		t.Errorf("without the file (-want +got):\n%s", diff)
	}

	writeFile(t, filepath.Join(dir, DefaultFile), "/etc/a.conf\n")
	r, err = Options{Patterns: []Pattern{flagged}, File: DefaultFile}.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pattern{flagged, {Glob: "/etc/a.conf", From: DefaultFile + ":1"}}
	if diff := cmp.Diff(want, r.Patterns()); diff != "" {
		t.Errorf("with the file (-want +got):\n%s", diff)
	}
	if r, err := (Options{File: ""}).Load(root); err != nil || !r.Empty() {
		t.Errorf(`--exclude-from "": %v, %v; want no file read`, r.Patterns(), err)
	}

	for _, c := range []struct {
		name, file, want string
		setup            func(string)
	}{
		{"named and missing", "/etc/mine.conf", "reading /etc/mine.conf: no such file or directory", nil},
		{"a directory", "/etc/dir.conf", "reading /etc/dir.conf: not a regular file",
			func(p string) { os.MkdirAll(p, 0o755) }},
		{"a FIFO", "/etc/fifo.conf", "reading /etc/fifo.conf: not a regular file",
			func(p string) { syscall.Mkfifo(p, 0o644) }},
		{"too large", "/etc/big.conf", "/etc/big.conf: larger than 1048576 bytes: not a list of patterns",
			func(p string) { writeFile(t, p, strings.Repeat("/etc/x\n", MaxFileSize/7+1)) }},
		{"too many wildcards", "/etc/wild.conf", fmt.Sprintf("/etc/wild.conf:%d: more than %d patterns with a wildcard or a kind: list paths, or a directory above them", MaxWildcards+2, MaxWildcards),
			func(p string) {
				writeFile(t, p, "/plain/path\n"+strings.Repeat("label:/etc/x\n", MaxWildcards/2)+strings.Repeat("/etc/*.conf\n", MaxWildcards/2+1))
			}},
		{"a bad line", "/etc/bad.conf", "/etc/bad.conf:2: pattern \"etc/x\" is not an absolute path",
			func(p string) { writeFile(t, p, "/etc/ok\netc/x\n") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(filepath.Join(dir, c.file))
			}
			_, err := Options{File: c.file}.Load(root)
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), dir) {
				t.Errorf("the error names the root's directory: %v", err)
			}
		})
	}
}

// TestUnreadableIsAnError: a file the reader may not read is an error, not
// an empty rulebook (what the daemon's reader cannot see is not "nothing
// excluded").
func TestUnreadableIsAnError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode-000 file: the directory case above stands for it")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, DefaultFile), "/etc/a\n")
	os.Chmod(filepath.Join(dir, DefaultFile), 0)
	_, err := DefaultOptions().Load(openRoot(t, dir))
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("an unreadable default file: %v, want permission denied", err)
	}
}

// TestOthersMayWrite: the exclusion file (the default one, or one
// --exclude-from names), that a user other than root could have written —
// itself, its directory or one above — is refused, naming it as the host's
// path, the node, its mode and its owner: what it leaves alone no command
// reports.
func TestOthersMayWrite(t *testing.T) {
	for _, tc := range []struct {
		name, file, chmod string
		mode              os.FileMode
		want              string
	}{
		{"the default file, world-writable", DefaultFile, DefaultFile, 0o666, DefaultFile + ": mode 0666, owned by uid %d: writable by every user"},
		{"its directory, world-writable", DefaultFile, "/etc/drift-monitor", 0o777, DefaultFile + ": through directory /etc/drift-monitor: mode 0777, owned by uid %d"},
		{"a file named, a directory above it world-writable", "/srv/x/excl.conf", "/srv", 0o777, "/srv/x/excl.conf: through directory /srv: mode 0777, owned by uid %d"},
		{"a file named, in a sticky directory", "/srv/x/excl.conf", "/srv/x", 0o777 | os.ModeSticky, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.Chmod(dir, 0o755)
			writeFile(t, filepath.Join(dir, tc.file), "/etc/a\n")
			if err := os.Chmod(filepath.Join(dir, tc.chmod), tc.mode); err != nil {
				t.Fatal(err)
			}
			_, err := Options{File: tc.file}.Load(openRoot(t, dir))
			want := tc.want
			if want != "" {
				want = fmt.Sprintf(want, os.Geteuid())
			}
			switch {
			case want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "a user other than root could have written it")):
				t.Errorf("%v; want an error starting %q", err, want)
			}
		})
	}
}

// TestFileReadInsideTheRoot: with the root's /etc an absolute link, a
// lexical join would read the running host's file at the link's target;
// the file is resolved inside the root.
func TestFileReadInsideTheRoot(t *testing.T) {
	hostSide, dir := t.TempDir(), t.TempDir()
	target := filepath.Join(hostSide, "etc")
	writeFile(t, filepath.Join(target, "drift-monitor/exclude.conf"), "/host/*\n")
	writeFile(t, filepath.Join(dir, target, "drift-monitor/exclude.conf"), "/in-root/*\n")
	if err := os.Symlink(target, filepath.Join(dir, "etc")); err != nil {
		t.Fatal(err)
	}
	r, err := DefaultOptions().Load(openRoot(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Patterns(); len(got) != 1 || got[0].Glob != "/in-root/*" {
		t.Errorf("patterns %v, want the root's /in-root/*", got)
	}
}

// TestFlags: the two flags every command declares; a pattern or a file
// that could never be used is refused as the flag is parsed.
func TestFlags(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		o := DefaultOptions()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Register(fs)
		return o, fs.Parse(args)
	}
	o, err := parse("--exclude", "/etc/a/", "--exclude", "label:/srv/*", "--exclude-from", "/etc/x//y.conf")
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Patterns: []Pattern{{Glob: "/etc/a", From: "--exclude"}, {Kind: "label", Glob: "/srv/*", From: "--exclude"}}, File: "/etc/x/y.conf"}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if o, err := parse(); err != nil || o.File != DefaultFile {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	if o, err := parse("--exclude-from="); err != nil || o.File != "" {
		t.Errorf(`--exclude-from="": %+v, %v`, o, err)
	}
	for args, want := range map[string]string{
		"--exclude etc/a":          `invalid value "etc/a" for flag -exclude: pattern "etc/a" is not an absolute path`,
		"--exclude nokind:/x":      `"nokind" is not a kind of drift`,
		"--exclude-from x.conf":    `invalid value "x.conf" for flag -exclude-from: "x.conf" is not an absolute path`,
		"--exclude /[":             "syntax error in pattern",
		"--exclude /etc --exclude": "flag needs an argument",
	} {
		if _, err := parse(strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", args, err, want)
		}
	}
	// The default is shown in --help.
	var help bytes.Buffer
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(&help)
	o2 := DefaultOptions()
	o2.Register(fs)
	fs.PrintDefaults()
	if !strings.Contains(help.String(), "(default "+DefaultFile+")") || !strings.Contains(help.String(), "-exclude PATTERN") {
		t.Errorf("--help:\n%s", help.String())
	}
}
