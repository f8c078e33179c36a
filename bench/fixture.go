package main

import (
	"bufio"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// A fixture is a root holding exactly what its Ignition config declares, so
// that a check of it is clean: the costly case, every byte is read.
type fixture struct {
	Dir   string // holds root/, config.ign, aide/
	Root  string
	Cfg   string
	Paths []string // declared host paths, in order
	Bytes int64    // total declared bytes
	big   bool     // the one-large-file fixture
}

// The small-file layout: 100 files per directory, 90% of 512 bytes and 10%
// of 8 KiB, text-like (a config file's content), under /etc/bench.
const (
	perDir    = 100
	smallSize = 512
	largeSize = 8 << 10
)

func smallPath(i int) string {
	return fmt.Sprintf("/etc/bench/d%04d/f%06d.conf", i/perDir, i)
}

func fileSize(i int) int {
	if i%10 == 9 {
		return largeSize
	}
	return smallSize
}

// content is file i's declared content: a header naming it, then lines of a
// letter. wrong(i, k) has the same length and differs in its first bytes, so
// that the checker must read it to see the difference (a size change is
// decided by stat alone).
func content(i int) []byte {
	b := make([]byte, fileSize(i))
	line := []byte(strings.Repeat(string(rune('a'+i%26)), 63) + "\n")
	for off := 0; off < len(b); off += len(line) {
		copy(b[off:], line)
	}
	copy(b, fmt.Sprintf("file %d\n", i))
	return b
}

func wrong(i, k int) []byte {
	b := content(i)
	copy(b, fmt.Sprintf("%08x", uint32(k)))
	return b
}

// makeFixture writes a root of n small files and its config (spec 3.4.0,
// data URLs) under dir. An existing complete fixture (a stamp file) is reused.
func makeFixture(dir string, n int) (*fixture, error) {
	f := &fixture{Dir: dir, Root: filepath.Join(dir, "root"), Cfg: filepath.Join(dir, "config.ign")}
	for i := 0; i < n; i++ {
		f.Paths = append(f.Paths, smallPath(i))
		f.Bytes += int64(fileSize(i))
	}
	stamp := filepath.Join(dir, "complete")
	want := fmt.Sprintf("small v1 n=%d\n", n)
	if b, err := os.ReadFile(stamp); err == nil && string(b) == want {
		return f, nil
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(f.Root, 0o755); err != nil {
		return nil, err
	}
	out, err := os.Create(f.Cfg)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	w.WriteString(`{"ignition":{"version":"3.4.0"},"storage":{"files":[`)
	for i := 0; i < n; i++ {
		c := content(i)
		p := f.Paths[i]
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "\n"+`{"path":%q,"mode":420,"contents":{"source":"data:;base64,%s"}}`, p, base64.StdEncoding.EncodeToString(c))
		host := filepath.Join(f.Root, p)
		if i%perDir == 0 {
			if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(host, c, 0o644); err != nil {
			return nil, err
		}
		if err := os.Chmod(host, 0o644); err != nil { // whatever the umask
			return nil, err
		}
	}
	w.WriteString("\n]}}\n")
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	return f, os.WriteFile(stamp, []byte(want), 0o644)
}

const bigPath = "/var/lib/bench/blob.img"

// makeBigFixture writes one file of size bytes (incompressible) and a config
// that declares it through a remote source with a sha512 verification hash:
// drift-monitor never fetches it, it hashes the file on disk.
func makeBigFixture(dir string, size int64) (*fixture, error) {
	f := &fixture{Dir: dir, Root: filepath.Join(dir, "root"), Cfg: filepath.Join(dir, "config.ign"),
		Paths: []string{bigPath}, Bytes: size, big: true}
	stamp := filepath.Join(dir, "complete")
	want := fmt.Sprintf("big v1 size=%d\n", size)
	if b, err := os.ReadFile(stamp); err == nil && string(b) == want {
		return f, nil
	}
	os.RemoveAll(dir)
	host := filepath.Join(f.Root, bigPath)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return nil, err
	}
	out, err := os.OpenFile(host, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	h := sha512.New()
	rng := rand.NewChaCha8([32]byte{1})
	block := make([]byte, 1<<20)
	for written := int64(0); written < size; {
		rng.Read(block)
		n := int64(len(block))
		if size-written < n {
			n = size - written
		}
		if _, err := out.Write(block[:n]); err != nil {
			return nil, err
		}
		h.Write(block[:n])
		written += n
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	if err := os.Chmod(host, 0o644); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"storage":{"files":[
{"path":%q,"mode":420,"contents":{"source":"https://example.com/bench/blob.img","verification":{"hash":"sha512-%s"}}}
]}}
`, bigPath, hex.EncodeToString(h.Sum(nil)))
	if err := os.WriteFile(f.Cfg, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return f, os.WriteFile(stamp, []byte(want), 0o644)
}
