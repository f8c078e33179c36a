package conformance_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The subset of the Ignition 3.x config the fixtures use, written out with
// Go values so that modes read as octal and data URLs are computed.
type config struct {
	Ignition        version          `json:"ignition"`
	Storage         *storage         `json:"storage,omitempty"`
	Systemd         *systemd         `json:"systemd,omitempty"`
	Passwd          *passwd          `json:"passwd,omitempty"`
	KernelArguments *kernelArguments `json:"kernelArguments,omitempty"`
	// Children is written as ignition.config.
	Children *configRefs `json:"-"`
}

type version struct {
	Version string `json:"version"`
}

// configRefs are child configs: ignition.config.merge and replace.
type configRefs struct {
	Merge   []resource `json:"merge,omitempty"`
	Replace *resource  `json:"replace,omitempty"`
}

type storage struct {
	Files       []file      `json:"files,omitempty"`
	Directories []directory `json:"directories,omitempty"`
	Links       []link      `json:"links,omitempty"`
}

type file struct {
	Path      string     `json:"path"`
	Overwrite *bool      `json:"overwrite,omitempty"`
	Mode      *int       `json:"mode,omitempty"`
	User      *owner     `json:"user,omitempty"`
	Group     *owner     `json:"group,omitempty"`
	Contents  *resource  `json:"contents,omitempty"`
	Append    []resource `json:"append,omitempty"`
}

type directory struct {
	Path      string `json:"path"`
	Overwrite *bool  `json:"overwrite,omitempty"`
	Mode      *int   `json:"mode,omitempty"`
	User      *owner `json:"user,omitempty"`
	Group     *owner `json:"group,omitempty"`
}

type link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
	Hard   bool   `json:"hard,omitempty"`
	User   *owner `json:"user,omitempty"`
	Group  *owner `json:"group,omitempty"`
}

type owner struct {
	ID   *int   `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

type resource struct {
	Source       string        `json:"source,omitempty"`
	Compression  string        `json:"compression,omitempty"`
	Verification *verification `json:"verification,omitempty"`
}

type verification struct {
	Hash string `json:"hash"`
}

type systemd struct {
	Units []unit `json:"units"`
}

type unit struct {
	Name     string   `json:"name"`
	Enabled  *bool    `json:"enabled,omitempty"`
	Mask     *bool    `json:"mask,omitempty"`
	Contents *string  `json:"contents,omitempty"`
	Dropins  []dropin `json:"dropins,omitempty"`
}

type dropin struct {
	Name     string  `json:"name"`
	Contents *string `json:"contents,omitempty"`
}

type passwd struct {
	Users []user `json:"users"`
}

type user struct {
	Name              string   `json:"name"`
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`
}

type kernelArguments struct {
	ShouldExist    []string `json:"shouldExist,omitempty"`
	ShouldNotExist []string `json:"shouldNotExist,omitempty"`
}

func (c config) json() []byte {
	var v any = c
	if c.Children != nil {
		type plain config // without this method
		v = struct {
			Ignition struct {
				Version string      `json:"version"`
				Config  *configRefs `json:"config"`
			} `json:"ignition"`
			plain
		}{Ignition: struct {
			Version string      `json:"version"`
			Config  *configRefs `json:"config"`
		}{c.Ignition.Version, c.Children}, plain: plain(c)}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // plain values: cannot happen
	}
	return b
}

// withVersion returns c declaring spec v.
func (c config) withVersion(v string) config {
	c.Ignition.Version = v
	return c
}

func ptr[T any](v T) *T { return &v }

// mode is a declared mode, written in octal at the call site.
func mode(m int) *int { return &m }

func uid(id int) *owner        { return &owner{ID: &id} }
func named(name string) *owner { return &owner{Name: name} }

// percentURL is a data URL with every byte outside RFC 3986's unreserved set
// percent-encoded.
func percentURL(s string) *resource {
	var b bytes.Buffer
	b.WriteString("data:,")
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return &resource{Source: b.String()}
}

// plainURL is a data URL carrying s as is; s must need no escaping.
func plainURL(s string) *resource { return &resource{Source: "data:," + s} }

func base64URL(s string) *resource {
	return &resource{Source: "data:;base64," + base64.StdEncoding.EncodeToString([]byte(s))}
}

func gzipURL(s string) *resource {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return &resource{Source: "data:;base64," + base64.StdEncoding.EncodeToString(b.Bytes()), Compression: "gzip"}
}

// remote is a source drift-monitor must never fetch; hash may be empty.
func remote(url, hash string) *resource {
	r := &resource{Source: url}
	if hash != "" {
		r.Verification = &verification{Hash: hash}
	}
	return r
}

func sha512Of(s string) string {
	sum := sha512.Sum512([]byte(s))
	return "sha512-" + hex.EncodeToString(sum[:])
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + hex.EncodeToString(sum[:])
}

func serviceUnit(desc string) *string {
	return ptr("[Unit]\nDescription=" + desc + "\n\n[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n")
}

// fixture is a desired config and the root Ignition writes for it.
type fixture struct {
	// apply is the config Ignition writes.
	apply config
	// declare is the config drift-monitor is given; the zero value means apply.
	declare *config
	// prepare is what the host has before Ignition runs.
	prepare prepare
	// fixup does, after Ignition, what Ignition 2.14 cannot; each use says why.
	fixup func(t *testing.T, root string)
}

// provision writes a fresh root for f and the declared config next to it
// (outside the root), and returns both paths.
func (f fixture) provision(t *testing.T) (root, cfgFile string) {
	t.Helper()
	root = applyIgnition(t, f.apply.json(), f.prepare)
	if f.fixup != nil {
		f.fixup(t, root)
	}
	declared := f.apply
	if f.declare != nil {
		declared = *f.declare
	}
	cfgFile = filepath.Join(filepath.Dir(root), "declared.ign")
	if err := os.WriteFile(cfgFile, declared.json(), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, cfgFile
}

// Markers in the secret file's content: they must never appear in output.
const (
	secretOld = "OLD-SECRET-MARKER-q8Zr7c1e"
	secretNew = "NEW-SECRET-MARKER-k2Wx94bd"
)

// SSH keys: any text will do, Ignition does not parse them.
const (
	coreKey1  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx7conformanceCoreKeyOne core@conformance"
	coreKey2  = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABconformanceCoreKeyTwo core@laptop"
	aliceKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAliceconformanceKey alice@conformance"
	daveKey   = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYconformanceDave dave@conformance"
	motdText  = "Welcome to a host watched by drift-monitor!\n"
	toolText  = "#!/bin/sh\nexit 0\n"
	fooUnit   = "foo.service"
	unitDir   = "/etc/systemd/system"
	coreKeys  = "/home/core/.ssh/authorized_keys.d/ignition"
	aliceKeys = "/home/alice/.ssh/authorized_keys.d/ignition"
)

// base is the main fixture (spec 3.3.0): most mutations start from it.
var base = fixture{apply: config{
	Ignition: version{"3.3.0"},
	Storage: &storage{
		Files: []file{
			{Path: "/etc/motd", Mode: mode(0o644), Contents: percentURL(motdText)},
			{Path: "/etc/plain.conf", Mode: mode(0o644), Contents: plainURL("plain")},
			{Path: "/etc/b64.conf", Mode: mode(0o644), Contents: base64URL("key = value\nother = 2\n")},
			{Path: "/etc/gz.conf", Mode: mode(0o644), Contents: gzipURL("compressed once, written decompressed\n")},
			{Path: "/etc/app.conf", Mode: mode(0o644), Contents: percentURL("[app]\nbase = 1\n"),
				Append: []resource{*percentURL("fragment = 1\n"), *base64URL("fragment = 2\n")}},
			{Path: "/etc/appended.conf", Mode: mode(0o644), Append: []resource{*percentURL("only appended\n")}},
			// overwrite: true with no source is invalid in every 3.x spec
			// ("overwrite must be false if source is unspecified", Ignition
			// 2.14 and drift-monitor alike): an empty data URL empties.
			{Path: "/etc/emptied.conf", Mode: mode(0o644), Overwrite: ptr(true), Contents: plainURL("")},
			{Path: "/etc/secret.key", Mode: mode(0o600), Contents: percentURL("token=" + secretOld + "\n")},
			{Path: "/etc/linked.txt", Mode: mode(0o644), Contents: percentURL("one inode, two names\n")},
			{Path: "/usr/local/bin/tool", Mode: mode(0o755), Contents: percentURL(toolText)},
			{Path: "/var/lib/app/by-id", Mode: mode(0o640), User: uid(1000), Group: uid(1000), Contents: plainURL("by-id")},
			{Path: "/var/lib/app/by-name", Mode: mode(0o664), User: named("alice"), Group: named("core"), Contents: plainURL("by-name")},
		},
		Directories: []directory{
			{Path: "/var/lib/app", Mode: mode(0o750), User: named("core"), Group: named("core")},
			{Path: "/var/spool/drift", Mode: mode(0o700)},
			{Path: "/srv/shared", Mode: mode(0o775), User: uid(1001), Group: named("alice")},
		},
		Links: []link{
			{Path: "/etc/motd.link", Target: "motd"},
			{Path: "/etc/app.link", Target: "/etc/app.conf"},
			{Path: "/etc/linked.hard", Target: "/etc/linked.txt", Hard: true},
			{Path: "/var/lib/app/by-id.link", Target: "by-id", User: named("core"), Group: named("core")},
		},
	},
	Systemd: &systemd{Units: []unit{
		{Name: fooUnit, Enabled: ptr(true), Contents: serviceUnit("enabled by Ignition"),
			Dropins: []dropin{{Name: "10-nice.conf", Contents: ptr("[Service]\nNice=5\n")}}},
		{Name: "dis.service", Enabled: ptr(false), Contents: serviceUnit("disabled by Ignition")},
		{Name: "masked.service", Mask: ptr(true)},
		{Name: "unmasked.service", Mask: ptr(false)},
		// A vendor unit (in /usr/lib) changed only through a drop-in.
		{Name: "vendor.service", Dropins: []dropin{{Name: "50-override.conf", Contents: ptr("[Service]\nRestart=always\n")}}},
	}},
	Passwd: &passwd{Users: []user{{Name: "core", SSHAuthorizedKeys: []string{coreKey1, coreKey2}}}},
}}

// v30 uses spec 3.0.0 and alice's keys.
var v30 = fixture{apply: config{
	Ignition: version{"3.0.0"},
	Storage: &storage{
		Files: []file{
			{Path: "/etc/v30/b64", Mode: mode(0o640), Group: named("alice"), Contents: base64URL("spec 3.0.0\n")},
			{Path: "/etc/v30/gz", Mode: mode(0o644), Contents: gzipURL("gzip in 3.0.0\n")},
			{Path: "/etc/v30/app", Mode: mode(0o644), Contents: plainURL("head"), Append: []resource{*plainURL("tail")}},
		},
		Directories: []directory{{Path: "/etc/v30/dir", Mode: mode(0o755), User: named("alice")}},
		Links:       []link{{Path: "/etc/v30/link", Target: "b64"}},
	},
	Systemd: &systemd{Units: []unit{
		{Name: "v30.service", Enabled: ptr(true), Contents: serviceUnit("spec 3.0.0"),
			Dropins: []dropin{{Name: "override.conf", Contents: ptr("[Unit]\nAfter=network.target\n")}}},
		{Name: "v30-masked.service", Mask: ptr(true)},
	}},
	Passwd: &passwd{Users: []user{{Name: "alice", SSHAuthorizedKeys: []string{aliceKey}}}},
}}

// v31 uses spec 3.1.0: overwrite with a source, a media type, an absolute
// symlink and a hard link.
var v31 = fixture{apply: config{
	Ignition: version{"3.1.0"},
	Storage: &storage{
		Files: []file{
			{Path: "/etc/v31/typed", Overwrite: ptr(true), Mode: mode(0o644), User: uid(1000),
				Contents: &resource{Source: "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte("media type\n"))}},
			{Path: "/etc/v31/empty", Overwrite: ptr(true), Mode: mode(0o600), Contents: plainURL("")},
		},
		Directories: []directory{{Path: "/etc/v31", Mode: mode(0o755)}},
		Links: []link{
			{Path: "/etc/v31/abs", Target: "/etc/v31/typed"},
			{Path: "/etc/v31/hard", Target: "/etc/v31/typed", Hard: true},
		},
	},
	Systemd: &systemd{Units: []unit{
		{Name: "v31.service", Enabled: ptr(false), Contents: serviceUnit("spec 3.1.0")},
		{Name: "v31-unmasked.service", Mask: ptr(false)},
	}},
}}

// v32 uses spec 3.2.0 and a user Ignition creates (useradd --root) and then
// owns a file by name.
var v32 = fixture{apply: config{
	Ignition: version{"3.2.0"},
	Storage: &storage{
		Files:       []file{{Path: "/var/lib/dave/notes", Mode: mode(0o640), User: named("dave"), Group: named("users"), Contents: percentURL("dave's\n")}},
		Directories: []directory{{Path: "/var/lib/dave", Mode: mode(0o700), User: named("dave")}},
	},
	Systemd: &systemd{Units: []unit{
		{Name: "v32.service", Enabled: ptr(true), Contents: serviceUnit("spec 3.2.0"),
			Dropins: []dropin{{Name: "a.conf", Contents: ptr("[Service]\nNice=1\n")}, {Name: "b.conf", Contents: ptr("[Service]\nNice=2\n")}}},
	}},
	Passwd: &passwd{Users: []user{{Name: "dave", SSHAuthorizedKeys: []string{daveKey}}}},
}}

// Contents of the files the remote fixture declares with remote sources.
const (
	verifiedText   = "fetched once, verified by sha512\n"
	verified256    = "fetched once, verified by sha256\n"
	unverifiedText = "fetched once, never verified\n"
)

// remoteFixture: Ignition cannot fetch without a network, so a data-URL
// config writes the files, and drift-monitor is told they came from https
// sources with (and one without) a verification hash.
var remoteFixture = fixture{
	apply: config{
		Ignition: version{"3.1.0"},
		Storage: &storage{Files: []file{
			{Path: "/opt/remote/verified.bin", Mode: mode(0o644), Contents: percentURL(verifiedText)},
			{Path: "/opt/remote/verified256.bin", Mode: mode(0o644), Contents: percentURL(verified256)},
			{Path: "/opt/remote/unverified.bin", Mode: mode(0o644), Contents: percentURL(unverifiedText)},
		}},
	},
	declare: &config{
		Ignition: version{"3.2.0"},
		Storage: &storage{Files: []file{
			{Path: "/opt/remote/verified.bin", Mode: mode(0o644), Contents: remote("https://example.invalid/verified.bin", sha512Of(verifiedText))},
			{Path: "/opt/remote/verified256.bin", Mode: mode(0o644), Contents: remote("https://example.invalid/verified256.bin", sha256Of(verified256))},
			{Path: "/opt/remote/unverified.bin", Mode: mode(0o644), Contents: remote("https://example.invalid/unverified.bin", "")},
		}},
	},
}

// specialBits declares setuid, setgid and sticky bits. Specs before 3.4.0
// cannot carry them (Ignition 2.14 warns and drops them: os.FileMode(06755)
// keeps only the permission bits), so Ignition applies the config as
// 3.4.0-experimental — which Ignition 2.14 honours — and drift-monitor, whose
// Ignition packages no longer know that experimental spec, reads the same
// config as 3.4.0.
var specialBitsConfig = config{
	Ignition: version{"3.4.0-experimental"},
	Storage: &storage{
		Files: []file{
			{Path: "/usr/local/bin/suid-root", Mode: mode(0o4755), Contents: percentURL(toolText)},
			{Path: "/usr/local/bin/suid-core", Mode: mode(0o4750), User: named("core"), Group: named("core"), Contents: percentURL(toolText)},
			{Path: "/usr/local/bin/sgid", Mode: mode(0o2755), Group: named("alice"), Contents: percentURL(toolText)},
		},
		Directories: []directory{
			{Path: "/var/tmp/sticky", Mode: mode(0o1777)},
			{Path: "/srv/team", Mode: mode(0o2775), Group: named("core")},
			{Path: "/srv/drop", Mode: mode(0o3770), User: named("alice"), Group: named("alice")},
		},
	},
}

// specialBitFiles are the files of specialBitsConfig whose setuid or setgid
// bit Ignition 2.14 loses: it chmods, then chowns (even to root:root when no
// owner is declared), and the kernel clears setuid, and setgid on a
// group-executable file, on chown.
var specialBitFiles = []string{"/usr/local/bin/suid-root", "/usr/local/bin/suid-core", "/usr/local/bin/sgid"}

// specialBitsAsIgnition214 is the root exactly as Ignition 2.14 leaves it.
var specialBitsAsIgnition214 = fixture{apply: specialBitsConfig, declare: ptr(specialBitsConfig.withVersion("3.4.0"))}

// specialBits is the root as Ignition 2.15 and later leave it: they chown,
// then chmod. The fixup redoes the chmod on the files whose bits 2.14 lost.
var specialBits = fixture{
	apply:   specialBitsConfig,
	declare: ptr(specialBitsConfig.withVersion("3.4.0")),
	fixup: func(t *testing.T, root string) {
		for _, f := range specialBitsConfig.Storage.Files {
			chmod(t, root, f.Path, uint32(*f.Mode))
		}
	},
}

// The base config at the specs the Ignition go.mod pins writes (writerFor):
// the same entries, the writer on today's hosts.
var (
	base34 = fixture{apply: base.apply.withVersion("3.4.0")}
	base35 = fixture{apply: base.apply.withVersion("3.5.0")}
	base36 = fixture{apply: base.apply.withVersion("3.6.0")}
)

// specialBits36 is specialBitsConfig at spec 3.6.0, which the pinned
// Ignition applies as declared (v2.27.0 config/v3_6/types/mode.go accepts
// the bits; internal/exec/util/file.go chowns, then chmods): no fixup.
var specialBits36 = fixture{apply: specialBitsConfig.withVersion("3.6.0")}

// specialBitsMasked is specialBitsConfig at spec 3.4.0 written by the
// pinned Ignition, which drops the bits when it translates the config to
// 3.6.0 (config/v3_6/translate/translate.go).
var specialBitsMasked = fixture{apply: specialBitsConfig.withVersion("3.4.0")}

// kernelArgs declares kernel arguments, which only a live host can show.
var kernelArgs = fixture{apply: config{
	Ignition:        version{"3.3.0"},
	Storage:         &storage{Files: []file{{Path: "/etc/kargs-witness", Mode: mode(0o644), Contents: plainURL("x")}}},
	KernelArguments: &kernelArguments{ShouldExist: []string{"drift_monitor.conformance=1"}, ShouldNotExist: []string{"quiet"}},
}}

// preexisting declares nodes the image holds before Ignition runs, without
// a mode or owner where Ignition keeps the existing node's (append only, no
// contents, a directory without overwrite), next to ones it creates afresh.
var preexisting = fixture{prepare: prepare{
	before: func(t *testing.T, root string) {
		mustMkdir(t, at(root, "/etc/pre"), 0o755)
		for _, n := range []struct {
			path     string
			dir      bool
			mode     os.FileMode
			uid, gid int
		}{
			{"/etc/pre/appended", false, 0o600, 1000, 1000},
			{"/etc/pre/kept", false, 0o640, 1001, 1000},
			{"/etc/pre/kept-mode", false, 0o644, 1000, 1001},
			{"/etc/pre/owned", false, 0o660, 1001, 1001},
			{"/var/pre", true, 0o700, 1000, 1000},
			{"/var/pre-owned", true, 0o750, 1001, 1001},
			{"/var/pre-replaced", true, 0o700, 1000, 1000},
		} {
			if n.dir {
				mustMkdir(t, at(root, n.path), n.mode)
			} else {
				mustWrite(t, at(root, n.path), "from the image\n", n.mode)
			}
			chmod(t, root, n.path, uint32(n.mode))
			chown(t, root, n.path, n.uid, n.gid)
		}
	}},
	apply: config{
		Ignition: version{"3.3.0"},
		Storage: &storage{
			Files: []file{
				{Path: "/etc/pre/appended", Append: []resource{*percentURL("from Ignition\n")}},
				{Path: "/etc/pre/kept"},
				{Path: "/etc/pre/kept-mode", Mode: mode(0o600)},
				{Path: "/etc/pre/owned", User: named("core")},
				{Path: "/etc/pre/new-append", Append: []resource{*percentURL("created by appending\n")}},
				{Path: "/etc/pre/new-empty"},
			},
			Directories: []directory{
				{Path: "/var/pre"},
				{Path: "/var/pre-owned", User: named("core")},
				{Path: "/var/pre-replaced", Overwrite: ptr(true)},
			},
		},
	},
}

// unitsWithoutFiles declares units Ignition writes no file for: empty
// contents (an empty drop-in is written) and enablement only, with no unit
// file anywhere (Ignition writes a preset line, which preset-all skips).
var unitsWithoutFiles = fixture{apply: config{
	Ignition: version{"3.3.0"},
	Systemd: &systemd{Units: []unit{
		{Name: "empty.service", Enabled: ptr(true), Contents: ptr(""),
			Dropins: []dropin{{Name: "10-empty.conf", Contents: ptr("")}}},
		{Name: "ghost.service", Enabled: ptr(true)},
	}},
}}

// hardLinkToSymlink: Ignition's os.Link does not follow a symlink target, so
// the hard link is a second name of the symlink's inode.
var hardLinkToSymlink = fixture{apply: config{
	Ignition: version{"3.3.0"},
	Storage: &storage{
		Files: []file{{Path: "/etc/hl/real", Mode: mode(0o644), Contents: plainURL("real")}},
		Links: []link{
			{Path: "/etc/hl/sym", Target: "real"},
			{Path: "/etc/hl/deeper/hard", Target: "/etc/hl/sym", Hard: true},
		},
	},
}}

// rhel8Keys is a RHEL 8 host (RHCOS 4.12 and older are alike): its Ignition
// build writes SSH keys to ~/.ssh/authorized_keys
// (WRITE_AUTHORIZED_KEYS_FRAGMENT false, internal/distro/distro.go), which
// Ignition 2.14 takes from its environment too.
var rhel8Keys = fixture{
	prepare: prepare{
		before: func(t *testing.T, root string) {
			mustMkdir(t, at(root, "/usr/lib"), 0o755)
			mustWrite(t, at(root, "/usr/lib/os-release"), "NAME=\"Red Hat Enterprise Linux\"\nID=\"rhel\"\nVERSION_ID=\"8.6\"\n", 0o644)
		},
		env: []string{"IGNITION_WRITE_AUTHORIZED_KEYS_FRAGMENT=false"},
	},
	apply: config{
		Ignition: version{"3.3.0"},
		Passwd:   &passwd{Users: []user{{Name: "core", SSHAuthorizedKeys: []string{coreKey1, coreKey2}}}},
	},
}
