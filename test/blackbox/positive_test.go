package blackbox

import (
	"os"
	"testing"
	"time"
)

// Positive cases: a file rewritten with its declared content by the usual
// writers is no drift: the daemon checks when the write completes.
func init() {
	for _, w := range []struct {
		name  string
		write func(t *testing.T, f *fixture)
	}{
		// One redirection: one open that truncates, two writes, one close.
		{"shell redirection", func(t *testing.T, f *fixture) {
			f.run("sh", "-c", `{ printf 'hello '; printf 'world\n'; } > "$1"`, "sh", f.host("/etc/etc-file"))
		}},
		{"cp", func(t *testing.T, f *fixture) {
			good := f.host("/good")
			f.write("/good", "hello world\n", 0o644)
			f.run("cp", good, f.host("/etc/etc-file"))
		}},
		{"editor: write a temporary file, rename it into place", func(t *testing.T, f *fixture) {
			f.write("/etc/.etc-file.swp", "hello world\n", 0o644)
			if err := os.Rename(f.host("/etc/.etc-file.swp"), f.host("/etc/etc-file")); err != nil {
				t.Fatal(err)
			}
		}},
		{"editor: truncate and write in place (backupcopy=yes)", func(t *testing.T, f *fixture) {
			fh, err := os.OpenFile(f.host("/etc/etc-file"), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString("hello world\n")
			fh.Close()
		}},
		{"a writer that pauses a second between chunks", func(t *testing.T, f *fixture) {
			fh, err := os.OpenFile(f.host("/etc/etc-file"), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString("hello ")
			time.Sleep(time.Second) // the writer's behaviour under test, not a synchronisation
			fh.WriteString("world\n")
			fh.Close()
		}},
	} {
		register(positive, blackboxCase{
			name:   "writes in progress: " + w.name,
			config: twoFiles,
			in:     twoFilesRoot,
			args:   []string{"--settle", "2s"},
			status: "No drift: watching 3 paths, 0 units",
			steps:  []step{{do: w.write, noDriftOn: "/etc/etc-file"}},
		})
	}
}
