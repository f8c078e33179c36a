package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// BenchmarkAncestorMoved measures the handling of a directory on the way to
// declared paths moving away and back, beside n other declared directories:
// it must not grow with n.
func BenchmarkAncestorMoved(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("others=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			dirs := []string{"/etc/storm/d1"}
			for i := range n {
				dirs = append(dirs, fmt.Sprintf("/etc/other/d%d", i))
			}
			for _, d := range dirs {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			r, err := ondisk.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			w, err := New(r)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if err := w.Watch(dirs); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, ReadBufferSize)
			// wait reads until a Rewatched event on /etc/storm with op.
			wait := func(op Op) {
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) {
					evs, err := w.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					for _, e := range evs {
						if e.Path == "/etc/storm" && e.Op&(Rewatched|op) == Rewatched|op {
							return
						}
					}
				}
				b.Fatalf("no %v on /etc/storm", op)
			}
			from, to := filepath.Join(dir, "/etc/storm"), filepath.Join(dir, "/etc/storm.gone")
			b.ResetTimer()
			for range b.N {
				os.Rename(from, to)
				wait(Remove)
				os.Rename(to, from)
				wait(MovedTo)
			}
		})
	}
}
