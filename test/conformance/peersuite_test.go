package conformance_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// Ignition's own blackbox suite (tests/positive, tests/negative), as data:
// testdata/peer-suites holds the cases (see its README.md) and
// expectations.json what drift-monitor must answer where that is not the
// rule below, and why.
//
// Each selected case is run as Ignition's suite runs it, in a temporary
// root instead of a disk image: its In nodes written first, its system
// config directories and servers set up, Ignition's stages run. Then:
//
//   - a positive case must leave a root that checks clean, against the
//     case's config and against the config cache Ignition wrote (what
//     adopt reads); and every file and link of Out that the cache declares,
//     removed, must be reported missing;
//   - a negative case must not check clean against its config: drift
//     (exit 1) or a config drift-monitor refuses (exit 2).
//
// A case whose answer differs is listed in expectations.json with the
// answer and the reason; the test fails when the answer changes either way.
const peerSuiteDir = "testdata/peer-suites"

type peerSuite struct {
	Upstream struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	} `json:"upstream"`
	TargetVersion  string     `json:"target_version"`
	ServedConfig   string     `json:"served_config"`
	ServedContents string     `json:"served_contents"`
	Scenarios      []peerCase `json:"scenarios"`
}

type peerCase struct {
	Name           string  `json:"name"`
	Kind           string  `json:"kind"`
	Upstream       string  `json:"upstream"`
	Status         string  `json:"status"`
	MinVersion     *string `json:"min_version"`
	MaxVersion     *string `json:"max_version"`
	Version        string  `json:"version"`
	Config         string  `json:"config"`
	ConfigTemplate string  `json:"config_template"`
	Env            []string
	SystemFiles    []struct{ Path, Contents, Dir string } `json:"system_files"`
	Needs          []string
	PasswdPrep     bool `json:"passwd_prep"`
	In             []peerNode
	Out            []peerNode
	OutRemoved     []string `json:"out_removed"`
	ExpectRC       []int    `json:"expect_rc"`
}

type peerNode struct {
	Path, Type, Contents, Target string
	Mode, UID, GID               int
}

// peerExpectation is an answer other than the rule, for one case of one
// suite at the specs listed (all when none).
type peerExpectation struct {
	Suite string   `json:"suite"`
	Case  string   `json:"case"`
	Specs []string `json:"specs"`
	// Check is "config" or "cache": which check of drift-monitor answers
	// otherwise; or "ignition": Ignition itself fails the positive case here
	// (Want "fails").
	Check string `json:"check"`
	// Want is "clean", "drift" or "refused" (for a negative case "clean"
	// or "not clean"; for Check "ignition", "fails").
	Want string `json:"want"`
	Why  string `json:"why"`
}

func loadPeerSuite(t *testing.T, name string) peerSuite {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(peerSuiteDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var s peerSuite
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func loadPeerExpectations(t *testing.T) []peerExpectation {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(peerSuiteDir, "expectations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e []peerExpectation
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("expectations.json: %v", err)
	}
	for _, x := range e {
		valid := (x.Check == "config" || x.Check == "cache") && slices.Contains([]string{"clean", "drift", "refused", "not clean"}, x.Want) ||
			x.Check == "ignition" && x.Want == "fails"
		if x.Why == "" || !valid {
			t.Fatalf("expectations.json: %+v: want a check (config, cache; ignition), an answer (clean, drift, refused; fails) and a reason", x)
		}
	}
	return e
}

// TestPeerSuiteIsThePinnedIgnitions: the suite run with the Ignition go.mod
// pins is that Ignition's own: a bump without a new suite fails here.
func TestPeerSuiteIsThePinnedIgnitions(t *testing.T) {
	s := loadPeerSuite(t, "ignition-blackbox-2.27.json")
	if pinned := harness.PinnedIgnition(t); s.Upstream.Version != pinned {
		t.Errorf("%s/ignition-blackbox-2.27.json is Ignition %s's suite; go.mod pins %s: extract the pinned version's tests/ (see its README.md)",
			peerSuiteDir, s.Upstream.Version, pinned)
	}
}

// TestPeerSuite runs Ignition's blackbox cases: Ignition 2.14's with
// Debian's Ignition 2.14 at spec 3.3.0, and Ignition 2.27's with the
// Ignition of that version built from the module cache at every stable spec
// from 3.4.0 its bounds allow.
func TestPeerSuite(t *testing.T) {
	requireTier(t)
	expect := loadPeerExpectations(t)
	used := map[int]bool{}
	suites := []struct {
		label, file string
		specs       []string // the specs a case with a template runs at
		binary      func(t *testing.T, s peerSuite) string
	}{
		{"2.14", "ignition-blackbox.json", nil, func(*testing.T, peerSuite) string { return ignitionBinary }},
		{"2.27", "ignition-blackbox-2.27.json", []string{"3.4.0", "3.5.0", "3.6.0"}, func(t *testing.T, s peerSuite) string {
			return harness.IgnitionBinary(t, s.Upstream.Version)
		}},
	}
	var mu sync.Mutex
	type tally struct{ pass, expected, total, removed int }
	counts := map[string]*tally{}
	for _, su := range suites {
		t.Run(su.label, func(t *testing.T) {
			s := loadPeerSuite(t, su.file)
			bin := su.binary(t, s)
			srv := startPeerServers(t, s)
			for _, c := range s.Scenarios {
				if c.Status != "selected" {
					continue
				}
				for _, spec := range caseSpecs(c, su.specs) {
					cfg := c.Config
					if spec != c.Version {
						cfg = strings.ReplaceAll(c.ConfigTemplate, "$version", spec)
					}
					t.Run(c.Name+"@"+specLabel(spec), func(t *testing.T) {
						t.Parallel()
						exc := func(check string) *peerExpectation {
							for i, x := range expect {
								if x.Suite == su.label && x.Case == c.Name && x.Check == check && (len(x.Specs) == 0 || slices.Contains(x.Specs, spec)) {
									mu.Lock()
									used[i] = true
									mu.Unlock()
									return &expect[i]
								}
							}
							return nil
						}
						key := su.label + " " + specLabel(spec)
						res := &peerResult{}
						defer func() { // also after a Fatal: every case is counted
							mu.Lock()
							defer mu.Unlock()
							if counts[key] == nil {
								counts[key] = &tally{}
							}
							counts[key].total++
							counts[key].removed += res.removed
							switch {
							case res.ok && !res.listed:
								counts[key].pass++
							case res.ok:
								counts[key].expected++
							}
						}()
						runPeerCase(t, bin, srv, c, cfg, exc, res)
					})
				}
			}
		})
	}
	t.Cleanup(func() {
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c := counts[k]
			t.Logf("Ignition %s: %d/%d cases answer by the rule, %d as expectations.json says, %d otherwise; %d written nodes removed and reported missing",
				k, c.pass, c.total, c.expected, c.total-c.pass-c.expected, c.removed)
		}
		if t.Failed() {
			return
		}
		for i, x := range expect {
			if !used[i] {
				t.Errorf("expectations.json lists %s %s (%s), which no case ran: remove it", x.Suite, x.Case, x.Check)
			}
		}
	})
}

// caseSpecs are the specs case c runs at: its own when it has no template,
// else each of specs inside its bounds (its own version when specs is nil).
func caseSpecs(c peerCase, specs []string) []string {
	if c.ConfigTemplate == "" || specs == nil {
		return []string{c.Version}
	}
	var out []string
	for _, s := range specs {
		if (c.MinVersion == nil || semverLess(*c.MinVersion, s) || *c.MinVersion == s) &&
			(c.MaxVersion == nil || semverLess(s, *c.MaxVersion) || *c.MaxVersion == s) {
			out = append(out, s)
		}
	}
	return out
}

func semverLess(a, b string) bool {
	var x, y [3]int
	fmt.Sscanf(a, "%d.%d.%d", &x[0], &x[1], &x[2])
	fmt.Sscanf(b, "%d.%d.%d", &y[0], &y[1], &y[2])
	return slices.Compare(x[:], y[:]) < 0
}

func specLabel(spec string) string {
	if spec == "" {
		return "any"
	}
	return spec
}

// peerResult is what a case's run says: whether every answer was the one
// it must be, and whether one of them is listed in expectations.json.
type peerResult struct {
	ok, listed bool
	removed    int // nodes removed and reported missing
}

// runPeerCase runs one case and records in res whether drift-monitor
// answered as it must.
func runPeerCase(t *testing.T, bin string, srv *peerServers, c peerCase, cfg string, exc func(check string) *peerExpectation, res *peerResult) {
	t.Helper()
	cfg = srv.rewrite(cfg)
	sys := t.TempDir()
	dirs := map[string]string{"": filepath.Join(sys, "system"), "runtime": filepath.Join(sys, "system-runtime"), "local": filepath.Join(sys, "system-local")}
	env := []string{
		"IGNITION_SYSTEM_CONFIG_DIR=" + dirs[""],
		"IGNITION_SYSTEM_RUNTIME_CONFIG_DIR=" + dirs["runtime"],
		"IGNITION_SYSTEM_LOCAL_CONFIG_DIR=" + dirs["local"],
	}
	for _, e := range c.Env {
		env = append(env, strings.ReplaceAll(e, "$SYSTEM_CONFIG_DIR", dirs[""]))
	}
	for _, f := range c.SystemFiles {
		p := filepath.Join(dirs[f.Dir], f.Path)
		mustMkdir(t, filepath.Dir(p), 0o755)
		mustWrite(t, p, srv.rewrite(f.Contents), 0o644)
	}
	root, log, err := runIgnition(t, []byte(cfg), prepare{
		ignition: bin,
		env:      env,
		online:   len(c.Needs) > 0,
		before: func(t *testing.T, root string) {
			if c.PasswdPrep {
				prepareForPasswd(t, root)
			}
			writePeerNodes(t, root, c.In)
		},
	})
	rc := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		rc = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if c.Kind == "positive" && rc != 0 {
		if x := exc("ignition"); x != nil && x.Want == "fails" {
			res.ok, res.listed = true, true
			t.Logf("Ignition fails this case here, as expectations.json says: %s", x.Why)
			return
		}
		t.Fatalf("Ignition failed a positive case (exit %d):\n%s", rc, log)
	}
	if c.Kind == "negative" && rc == 0 {
		t.Fatalf("Ignition applied a negative case:\n%s", log)
	}
	if c.Kind == "negative" && len(c.ExpectRC) > 0 && !slices.Contains(c.ExpectRC, rc) {
		t.Logf("Ignition exited %d, the suite expects %v", rc, c.ExpectRC)
	}
	if c.Kind == "positive" {
		if units := peerPresetUnits(t, root, cfg); len(units) > 0 {
			systemctl(t, root, append([]string{"preset"}, units...)...)
		}
	}
	ok, listed := true, false
	defer func() { res.ok, res.listed = ok, listed }()
	answer := func(check, got, want, detail string) {
		x := exc(check)
		if x != nil {
			listed = true
			want = x.Want
		}
		if got != want {
			ok = false
			why := ""
			if x != nil {
				why = " (expectations.json: " + x.Why + ")"
			}
			t.Errorf("%s %s: check against the %s: %s, want %s%s\n%s\nIgnition's log:\n%s", c.Name, c.Upstream, check, got, want, why, detail, log)
		}
	}

	cfgFile := filepath.Join(t.TempDir(), "config.ign")
	mustWrite(t, cfgFile, cfg, 0o600)
	got, detail := peerCheck(t, root, cfgFile)
	if c.Kind == "positive" {
		answer("config", got, "clean", detail)
	} else {
		if got != "clean" {
			detail = "(" + got + ") " + detail
			got = "not clean" // drift or refused: either is the rule
		}
		answer("config", got, "not clean", detail)
	}
	if c.Kind != "positive" {
		return
	}

	cache := filepath.Join(filepath.Dir(root), "run", "cache.json")
	cacheFile := filepath.Join(t.TempDir(), "ignition"+cacheSuffix)
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatalf("Ignition wrote no config cache: %v", err)
	}
	mustWrite(t, cacheFile, string(b), 0o600)
	got, detail = peerCheck(t, root, cacheFile)
	answer("cache", got, "clean", detail)
	if got != "clean" || !ok {
		return
	}

	// Every file and link Ignition wrote, removed, is missing.
	var removed []string
	for _, n := range c.Out {
		if n.Type != "dir" && declaresPath(b, n.Path) {
			remove(t, root, n.Path)
			removed = append(removed, n.Path)
		}
	}
	if len(removed) == 0 {
		return
	}
	r := runBinary(t, "check", "--root", root, "--config", cacheFile, "--format", "json", "--no-cache")
	var rep harness.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.exit != 1 {
		t.Errorf("%s: removed %v: exit %d, want 1 with a report\n%s%s", c.Name, removed, r.exit, r.stdout, r.stderr)
		ok = false
		return
	}
	for _, p := range removed {
		if !slices.ContainsFunc(rep.Drift, func(it harness.Item) bool { return it.Path == p && it.Kind == "missing" }) {
			t.Errorf("%s: removed %s, not reported missing:\n%s", c.Name, p, pretty(rep))
			ok = false
			continue
		}
		res.removed++
	}
}

// cacheSuffix is the name by which check reads Ignition's config cache
// (internal/discover.CacheSuffix).
const cacheSuffix = ".ignition-cache.json"

// declaresPath reports whether the Ignition config cfg declares a file or
// link at path.
func declaresPath(cfg []byte, path string) bool {
	var c struct {
		Storage struct {
			Files []struct{ Path string } `json:"files"`
			Links []struct{ Path string } `json:"links"`
		} `json:"storage"`
	}
	if json.Unmarshal(cfg, &c) != nil {
		return false
	}
	for _, f := range c.Storage.Files {
		if f.Path == path {
			return true
		}
	}
	for _, l := range c.Storage.Links {
		if l.Path == path {
			return true
		}
	}
	return false
}

// peerCheck runs check once (no state cache) and says what it answered:
// "clean", "drift" or "refused", with the output for a failure message.
func peerCheck(t *testing.T, root, cfgFile string) (string, string) {
	t.Helper()
	r := runBinary(t, "check", "--root", root, "--config", cfgFile, "--format", "json", "--no-cache")
	detail := fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
	switch r.exit {
	case 0:
		return "clean", detail
	case 1:
		return "drift", detail
	case 2:
		return "refused", detail
	}
	t.Fatalf("check: %s", detail)
	return "", ""
}

// peerPresetUnits is presetUnits for a config that may be empty (a case
// without a config).
func peerPresetUnits(t *testing.T, root, cfg string) []string {
	if strings.TrimSpace(cfg) == "" {
		return nil
	}
	return presetUnits(t, root, []byte(cfg))
}

// prepareForPasswd does what Ignition's suite does to a root before a case
// that adds or deletes accounts (tests/filesystem.go,
// prepareRootPartitionForPasswd): it copies libnss_files into it, which
// Ignition's lookup of users and groups in a chroot
// (internal/exec/util/user_group_lookup.c) loads there. Upstream copies
// Fedora's /lib64/libnss_files.so.2; a Debian build looks in its
// multiarch directory, so the copy goes where the host has it too.
func prepareForPasswd(t *testing.T, root string) {
	t.Helper()
	libs, _ := filepath.Glob("/lib*/*/libnss_files.so.2")
	libs2, _ := filepath.Glob("/lib64/libnss_files.so.2")
	libs = append(libs, libs2...)
	if len(libs) == 0 {
		t.Fatal("no libnss_files.so.2 on this machine to copy into the root")
	}
	for _, lib := range libs {
		b, err := os.ReadFile(lib)
		if err != nil {
			t.Fatal(err)
		}
		for _, dst := range []string{filepath.Join(root, lib), filepath.Join(root, "usr/lib64", filepath.Base(lib))} {
			mustMkdir(t, filepath.Dir(dst), 0o755)
			mustWrite(t, dst, string(b), 0o644)
		}
	}
}

// writePeerNodes writes a case's In nodes into root as Ignition's suite
// does on a fresh filesystem (tests/filesystem.go, createFilesFromSlice and
// the like): parents 0755, the node with its mode through the umask, then
// chowned; a file already in the root (the accounts) is replaced.
func writePeerNodes(t *testing.T, root string, nodes []peerNode) {
	t.Helper()
	for _, n := range nodes {
		p := filepath.Join(root, n.Path)
		mustMkdir(t, filepath.Dir(p), 0o755)
		var err error
		switch n.Type {
		case "file":
			os.Remove(p)
			err = os.WriteFile(p, []byte(n.Contents), os.FileMode(n.Mode))
		case "dir":
			err = os.Mkdir(p, os.FileMode(n.Mode))
		case "symlink":
			err = os.Symlink(n.Target, p)
		case "hardlink":
			err = os.Link(filepath.Join(root, n.Target), p)
		default:
			t.Fatalf("node %s: unknown type %q", n.Path, n.Type)
		}
		if err == nil {
			err = os.Lchown(p, n.UID, n.GID)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// peerServers are the suite's HTTP and TFTP servers (Ignition's
// tests/servers/servers.go), on ports of their own: the cases' URLs,
// written for 127.0.0.1:8080 and 127.0.0.1:69, are rewritten to them.
type peerServers struct {
	http, tftp string // host:port
}

func (s *peerServers) rewrite(cfg string) string {
	cfg = strings.ReplaceAll(cfg, "http://127.0.0.1:8080/", "http://"+s.http+"/")
	return strings.ReplaceAll(cfg, "tftp://127.0.0.1:69/", "tftp://"+s.tftp+"/")
}

func startPeerServers(t *testing.T, suite peerSuite) *peerServers {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &peerServers{http: l.Addr().String()}
	config := []byte(suite.ServedConfig)
	contents := []byte(suite.ServedContents)
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	// What each path checks of the request before it serves (as upstream's
	// handlers do): the headers the case sets, none of them after a
	// redirect, or the defaults it overrides.
	headers := func(r *http.Request) error {
		if r.Header.Get("X-Auth") != "r8ewap98gfh4d8" || r.Header.Get("Keep-Alive") != "300" {
			return errors.New("X-Auth or Keep-Alive header missing or wrong")
		}
		if !strings.HasPrefix(r.Header.Get("User-Agent"), "Ignition/") {
			return errors.New("User-Agent is not Ignition's")
		}
		return nil
	}
	redirected := func(r *http.Request) error {
		if r.Header.Get("X-Auth") != "" || r.Header.Get("Keep-Alive") != "" {
			return errors.New("the case's headers followed the redirect")
		}
		return nil
	}
	overwritten := func(r *http.Request) error {
		if r.Header.Get("Keep-Alive") != "1000" || r.Header.Get("Accept") != "application/json" ||
			r.Header.Get("Accept-Encoding") != "identity, compress" || r.Header.Get("User-Agent") != "MyUA" {
			return errors.New("the overriding headers are missing")
		}
		return nil
	}
	mux := http.NewServeMux()
	for name, body := range map[string][]byte{"config": config, "contents": contents} {
		serve := func(check func(*http.Request) error, b []byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if check != nil {
					if err := check(r); err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
				}
				w.Write(b)
			}
		}
		mux.HandleFunc("/"+name, serve(nil, body))
		mux.HandleFunc("/"+name+"_compressed", serve(nil, gz(body)))
		mux.HandleFunc("/"+name+"_headers", serve(headers, body))
		mux.HandleFunc("/"+name+"_headers_overwrite", serve(overwritten, body))
		mux.HandleFunc("/"+name+"_headers_redirected", serve(redirected, body))
		target := "http://" + srv.http + "/" + name + "_headers_redirected"
		mux.HandleFunc("/"+name+"_headers_redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target, http.StatusFound)
		})
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.tftp = pc.LocalAddr().String()
	t.Cleanup(func() { pc.Close() })
	go serveTFTP(pc, func(name string) []byte {
		switch {
		case strings.Contains(name, "contents"):
			return contents
		case strings.Contains(name, "config"):
			return config
		}
		return nil
	})
	return srv
}

// serveTFTP answers TFTP read requests (RFC 1350, without options, which
// a client must accept: RFC 2347) from pc until it is closed: each from a
// socket of its own, in 512-byte blocks, each sent until acknowledged.
func serveTFTP(pc net.PacketConn, file func(name string) []byte) {
	buf := make([]byte, 1500)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if n < 4 || binary.BigEndian.Uint16(buf) != 1 { // RRQ
			continue
		}
		name, _, _ := strings.Cut(string(buf[2:n]), "\x00")
		go func(name string, addr net.Addr) {
			c, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				return
			}
			defer c.Close()
			data := file(name)
			if data == nil {
				msg := append([]byte{0, 5, 0, 1}, "File not found\x00"...) // ERROR 1
				c.WriteTo(msg, addr)
				return
			}
			ack := make([]byte, 516)
			for block := 1; ; block++ {
				chunk := data[min(len(data), (block-1)*512):min(len(data), block*512)]
				pkt := binary.BigEndian.AppendUint16([]byte{0, 3}, uint16(block))
				pkt = append(pkt, chunk...)
				acked := false
				for try := 0; try < 5 && !acked; try++ {
					c.WriteTo(pkt, addr)
					c.SetReadDeadline(time.Now().Add(2 * time.Second))
					n, _, err := c.ReadFrom(ack)
					acked = err == nil && n >= 4 && binary.BigEndian.Uint16(ack) == 4 && int(binary.BigEndian.Uint16(ack[2:])) == block
				}
				if !acked || len(chunk) < 512 {
					return
				}
			}
		}(name, addr)
	}
}
