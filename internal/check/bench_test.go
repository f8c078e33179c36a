package check_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"github.com/drift-monitor/drift-monitor/test/floor"
	"golang.org/x/sys/unix"
)

// benchState builds a clean machine of n files in directories of 100: a
// config of data URLs (512 bytes each, every tenth 8 KiB) parsed and derived
// as the daemon would, and a root holding exactly that. Clean is the costly
// case: every byte of every file is read and compared.
func benchState(b *testing.B, n int) (string, []model.Entry) {
	b.Helper()
	root := b.TempDir()
	var cfg strings.Builder
	cfg.WriteString(`{"ignition":{"version":"3.5.0"},"storage":{"files":[`)
	for i := 0; i < n; i++ {
		size := 512
		if i%10 == 0 {
			size = 8 << 10
		}
		content := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(content, fmt.Sprintf("file %d\n", i))
		p := fmt.Sprintf("/srv/d%03d/f%05d.conf", i/100, i)
		if i > 0 {
			cfg.WriteByte(',')
		}
		fmt.Fprintf(&cfg, `{"path":%q,"mode":420,"contents":{"source":"data:;base64,%s"}}`, p, base64.StdEncoding.EncodeToString(content))
		full := filepath.Join(root, p)
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(full, content, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chmod(full, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg.WriteString(`]}}`)
	frag, err := desired.Parse("bench.ign", []byte(cfg.String()))
	if err != nil {
		b.Fatal(err)
	}
	st, err := derive.Derive(frag.Config, emptyAccounts{})
	if err != nil {
		b.Fatal(err)
	}
	if len(st.Entries) != n {
		b.Fatalf("%d entries, want %d", len(st.Entries), n)
	}
	return root, st.Entries
}

type emptyAccounts struct{}

func (emptyAccounts) LookupUser(string) (derive.User, bool) { return derive.User{}, false }
func (emptyAccounts) LookupGroup(string) (int, bool)        { return 0, false }

// BenchmarkFullCheck: one full check of a clean machine.
func BenchmarkFullCheck(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			root, entries := benchState(b, n)
			c := newChecker(b, root)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res := c.All(context.Background(), entries)
				if !res.Clean() {
					b.Fatalf("drift in a clean root: %+v", res.Drift[0])
				}
			}
		})
	}
}

// BenchmarkMetaCost: what observing the metadata Ignition never sets
// (statx instead of fstatat, listxattrat per entry, labels) adds to a full
// check of a clean machine of 100,000 files, side by side with the check
// without it: every iteration runs each variant, alternating which goes
// first, and the medians are reported with their ratios over base/op:
// go test ./internal/check -run '^$' -bench MetaCost -benchtime 10x
//
//   - plain: a root without SELinux; labelled: Debian's policy in the root
//     and every file labelled with its default (needs root and
//     selinux-policy-default); xattrs: labelled, and every file with a
//     user.* xattr too.
//   - meta: a check as `check` runs it (the policy, when the root has one,
//     loaded every time); kept: as the daemon's passes run it, the policy
//     and its looked-up labels kept from the pass before
//     (check.LabelPolicy). Every pass reads every xattr: a full check
//     trusts no stamp (the internal/check package doc).
//   - floor-ratio: the same system calls made bare (test/floor), with the
//     metadata's over without: the least the metadata can add, since each
//     of its calls is one a file needs by the contract.
func BenchmarkMetaCost(b *testing.B) {
	for _, v := range []string{"plain", "labelled", "xattrs"} {
		b.Run(v, func(b *testing.B) { benchMetaCost(b, v) })
	}
}

func benchMetaCost(b *testing.B, variant string) {
	root, entries := benchState(b, 100000)
	base, meta, kept := newChecker(b, root), newChecker(b, root), newChecker(b, root)
	base.NoMeta = true
	if variant != "plain" {
		if !benchLabels(b, root, meta, entries) {
			b.Skip("labels not measured")
		}
	}
	if variant == "xattrs" {
		for i := range entries {
			if err := unix.Lsetxattr(filepath.Join(root, entries[i].Path), "user.note", []byte("x"), 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	if variant == "xattrs" {
		// A user.* xattr is drift, but not what is measured.
		ignore := func(d *drift.Drift) bool { return d.Kind == drift.Xattr }
		base.Exclude, meta.Exclude, kept.Exclude = ignore, ignore, ignore
	}
	var policy check.LabelPolicy
	// The floors: the system calls alone, as the checks make them (per
	// directory, in parallel as a Checker's workers: two per core), without
	// and with what the metadata adds.
	byDir := map[string][]string{}
	for i := range entries {
		d, f := filepath.Split(entries[i].Path)
		byDir[filepath.Join(root, d)] = append(byDir[filepath.Join(root, d)], f)
	}
	bare := func(meta bool) time.Duration {
		start := time.Now()
		if err := floor.Run(byDir, 2*runtime.GOMAXPROCS(0), meta); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	once := func(c *check.Checker, load func()) time.Duration {
		start := time.Now()
		if load != nil {
			load()
		}
		if res := c.All(context.Background(), entries); !res.Clean() || len(res.Notices) > 0 {
			b.Fatalf("drift in a clean root: %+v %+v", res.Drift, res.Notices)
		}
		return time.Since(start)
	}
	loadMeta := func() { meta.Labels = check.LoadLabels(meta.Root, entries, false) }
	loadKept := func() { kept.Labels = policy.Load(kept.Root, entries, false) }
	// Warm the page cache and the dentries, and let the files' ctimes age
	// past the xattr cache's racy window, as a daemon's files have.
	once(base, nil)
	once(meta, loadMeta)
	once(kept, loadKept)
	var tb, tm, tk, fb, fm []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			tb, tm, tk = append(tb, once(base, nil)), append(tm, once(meta, loadMeta)), append(tk, once(kept, loadKept))
			fb, fm = append(fb, bare(false)), append(fm, bare(true))
		} else {
			fm, fb = append(fm, bare(true)), append(fb, bare(false))
			tk, tm, tb = append(tk, once(kept, loadKept)), append(tm, once(meta, loadMeta)), append(tb, once(base, nil))
		}
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2])
	}
	b.ReportMetric(med(tb), "base-ns/op")
	b.ReportMetric(med(tm), "meta-ns/op")
	b.ReportMetric(med(tm)/med(tb), "meta-ratio")
	b.ReportMetric(med(tk), "kept-ns/op")
	b.ReportMetric(med(tk)/med(tb), "kept-ratio")
	b.ReportMetric(med(fm)/med(fb), "floor-ratio")
}

// benchLabels gives root Debian's policy contexts and labels every entry's
// file with its default; false (labels not measured) where this cannot be
// done: no policy installed, or not root.
func benchLabels(b *testing.B, root string, c *check.Checker, entries []model.Entry) bool {
	const contexts = "/etc/selinux/default/contexts"
	if _, err := os.Stat(contexts); err != nil || os.Geteuid() != 0 {
		b.Logf("labels not measured: needs root and %s", contexts)
		return false
	}
	installPolicy(b, root, contexts, "permissive")
	fc, err := selinux.ForRoot(c.Root.ReadFile)
	if err != nil || fc == nil {
		b.Fatalf("loading the copied policy: %v", err)
	}
	for i := range entries {
		p := entries[i].Path
		want, ok := fc.Lookup(p, selinux.Regular)
		if !ok {
			continue
		}
		if err := unix.Lsetxattr(filepath.Join(root, p), "security.selinux", append([]byte(want), 0), 0); err != nil {
			b.Fatal(err)
		}
	}
	return true
}

// installPolicy copies src (Debian's policy, or its contexts) into root's
// /etc/selinux/default and names it in root's /etc/selinux/config, in mode.
func installPolicy(b *testing.B, root, src, mode string) {
	dst := filepath.Join(root, "etc/selinux/default")
	if filepath.Base(src) == "default" {
		dst = filepath.Dir(dst)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, dst+"/").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/selinux/config"), []byte("SELINUX="+mode+"\nSELINUXTYPE=default\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEntry: re-checking one entry after an event, among n. Its cost
// must not grow with n.
func BenchmarkEntry(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			root, entries := benchState(b, n)
			c := newChecker(b, root)
			o := ondisk.NewObserver(c.Root)
			defer o.Close()
			e := &entries[n/2+1] // a 512-byte file
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if ds := c.Outcome(o, e, nil).Drift; len(ds) != 0 {
					b.Fatalf("drift in a clean root: %+v", ds)
				}
			}
		})
	}
}

// BenchmarkEntrySizeDiffers: re-checking, after an event, a declared file
// that was replaced by one of another size — up to a 74 GiB sparse file, as
// `truncate -s 74G` makes. The size decides: the cost must not grow with the
// file (read-B/op stays 0).
func BenchmarkEntrySizeDiffers(b *testing.B) {
	for _, size := range []int64{1 << 20, 2 << 30, 74 << 30} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			root := b.TempDir()
			p := filepath.Join(root, "etc/big")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Truncate(p, size); err != nil {
				b.Fatal(err)
			}
			e := &model.Entry{Kind: model.KindFile, Path: "/etc/big", Type: model.TypeRegular,
				Content: &model.Content{Exact: []byte("declared\n")}}
			c := newChecker(b, root)
			o := ondisk.NewObserver(c.Root)
			defer o.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if ds := c.Outcome(o, e, nil).Drift; len(ds) != 1 {
					b.Fatalf("drift %+v, want one content drift", ds)
				}
			}
			b.ReportMetric(float64(o.BytesRead())/float64(b.N), "read-B/op")
		})
	}
}
