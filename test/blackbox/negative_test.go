package blackbox

import (
	"os"
	"strings"
	"testing"
)

// Negative cases: the root drifts, and each drift is reported as it comes
// (and once), and resolved when it goes.
func init() {
	register(negative, blackboxCase{
		name:   "five writes of wrong content are one drift",
		config: twoFiles,
		in:     twoFilesRoot,
		steps: []step{{
			do: func(t *testing.T, f *fixture) {
				for i := range 5 {
					f.write("/etc/etc-file", "wrong "+strings.Repeat("x", i)+"\n", 0o644)
				}
			},
			want:      []want{detected("/etc/etc-file", "")},
			noDriftOn: "/etc/etc-file",
		}},
	})

	// A declared directory deleted, re-created, then drifted again: the
	// watch came back with it.
	register(negative, blackboxCase{
		name: "directory deleted, re-created, drifts again",
		config: `{"ignition":{"version":"3.2.0"},"storage":{
	 "directories":[{"path":"/etc/app","mode":493}],
	 "files":[{"path":"/etc/app/conf.d/a.conf","mode":420,"contents":{"source":"data:,a%0A"}}]}}`,
		in: []node{
			{path: "/etc/app", mode: 0o755, dir: true},
			{path: "/etc/app/conf.d/a.conf", content: "a\n", mode: 0o644},
		},
		status: "No drift: watching 2 paths, 0 units",
		steps: []step{
			{
				do:   func(t *testing.T, f *fixture) { os.RemoveAll(f.host("/etc/app")) },
				want: []want{detected("/etc/app", "missing"), detected("/etc/app/conf.d/a.conf", "missing")},
			},
			{
				do: func(t *testing.T, f *fixture) {
					os.MkdirAll(f.host("/etc/app/conf.d"), 0o755)
					os.WriteFile(f.host("/etc/app/conf.d/a.conf"), []byte("a\n"), 0o644)
				},
				want:   []want{resolved("/etc/app", ""), resolved("/etc/app/conf.d/a.conf", "")},
				status: "No drift: watching 2 paths, 0 units",
			},
			{
				do:   func(t *testing.T, f *fixture) { os.WriteFile(f.host("/etc/app/conf.d/a.conf"), []byte("b\n"), 0o644) },
				want: []want{detected("/etc/app/conf.d/a.conf", "content")},
			},
		},
	})

	register(negative, blackboxCase{
		name:   "file turned into a directory, then a link",
		config: twoFiles,
		in:     twoFilesRoot,
		steps: []step{
			{
				do: func(t *testing.T, f *fixture) {
					os.Remove(f.host("/etc/etc-file"))
					os.Mkdir(f.host("/etc/etc-file"), 0o755)
				},
				want: []want{detected("/etc/etc-file", "type")},
			},
			{
				// The daemon may see the directory gone before the link
				// appears (missing, then type again): flush its events with
				// a sentinel drift before looking at what follows.
				do: func(t *testing.T, f *fixture) {
					os.Remove(f.host("/etc/etc-file"))
					os.Symlink("sentinel", f.host("/etc/etc-file"))
					os.Chmod(f.host("/etc/sentinel"), 0o600)
				},
				want: []want{detected("/etc/sentinel", "")},
			},
			{
				do:     func(t *testing.T, f *fixture) { os.Chmod(f.host("/etc/sentinel"), 0o644) },
				status: "Drift: 1 path differs (/etc/etc-file: type)",
			},
			{
				do: func(t *testing.T, f *fixture) {
					os.Remove(f.host("/etc/etc-file"))
					os.WriteFile(f.host("/etc/etc-file"), []byte("hello world\n"), 0o644)
				},
				want: []want{resolved("/etc/etc-file", "type")},
			},
		},
	})
}
