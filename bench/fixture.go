package main

import (
	"bufio"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/ignspec"
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

// A specConfig is the fixture's config declared in another spec (or as a
// MachineConfig), the same files and contents: the per-spec rows of part 1.
type specConfig struct {
	Label string // the spec, or "MachineConfig (3.2.0)"
	Key   string // the contender's key
	Path  string
	Bytes int64
}

// machineConfigSpec is the spec of the Ignition config a MachineConfig
// carries: the machine-config operator renders 3.2.0 (every OpenShift
// MachineConfig).
const machineConfigSpec = "3.2.0"

// specConfigs writes the fixture's config once per stable spec drift-monitor
// reads (its version changed; the keys of the config exist in every spec),
// and once as a MachineConfig carrying it in spec 3.2.0, in JSON and in
// YAML. It streams
// the config: a child's peak RSS as the kernel reports it is at least its
// parent's at the fork, so drift-bench must stay small.
func specConfigs(f *fixture) ([]specConfig, error) {
	fi, err := os.Stat(f.Cfg)
	if err != nil {
		return nil, err
	}
	const head = `{"ignition":{"version":"3.4.0"}`
	// The config ends with "\n]}}\n": the MachineConfig drops the last
	// newline and closes spec and itself.
	body := fi.Size() - int64(len(head))
	var out []specConfig
	write := func(label, key, name, prefix string, n int64, suffix string) error {
		in, err := os.Open(f.Cfg)
		if err != nil {
			return err
		}
		defer in.Close()
		got := make([]byte, len(head))
		if _, err := io.ReadFull(in, got); err != nil || string(got) != head {
			return fmt.Errorf("%s does not start with %s", f.Cfg, head)
		}
		p := filepath.Join(f.Dir, name)
		o, err := os.Create(p)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(o, 1<<20)
		w.WriteString(prefix)
		if _, err := io.CopyN(w, in, n); err != nil {
			o.Close()
			return err
		}
		w.WriteString(suffix)
		if err := w.Flush(); err != nil {
			o.Close()
			return err
		}
		if err := o.Close(); err != nil {
			return err
		}
		out = append(out, specConfig{Label: label, Key: key, Path: p, Bytes: int64(len(prefix)) + n + int64(len(suffix))})
		return nil
	}
	for _, v := range ignspec.Versions() {
		if err := write(v, "cold@"+v, "config-"+v+".ign", `{"ignition":{"version":"`+v+`"}`, body, ""); err != nil {
			return nil, err
		}
	}
	mc := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",` +
		`"metadata":{"name":"99-bench","labels":{"machineconfiguration.openshift.io/role":"worker"}},` +
		`"spec":{"config":{"ignition":{"version":"` + machineConfigSpec + `"}`
	if err := write("MachineConfig ("+machineConfigSpec+")", "cold@mc", "config-mc.json", mc, body-1, "}}\n"); err != nil {
		return nil, err
	}
	y, err := machineConfigYAML(f)
	if err != nil {
		return nil, err
	}
	return append(out, y), nil
}

// machineConfigYAML writes the MachineConfig of specConfigs in YAML, as
// `oc get machineconfig -o yaml` gives it (sigs.k8s.io/yaml's JSONToYAML
// of the JSON: keys sorted, block style), the same files and contents. It
// writes it line by line, as specConfigs streams the others.
func machineConfigYAML(f *fixture) (specConfig, error) {
	p := filepath.Join(f.Dir, "config-mc.yaml")
	o, err := os.Create(p)
	if err != nil {
		return specConfig{}, err
	}
	w := bufio.NewWriterSize(o, 1<<20)
	w.WriteString("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  labels:\n" +
		"    machineconfiguration.openshift.io/role: worker\n  name: 99-bench\nspec:\n  config:\n    ignition:\n" +
		"      version: " + machineConfigSpec + "\n    storage:\n      files:\n")
	for i, path := range f.Paths {
		fmt.Fprintf(w, "      - contents:\n          source: data:;base64,%s\n        mode: 420\n        path: %s\n",
			base64.StdEncoding.EncodeToString(content(i)), path)
	}
	if err := w.Flush(); err != nil {
		o.Close()
		return specConfig{}, err
	}
	if err := o.Close(); err != nil {
		return specConfig{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return specConfig{}, err
	}
	return specConfig{Label: "MachineConfig YAML (" + machineConfigSpec + ")", Key: "cold@mc-yaml", Path: p, Bytes: fi.Size()}, nil
}
