package ignspec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// validGen makes configs out of values chosen to meet every rule of the
// validation that validFast answers for (and some it leaves to the walk),
// each choice taken from pick, so that a fuzzer's bytes steer it too.
type validGen struct {
	pick func(n int) int
	// Extra values, from the fuzzer: one more path, source and mode.
	path, source string
	mode         int
}

func (g *validGen) str(pool ...string) *string {
	i := g.pick(len(pool) + 1)
	if i == len(pool) {
		return nil
	}
	s := pool[i]
	return &s
}

func (g *validGen) num(pool ...int) *int {
	i := g.pick(len(pool) + 1)
	if i == len(pool) {
		return nil
	}
	n := pool[i]
	return &n
}

func (g *validGen) flag() *bool {
	switch g.pick(3) {
	case 0:
		return nil
	case 1:
		t := true
		return &t
	}
	f := false
	return &f
}

func (g *validGen) node() types.Node {
	paths := []string{"/etc/a", "/etc/b", "/etc/c/d", "/etc/l/x", "/etc/l", "etc/a", "/etc/../a", "/etc/a/", "", "/", "/etc/systemd/system/a.service", "/etc//a", g.path}
	return types.Node{
		Path:      paths[g.pick(len(paths))],
		Overwrite: g.flag(),
		User:      types.NodeUser{ID: g.num(0, 1000, -1), Name: g.str("core", "")},
		Group:     types.NodeGroup{ID: g.num(0, 5), Name: g.str("wheel", "")},
	}
}

func (g *validGen) fileMode() *int { return g.num(0o644, 0o755, 0o7777, 0o10000, -1, 0o4755, g.mode) }

func (g *validGen) resource() types.Resource {
	r := types.Resource{
		Compression: g.str("", "gzip", "xz"),
		Source: g.str("", "data:;base64,eQ==", "data:;base64,eQ=", "data:;base64,e Q==", "data:;base64,", "data:,x", "data:%%",
			"data:text/plain;base64,eQ==", "https://example.com/a", "http://example.com/a", "ftp://example.com/a", "s3://b/k?versionId=",
			"s3://b/k?versionId=1", "gs://b/o", "tftp://h/f", "http://[::1", "arn:aws:s3:us-east-1:123456789012:accesspoint/test/object/x",
			g.source),
	}
	if g.pick(4) == 0 {
		r.Verification.Hash = g.str("sha512-00", "sha512-"+strings.Repeat("0", 128), "sha256-"+strings.Repeat("a", 64), "md5-00", "sha512")
	}
	if g.pick(6) == 0 {
		for range g.pick(3) + 1 {
			r.HTTPHeaders = append(r.HTTPHeaders, types.HTTPHeader{Name: []string{"a", ""}[g.pick(2)], Value: g.str("b", "")})
		}
	}
	return r
}

func (g *validGen) config() Config {
	var c Config
	c.Ignition.Version = MaxVersion.String()
	s := &c.Storage
	for range g.pick(4) {
		f := types.File{Node: g.node()}
		f.Mode = g.fileMode()
		f.Contents = g.resource()
		for range g.pick(3) / 2 {
			f.Append = append(f.Append, g.resource())
		}
		s.Files = append(s.Files, f)
	}
	for range g.pick(3) {
		d := types.Directory{Node: g.node()}
		d.Mode = g.fileMode()
		s.Directories = append(s.Directories, d)
	}
	for range g.pick(3) {
		l := types.Link{Node: g.node()}
		l.Target = g.str("/etc/a", "", "a", "/etc/c")
		l.Hard = g.flag()
		s.Links = append(s.Links, l)
	}
	// The sections walked by vcontext: present now and then, valid or not.
	if g.pick(5) == 0 {
		s.Disks = []types.Disk{{Device: "/dev/vda", Partitions: []types.Partition{{Number: 1}}[:g.pick(2)], WipeTable: g.flag()}}
		s.Filesystems = []types.Filesystem{{Device: []string{"/dev/vda", "/dev/vdb"}[g.pick(2)], Format: g.str("ext4", "xfs")}}
	}
	if g.pick(5) == 0 {
		u := types.Unit{Name: []string{"a.service", "a.conf", "b@.service", "b@x.service"}[g.pick(4)], Contents: g.str("[Unit]\n", "[Install]\nWantedBy=x\n", "[Unit", ""), Enabled: g.flag()}
		if g.pick(3) == 0 {
			u.Dropins = []types.Dropin{{Name: []string{"x.conf", "x.txt"}[g.pick(2)], Contents: g.str("[Unit]\n", "x")}}
		}
		c.Systemd.Units = append(c.Systemd.Units, u)
	}
	if g.pick(5) == 0 {
		c.Passwd.Users = []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"k", "k"}[:g.pick(3)]}}
		c.Passwd.Users = append(c.Passwd.Users, c.Passwd.Users[:g.pick(2)]...)
	}
	if g.pick(6) == 0 {
		c.Ignition.Config.Merge = []types.Resource{g.resource()}
	}
	if g.pick(8) == 0 {
		c.KernelArguments.ShouldExist = []types.KernelArgument{"a", "a"}[:g.pick(3)]
	}
	return c
}

// checkValidFast: validFast says what validateNoTree says of cfg (nothing,
// or something), and where a node's own check answers, the walk of that
// node has nothing to say. It reports which arm answered for each file.
func checkValidFast(t *testing.T, cfg Config, fast, walked *int) {
	t.Helper()
	want := validateNoTree(cfg)
	if got := validFast(&cfg); got != (len(want.Entries) == 0) {
		t.Fatalf("validFast = %v; Ignition's validation says:\n%s\nof %+v", got, want, cfg)
	}
	for _, f := range cfg.Storage.Files {
		if _, ok := fileClean(&f, nil); ok {
			*fast++
			if !walkClean(f, true) {
				t.Fatalf("fileClean accepts a file Ignition's walk does not: %+v: %s", f, validateNoTree(f))
			}
		} else if walkClean(f, true) {
			*walked++
		}
	}
	for _, d := range cfg.Storage.Directories {
		if nodeClean(&d.Node) && modeClean(d.Mode) && !walkClean(d, true) {
			t.Fatalf("a directory Ignition's walk refuses is accepted: %+v", d)
		}
	}
	for _, l := range cfg.Storage.Links {
		if nodeClean(&l.Node) && !walkClean(l, true) {
			t.Fatalf("a link Ignition's walk refuses is accepted: %+v", l)
		}
	}
}

// TestValidFastIsIgnitions: on 3,000 generated configs, validFast answers
// as Ignition's validation does (validateNoTree: vcontext's walks of the
// whole config), and each arm of it is exercised: files it accepts
// itself, and valid files it leaves to the walk.
func TestValidFastIsIgnitions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g := &validGen{pick: rng.IntN, path: "/etc/fuzz", source: "data:;base64,YWJj", mode: 0o600}
	fast, walked, clean := 0, 0, 0
	for range 3000 {
		cfg := g.config()
		checkValidFast(t, cfg, &fast, &walked)
		if len(validateNoTree(cfg).Entries) == 0 {
			clean++
		}
	}
	// Files left to the walk are those with HTTP headers or a hash.
	if fast < 60 || walked < 20 || clean < 40 {
		t.Errorf("files accepted by fileClean %d, by the walk only %d, configs clean %d: too few to prove anything", fast, walked, clean)
	}
}

// FuzzValidFast: checkValidFast of the configs a fuzzer's bytes choose,
// with a path, a source and a mode of its own among the values.
func FuzzValidFast(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, "/etc/x", "data:;base64,eQ==", 420)
	f.Add([]byte{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}, "/etc/./x", "data:;base64,e===", -5)
	f.Add([]byte{1, 0, 12, 0, 0, 0, 17, 0}, "/etc/x/..", "data:;base64,eQ==%", 4096)
	f.Fuzz(func(t *testing.T, choices []byte, p, src string, mode int) {
		i := 0
		g := &validGen{path: p, source: src, mode: mode, pick: func(n int) int {
			if i >= len(choices) {
				return 0
			}
			i++
			return int(choices[i-1]) % n
		}}
		var fast, walked int
		checkValidFast(t, g.config(), &fast, &walked)
	})
}

// TestValidFastWalksNoFile: a config of plain files (paths, modes, base64
// data URLs, as the benchmarks' fixtures and Ignition's tools write them)
// is validated without vcontext's walk of any file, which allocates at
// every step: validFast's allocations do not grow with the files.
func TestValidFastWalksNoFile(t *testing.T) {
	allocs := func(n int) float64 {
		cfg := plainFiles(n)
		if !validFast(&cfg) {
			t.Fatal("a valid config is refused")
		}
		return testing.AllocsPerRun(5, func() { validFast(&cfg) })
	}
	few, many := allocs(10), allocs(4000)
	if many-few > 100 {
		t.Errorf("validFast allocates %v times for 10 files, %v for 4,000: a walk of the files", few, many)
	}
}

// plainFiles is a config of n plain files.
func plainFiles(n int) Config {
	var cfg Config
	cfg.Ignition.Version = MaxVersion.String()
	for i := range n {
		src, mode := "data:;base64,eQ==", 0o644
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{Node: types.Node{Path: fmt.Sprintf("/etc/d/f%d", i)},
			FileEmbedded1: types.FileEmbedded1{Mode: &mode, Contents: types.Resource{Source: &src}}})
	}
	return cfg
}
