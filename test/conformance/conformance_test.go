package conformance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Expected items.

func drifted(kind, entry, path string) key { return key{Kind: kind, Entry: entry, Path: path} }

func unitDrift(kind, entry, unit, path string) key {
	return key{Kind: kind, Entry: entry, Path: path, Unit: unit}
}

func keysDrift(kind, user, path string) key {
	return key{Kind: kind, Entry: "sshkeys", Path: path, User: user}
}

const (
	fooPath    = unitDir + "/foo.service"
	fooDropin  = unitDir + "/foo.service.d/10-nice.conf"
	maskedPath = unitDir + "/masked.service"
)

// TestCleanAfterIgnition: a root fresh from Ignition (and first boot's
// preset) matches the config it was written from.
func TestCleanAfterIgnition(t *testing.T) {
	requireTier(t)
	tests := []struct {
		name    string
		fixture fixture
		// notices that must be reported (others are logged).
		notices []key
	}{
		{name: "spec 3.3.0, every kind of entry", fixture: base},
		{name: "spec 3.0.0", fixture: v30},
		{name: "spec 3.1.0", fixture: v31},
		{name: "spec 3.2.0, user created by Ignition", fixture: v32},
		{name: "spec 3.4.0, every kind of entry, by the pinned Ignition", fixture: base34},
		{name: "spec 3.5.0, every kind of entry, by the pinned Ignition", fixture: base35},
		{name: "spec 3.6.0, every kind of entry, by the pinned Ignition", fixture: base36},
		{name: "spec 3.6.0: setuid, setgid and sticky bits applied by the pinned Ignition", fixture: specialBits36},
		{name: "spec 3.4.0: special bits masked by the pinned Ignition", fixture: specialBitsMasked},
		{name: "remote sources with and without verification.hash", fixture: remoteFixture,
			notices: []key{drifted("unverifiable", "file", "/opt/remote/unverified.bin")}},
		{name: "setuid, setgid and sticky bits, as Ignition 2.15+ writes them", fixture: specialBits},
		{name: "nodes the image held before Ignition: their mode and owner kept", fixture: preexisting},
		{name: "units without a unit file: empty contents, enablement only", fixture: unitsWithoutFiles},
		{name: "a hard link to a symbolic link", fixture: hardLinkToSymlink},
		{name: "SSH keys in ~/.ssh/authorized_keys on RHEL 8", fixture: rhel8Keys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, cfg := tt.fixture.provision(t)
			exit, rep := check(t, root, cfg)
			wantClean(t, root, exit, rep)
			got := keys(rep.Notices)
			for _, n := range tt.notices {
				if !slices.Contains(got, n) {
					t.Errorf("notices %v lack %v", got, n)
				}
			}
			t.Logf("checked %d entries; notices %v", rep.Checked, got)
		})
	}
}

// TestSpecialBitsRightAfterIgnition214 documents what Ignition 2.14 really
// writes for setuid, setgid and sticky bits, and that drift-monitor follows
// it: every spec before 3.6.0 leaves them unapplied by some Ignition release
// (2.14 drops them for 3.3.0 and loses setuid to chown for 3.4.0; 2.22 and
// later mask them, config/v3_6/translate/translate.go), so a declared
// special bit may be absent on disk.
func TestSpecialBitsRightAfterIgnition214(t *testing.T) {
	requireTier(t)
	tests := []struct {
		name    string
		fixture fixture
		// lost lists the paths whose special bits Ignition must have dropped;
		// if it stops doing so, this test says so before drift-monitor is blamed.
		lost []string
	}{
		{
			// Ignition 2.14 warns "setuid/setgid/sticky bits are not supported
			// in spec versions older than 3.4.0" and chmods with the
			// permission bits only.
			name:    "spec 3.3.0: every special bit dropped",
			fixture: fixture{apply: specialBitsConfig.withVersion("3.3.0")},
			lost:    append(slices.Clone(specialBitFiles), "/var/tmp/sticky", "/srv/team", "/srv/drop"),
		},
		{
			// chmod, then chown: the kernel clears setuid (and setgid on a
			// group-executable file) on chown, even to root:root when no
			// owner is declared. Directories keep theirs.
			name:    "spec 3.4.0-experimental: setuid and setgid lost on files",
			fixture: specialBitsAsIgnition214,
			lost:    specialBitFiles,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, cfg := tt.fixture.provision(t)
			for _, p := range tt.lost {
				if m := lstatMode(t, root, p); m&0o7000 != 0 {
					t.Errorf("Ignition kept special bits on %s (mode %04o): update this test", p, m)
				}
			}
			exit, rep := check(t, root, cfg)
			wantClean(t, root, exit, rep)
		})
	}
}

// TestSpecialBitsByPinnedIgnition documents what the Ignition go.mod pins
// writes for special bits: at 3.6.0 every declared bit, at 3.4.0 none (it
// masks them when translating to 3.6.0), so that a change in the writer
// shows here before drift-monitor's model is blamed.
func TestSpecialBitsByPinnedIgnition(t *testing.T) {
	requireTier(t)
	all := append(slices.Clone(specialBitFiles), "/var/tmp/sticky", "/srv/team", "/srv/drop")
	t.Run("3.6.0 applies them", func(t *testing.T) {
		root, _ := specialBits36.provision(t)
		for _, f := range specialBitsConfig.Storage.Files {
			if m := lstatMode(t, root, f.Path); m&0o7777 != uint32(*f.Mode) {
				t.Errorf("%s: mode %04o, declared %04o: update this test", f.Path, m&0o7777, *f.Mode)
			}
		}
		for _, d := range specialBitsConfig.Storage.Directories {
			if m := lstatMode(t, root, d.Path); m&0o7777 != uint32(*d.Mode) {
				t.Errorf("%s: mode %04o, declared %04o: update this test", d.Path, m&0o7777, *d.Mode)
			}
		}
	})
	t.Run("3.4.0 masks them", func(t *testing.T) {
		root, _ := specialBitsMasked.provision(t)
		for _, p := range all {
			if m := lstatMode(t, root, p); m&0o7000 != 0 {
				t.Errorf("Ignition kept special bits on %s (mode %04o) at 3.4.0: update this test", p, m)
			}
		}
	})
}

// TestMutations: each mutation of a fresh Ignition-written root is reported
// as exactly the drifts it causes.
func TestMutations(t *testing.T) {
	requireTier(t)
	for _, tt := range mutations() {
		t.Run(tt.name, func(t *testing.T) {
			root, cfg := tt.fixture.provision(t)
			tt.mutate(t, root)
			exit, rep := check(t, root, cfg)
			wantDrift(t, root, exit, rep, tt.want)
		})
	}
}

// mutation is a change to a fresh Ignition-written root, and the drift it
// causes.
type mutation struct {
	name    string
	fixture fixture
	mutate  func(t *testing.T, root string)
	want    []key
}

// mutations are the changes TestMutations and TestReconcile make.
func mutations() []mutation {
	return []mutation{
		// Files.
		{"content changed, same size", base, func(t *testing.T, r string) {
			rewrite(t, r, "/etc/motd", strings.Replace(motdText, "!", "?", 1))
		}, []key{drifted("content", "file", "/etc/motd")}},
		{"content changed, different size", base, func(t *testing.T, r string) {
			appendTo(t, r, "/etc/b64.conf", "extra = 3\n")
		}, []key{drifted("content", "file", "/etc/b64.conf")}},
		{"gzip-declared content changed", base, func(t *testing.T, r string) {
			rewrite(t, r, "/etc/gz.conf", "compressed once, written decompressed!\n")
		}, []key{drifted("content", "file", "/etc/gz.conf")}},
		{"an append fragment lost", base, func(t *testing.T, r string) {
			rewrite(t, r, "/etc/app.conf", "[app]\nbase = 1\nfragment = 1\n")
		}, []key{drifted("content", "file", "/etc/app.conf")}},
		{"append-only file lost its fragment", base, func(t *testing.T, r string) {
			rewrite(t, r, "/etc/appended.conf", "something else\n")
		}, []key{drifted("content", "file", "/etc/appended.conf")}},
		{"overwritten-empty file gained content", base, func(t *testing.T, r string) {
			appendTo(t, r, "/etc/emptied.conf", "x\n")
		}, []key{drifted("content", "file", "/etc/emptied.conf")}},
		{"mode 0600", base, func(t *testing.T, r string) {
			chmod(t, r, "/etc/motd", 0o600)
		}, []key{drifted("mode", "file", "/etc/motd")}},
		{"setgid added to a file declared 04755 (spec 3.4.0)", specialBits, func(t *testing.T, r string) {
			chmod(t, r, "/usr/local/bin/suid-root", 0o6755)
		}, []key{drifted("mode", "file", "/usr/local/bin/suid-root")}},
		{"sticky directory declared 01777 (spec 3.3.0) made group-writable only", fixture{apply: specialBitsConfig.withVersion("3.3.0")}, func(t *testing.T, r string) {
			chmod(t, r, "/var/tmp/sticky", 0o1775)
		}, []key{drifted("mode", "directory", "/var/tmp/sticky")}},
		{"executable bit removed", base, func(t *testing.T, r string) {
			chmod(t, r, "/usr/local/bin/tool", 0o644)
		}, []key{drifted("mode", "file", "/usr/local/bin/tool")}},
		{"owner changed to 1001", base, func(t *testing.T, r string) {
			chown(t, r, "/etc/motd", 1001, -1)
		}, []key{drifted("owner", "file", "/etc/motd")}},
		{"owner declared by name changed", base, func(t *testing.T, r string) {
			chown(t, r, "/var/lib/app/by-name", 1000, -1)
		}, []key{drifted("owner", "file", "/var/lib/app/by-name")}},
		{"group changed", base, func(t *testing.T, r string) {
			chown(t, r, "/var/lib/app/by-id", -1, 1001)
		}, []key{drifted("group", "file", "/var/lib/app/by-id")}},
		{"a group declared by name no longer in the root's group file", base, func(t *testing.T, r string) {
			data, err := os.ReadFile(filepath.Join(r, "etc/group"))
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, l := range strings.SplitAfter(string(data), "\n") {
				if !strings.HasPrefix(l, "alice:") {
					kept = append(kept, l)
				}
			}
			rewrite(t, r, "/etc/group", strings.Join(kept, ""))
		}, []key{drifted("group", "directory", "/srv/shared")}},
		{"mode and owner changed at once", base, func(t *testing.T, r string) {
			chmod(t, r, "/etc/plain.conf", 0o666)
			chown(t, r, "/etc/plain.conf", 1000, -1)
		}, []key{drifted("mode", "file", "/etc/plain.conf"), drifted("owner", "file", "/etc/plain.conf")}},
		{"file replaced by a directory", base, func(t *testing.T, r string) {
			remove(t, r, "/etc/plain.conf")
			mkdir(t, r, "/etc/plain.conf")
		}, []key{drifted("type", "file", "/etc/plain.conf")}},
		{"file replaced by a symlink to an identical file", base, func(t *testing.T, r string) {
			rename(t, r, "/etc/b64.conf", "/etc/b64.conf.orig")
			symlink(t, r, "b64.conf.orig", "/etc/b64.conf")
		}, []key{drifted("type", "file", "/etc/b64.conf")}},
		// Nodes that existed before Ignition ran: what is declared still is.
		{"kept file: declared mode changed", preexisting, func(t *testing.T, r string) {
			chmod(t, r, "/etc/pre/kept-mode", 0o644)
		}, []key{drifted("mode", "file", "/etc/pre/kept-mode")}},
		{"kept file: declared owner changed", preexisting, func(t *testing.T, r string) {
			chown(t, r, "/etc/pre/owned", 1001, -1)
		}, []key{drifted("owner", "file", "/etc/pre/owned")}},
		{"kept file: appended fragment lost", preexisting, func(t *testing.T, r string) {
			rewrite(t, r, "/etc/pre/appended", "from the image\n")
		}, []key{drifted("content", "file", "/etc/pre/appended")}},
		{"kept directory: declared owner changed", preexisting, func(t *testing.T, r string) {
			chown(t, r, "/var/pre-owned", 1001, -1)
		}, []key{drifted("owner", "directory", "/var/pre-owned")}},
		{"directory replaced by overwrite: Ignition's default mode changed", preexisting, func(t *testing.T, r string) {
			chmod(t, r, "/var/pre-replaced", 0o700)
		}, []key{drifted("mode", "directory", "/var/pre-replaced")}},
		{"empty drop-in of a unit without a file gained content", unitsWithoutFiles, func(t *testing.T, r string) {
			rewrite(t, r, unitDir+"/empty.service.d/10-empty.conf", "[Service]\nNice=1\n")
		}, []key{unitDrift("content", "dropin", "empty.service", unitDir+"/empty.service.d/10-empty.conf")}},
		{"empty drop-in of a unit without a file deleted", unitsWithoutFiles, func(t *testing.T, r string) {
			remove(t, r, unitDir+"/empty.service.d/10-empty.conf")
		}, []key{unitDrift("missing", "dropin", "empty.service", unitDir+"/empty.service.d/10-empty.conf")}},
		{"RHEL 8: a key added to authorized_keys", rhel8Keys, func(t *testing.T, r string) {
			appendTo(t, r, "/home/core/.ssh/authorized_keys", aliceKey+"\n")
		}, []key{keysDrift("content", "core", "/home/core/.ssh/authorized_keys")}},
		{"file deleted", base, func(t *testing.T, r string) {
			remove(t, r, "/etc/gz.conf")
		}, []key{drifted("missing", "file", "/etc/gz.conf")}},

		// Directories.
		{"directory deleted", base, func(t *testing.T, r string) {
			remove(t, r, "/var/spool/drift")
		}, []key{drifted("missing", "directory", "/var/spool/drift")}},
		{"directory replaced by a file", base, func(t *testing.T, r string) {
			remove(t, r, "/var/spool/drift")
			create(t, r, "/var/spool/drift", "not a directory\n")
		}, []key{drifted("type", "directory", "/var/spool/drift")}},
		{"directory mode", base, func(t *testing.T, r string) {
			chmod(t, r, "/srv/shared", 0o755)
		}, []key{drifted("mode", "directory", "/srv/shared")}},
		{"directory owner", base, func(t *testing.T, r string) {
			chown(t, r, "/srv/shared", 0, -1)
		}, []key{drifted("owner", "directory", "/srv/shared")}},
		{"directory group declared by name", base, func(t *testing.T, r string) {
			chown(t, r, "/var/lib/app", -1, 0)
		}, []key{drifted("group", "directory", "/var/lib/app")}},

		// Links.
		{"symlink retargeted", base, func(t *testing.T, r string) {
			retarget(t, r, "/etc/motd.link", "plain.conf")
		}, []key{drifted("target", "link", "/etc/motd.link")}},
		{"relative symlink made absolute (same file, other target)", base, func(t *testing.T, r string) {
			retarget(t, r, "/etc/motd.link", "/etc/motd")
		}, []key{drifted("target", "link", "/etc/motd.link")}},
		{"symlink replaced by a regular file", base, func(t *testing.T, r string) {
			remove(t, r, "/etc/app.link")
			copyFile(t, r, "/etc/app.conf", "/etc/app.link")
		}, []key{drifted("type", "link", "/etc/app.link")}},
		{"symlink deleted", base, func(t *testing.T, r string) {
			remove(t, r, "/etc/app.link")
		}, []key{drifted("missing", "link", "/etc/app.link")}},
		{"symlink owner declared by name changed", base, func(t *testing.T, r string) {
			chown(t, r, "/var/lib/app/by-id.link", 0, -1)
		}, []key{drifted("owner", "link", "/var/lib/app/by-id.link")}},
		{"hard link broken (rm, cp: new inode, same content)", base, func(t *testing.T, r string) {
			remove(t, r, "/etc/linked.hard")
			copyFile(t, r, "/etc/linked.txt", "/etc/linked.hard")
		}, []key{drifted("hardlink", "hardlink", "/etc/linked.hard")}},
		{"hard link target rewritten atomically (the file is fine, the link is not)", base, func(t *testing.T, r string) {
			atomicRewrite(t, r, "/etc/linked.txt")
		}, []key{drifted("hardlink", "hardlink", "/etc/linked.hard")}},
		{"hard link to a symlink replaced by an identical symlink", hardLinkToSymlink, func(t *testing.T, r string) {
			remove(t, r, "/etc/hl/deeper/hard")
			symlink(t, r, "real", "/etc/hl/deeper/hard")
		}, []key{drifted("hardlink", "hardlink", "/etc/hl/deeper/hard")}},
		{"hard link to a symlink replaced by the file it points to", hardLinkToSymlink, func(t *testing.T, r string) {
			remove(t, r, "/etc/hl/deeper/hard")
			copyFile(t, r, "/etc/hl/real", "/etc/hl/deeper/hard")
		}, []key{drifted("type", "hardlink", "/etc/hl/deeper/hard")}},
		{"spec 3.1.0: hard link replaced by a symlink", v31, func(t *testing.T, r string) {
			retarget(t, r, "/etc/v31/hard", "/etc/v31/typed")
		}, []key{drifted("type", "hardlink", "/etc/v31/hard")}},

		// Units.
		{"unit content", base, func(t *testing.T, r string) {
			appendTo(t, r, fooPath, "Alias=bar.service\n")
		}, []key{unitDrift("content", "unit", fooUnit, fooPath)}},
		{"drop-in content", base, func(t *testing.T, r string) {
			rewrite(t, r, fooDropin, "[Service]\nNice=10\n")
		}, []key{unitDrift("content", "dropin", fooUnit, fooDropin)}},
		{"drop-in deleted", base, func(t *testing.T, r string) {
			remove(t, r, fooDropin)
		}, []key{unitDrift("missing", "dropin", fooUnit, fooDropin)}},
		{"drop-in of a vendor unit deleted", base, func(t *testing.T, r string) {
			remove(t, r, unitDir+"/vendor.service.d/50-override.conf")
		}, []key{unitDrift("missing", "dropin", "vendor.service", unitDir+"/vendor.service.d/50-override.conf")}},
		{"unmasked: the /dev/null symlink removed", base, func(t *testing.T, r string) {
			remove(t, r, maskedPath)
		}, []key{unitDrift("unmasked", "mask", "masked.service", maskedPath)}},
		{"unmasked: the /dev/null symlink replaced by a unit file", base, func(t *testing.T, r string) {
			remove(t, r, maskedPath)
			create(t, r, maskedPath, *serviceUnit("no longer masked"))
		}, []key{unitDrift("unmasked", "mask", "masked.service", maskedPath)}},
		{"mask symlink retargeted", base, func(t *testing.T, r string) {
			retarget(t, r, maskedPath, fooPath)
		}, []key{unitDrift("target", "mask", "masked.service", maskedPath)}},
		{"mask: false unit masked", base, func(t *testing.T, r string) {
			symlink(t, r, "/dev/null", unitDir+"/unmasked.service")
		}, []key{unitDrift("masked", "unmask", "unmasked.service", unitDir+"/unmasked.service")}},
		{"spec 3.1.0: mask: false unit masked", v31, func(t *testing.T, r string) {
			systemctl(t, r, "mask", "v31-unmasked.service")
		}, []key{unitDrift("masked", "unmask", "v31-unmasked.service", unitDir+"/v31-unmasked.service")}},
		{"enabled unit disabled (systemctl disable)", base, func(t *testing.T, r string) {
			systemctl(t, r, "disable", fooUnit)
		}, []key{unitDrift("enablement", "enablement", fooUnit, fooPath)}},
		{"disabled unit enabled (systemctl enable)", base, func(t *testing.T, r string) {
			systemctl(t, r, "enable", "dis.service")
		}, []key{unitDrift("enablement", "enablement", "dis.service", unitDir+"/dis.service")}},
		{"spec 3.0.0: drop-in content", v30, func(t *testing.T, r string) {
			appendTo(t, r, unitDir+"/v30.service.d/override.conf", "Wants=network.target\n")
		}, []key{unitDrift("content", "dropin", "v30.service", unitDir+"/v30.service.d/override.conf")}},
		{"spec 3.2.0: enabled unit disabled", v32, func(t *testing.T, r string) {
			systemctl(t, r, "disable", "v32.service")
		}, []key{unitDrift("enablement", "enablement", "v32.service", unitDir+"/v32.service")}},

		// SSH keys.
		{"SSH key file edited", base, func(t *testing.T, r string) {
			appendTo(t, r, coreKeys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIntruder intruder@elsewhere\n")
		}, []key{keysDrift("content", "core", coreKeys)}},
		{"SSH key file deleted", base, func(t *testing.T, r string) {
			remove(t, r, coreKeys)
		}, []key{keysDrift("missing", "core", coreKeys)}},
		{"SSH key file mode", base, func(t *testing.T, r string) {
			chmod(t, r, coreKeys, 0o644)
		}, []key{keysDrift("mode", "core", coreKeys)}},
		{"spec 3.0.0: alice's SSH key file deleted", v30, func(t *testing.T, r string) {
			remove(t, r, aliceKeys)
		}, []key{keysDrift("missing", "alice", aliceKeys)}},
		{"spec 3.2.0: keys of a user Ignition created, edited", v32, func(t *testing.T, r string) {
			rewrite(t, r, "/home/dave/.ssh/authorized_keys.d/ignition", coreKey1+"\n")
		}, []key{keysDrift("content", "dave", "/home/dave/.ssh/authorized_keys.d/ignition")}},
		{"spec 3.2.0: file owned by a user Ignition created, chowned to root", v32, func(t *testing.T, r string) {
			chown(t, r, "/var/lib/dave/notes", 0, -1)
		}, []key{drifted("owner", "file", "/var/lib/dave/notes")}},

		// Remote sources.
		{"sha512-verified content changed", remoteFixture, func(t *testing.T, r string) {
			appendTo(t, r, "/opt/remote/verified.bin", "tampered\n")
		}, []key{drifted("content", "file", "/opt/remote/verified.bin")}},
		{"sha256-verified content changed, same size", remoteFixture, func(t *testing.T, r string) {
			rewrite(t, r, "/opt/remote/verified256.bin", strings.ToUpper(verified256))
		}, []key{drifted("content", "file", "/opt/remote/verified256.bin")}},
		{"unverifiable file: mode still checked", remoteFixture, func(t *testing.T, r string) {
			chmod(t, r, "/opt/remote/unverified.bin", 0o600)
		}, []key{drifted("mode", "file", "/opt/remote/unverified.bin")}},

		// Spec 3.6.0, written by the pinned Ignition.
		{"spec 3.6.0: content changed", base36, func(t *testing.T, r string) {
			rewrite(t, r, "/etc/motd", strings.Replace(motdText, "!", "?", 1))
		}, []key{drifted("content", "file", "/etc/motd")}},
		{"spec 3.6.0: a declared setuid bit cleared", specialBits36, func(t *testing.T, r string) {
			chmod(t, r, "/usr/local/bin/suid-root", 0o755)
		}, []key{drifted("mode", "file", "/usr/local/bin/suid-root")}},
		{"spec 3.6.0: a declared sticky bit cleared", specialBits36, func(t *testing.T, r string) {
			chmod(t, r, "/var/tmp/sticky", 0o777)
		}, []key{drifted("mode", "directory", "/var/tmp/sticky")}},
		{"spec 3.6.0: enabled unit disabled", base36, func(t *testing.T, r string) {
			systemctl(t, r, "disable", fooUnit)
		}, []key{unitDrift("enablement", "enablement", fooUnit, fooPath)}},

		// Special bits: one not declared is drift.
		{"setuid added", base, func(t *testing.T, r string) {
			chmod(t, r, "/usr/local/bin/tool", 0o4755)
		}, []key{drifted("mode", "file", "/usr/local/bin/tool")}},
	}
}

// TestNotDrift: changes the contract says are not drift.
func TestNotDrift(t *testing.T) {
	requireTier(t)
	tests := []struct {
		name    string
		fixture fixture
		mutate  func(t *testing.T, root string)
	}{
		{"mtime and atime changed", base, func(t *testing.T, r string) {
			for _, p := range []string{"/etc/motd", "/etc/secret.key", "/var/lib/app", fooPath, fooDropin, coreKeys, "/etc/linked.hard"} {
				touch(t, r, p)
			}
		}},
		{"chmod and chown to the same mode and owner", base, func(t *testing.T, r string) {
			chmod(t, r, "/etc/motd", 0o644)
			chmod(t, r, "/etc/secret.key", 0o600)
			chmod(t, r, "/var/lib/app", 0o750)
			chown(t, r, "/var/lib/app/by-name", 1001, 1000)
			chown(t, r, "/srv/shared", 1001, 1001)
		}},
		// No spec before 3.6.0 applies them (config/v3_6/translate masks
		// them): a declared special bit may be cleared.
		{"declared special bits removed", specialBits, func(t *testing.T, r string) {
			chmod(t, r, "/usr/local/bin/suid-core", 0o750)
			chmod(t, r, "/usr/local/bin/sgid", 0o755)
			chmod(t, r, "/srv/team", 0o775)
			chmod(t, r, "/var/tmp/sticky", 0o777)
			chmod(t, r, "/srv/drop", 0o2770)
		}},
		{"chmod to the same special bits", specialBits, func(t *testing.T, r string) {
			chmod(t, r, "/usr/local/bin/suid-core", 0o4750)
			chmod(t, r, "/var/tmp/sticky", 0o1777)
		}},
		{"identical rewrite through a new inode (temp file + rename)", base, func(t *testing.T, r string) {
			for _, p := range []string{"/etc/motd", "/etc/secret.key", "/etc/app.conf", "/etc/emptied.conf",
				"/var/lib/app/by-name", "/var/lib/app/by-id", fooPath, fooDropin, coreKeys} {
				atomicRewrite(t, r, p)
			}
		}},
		{"identical rewrite of setuid and setgid files", specialBits, func(t *testing.T, r string) {
			for _, p := range specialBitFiles {
				atomicRewrite(t, r, p)
			}
		}},
		{"identical rewrite of remote-sourced files", remoteFixture, func(t *testing.T, r string) {
			atomicRewrite(t, r, "/opt/remote/verified.bin")
			atomicRewrite(t, r, "/opt/remote/verified256.bin")
		}},
		{"symlink re-created with the same target", base, func(t *testing.T, r string) {
			retarget(t, r, "/etc/motd.link", "motd")
			retarget(t, r, maskedPath, "/dev/null")
		}},
		{"unmanaged files next to declared ones", base, func(t *testing.T, r string) {
			create(t, r, "/etc/unmanaged.conf", "not declared\n")
			create(t, r, "/var/lib/app/extra", "not declared\n")
			create(t, r, "/srv/shared/extra", "not declared\n")
			create(t, r, "/var/spool/drift/job", "not declared\n")
			create(t, r, unitDir+"/other.service", *serviceUnit("not declared"))
			systemctl(t, r, "enable", "other.service")
			create(t, r, "/home/core/.ssh/authorized_keys.d/extra", coreKey2+"\n")
			create(t, r, "/home/core/.ssh/authorized_keys", coreKey1+"\n")
		}},
		{"undeclared mode and owner of kept nodes changed", preexisting, func(t *testing.T, r string) {
			for _, p := range []string{"/etc/pre/appended", "/etc/pre/kept", "/etc/pre/new-empty", "/var/pre"} {
				chmod(t, r, p, 0o700)
				chown(t, r, p, 1001, 1001)
			}
			chown(t, r, "/etc/pre/owned", -1, 0)
			chown(t, r, "/etc/pre/kept-mode", 0, 0)
		}},
		{"an unmanaged drop-in beside a declared one", base, func(t *testing.T, r string) {
			create(t, r, unitDir+"/foo.service.d/99-local.conf", "[Service]\nNice=0\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, cfg := tt.fixture.provision(t)
			tt.mutate(t, root)
			exit, rep := check(t, root, cfg)
			wantClean(t, root, exit, rep)
		})
	}
}

// TestSecretContentNeverShown: a drifted file whose declared mode is not
// world-readable is reported without its old or new bytes, in both formats;
// its world-readable twin, changed the same way, shows a diff — so the test
// cannot pass merely because no format ever shows content.
func TestSecretContentNeverShown(t *testing.T) {
	requireTier(t)
	t.Run("mode 0600", func(t *testing.T) {
		root, cfg := base.provision(t)
		rewrite(t, root, "/etc/secret.key", "token="+secretNew+"\n")
		exit, rep := check(t, root, cfg)
		wantDrift(t, root, exit, rep, []key{drifted("content", "file", "/etc/secret.key")})

		for _, format := range []string{"json", "text"} {
			r := runBinary(t, "check", "--root", root, "--config", cfg, "--format", format)
			if r.exit != 1 {
				t.Errorf("--format %s: exit %d, want 1\nstderr:\n%s", format, r.exit, r.stderr)
			}
			for _, marker := range []string{secretOld, secretNew} {
				if strings.Contains(r.stdout, marker) || strings.Contains(r.stderr, marker) {
					t.Errorf("--format %s leaks the secret's content (%s):\nstdout:\n%s\nstderr:\n%s", format, marker, r.stdout, r.stderr)
				}
			}
			if format == "text" && (!strings.Contains(r.stdout, "/etc/secret.key") || !strings.Contains(strings.ToLower(r.stdout), "content")) {
				t.Errorf("--format text does not say that the content of /etc/secret.key differs:\n%s", r.stdout)
			}
		}
	})
	t.Run("world-readable twin shows a diff", func(t *testing.T) {
		root, cfg := base.provision(t)
		const marker = "WORLD-READABLE-MARKER-5d0e"
		rewrite(t, root, "/etc/motd", marker+"\n")
		exit, rep := check(t, root, cfg)
		wantDrift(t, root, exit, rep, []key{drifted("content", "file", "/etc/motd")})
		if len(rep.Drift) == 1 && !strings.Contains(string(rep.Drift[0].Diff), marker) {
			t.Errorf("the content drift of a 0644 file carries no diff with the new line; diff: %s", rep.Drift[0].Diff)
		}
	})
}

// TestOutputPathsAreHostPaths: neither format mentions the temporary root
// (the JSON's own "root" field aside: check asserts the rest).
func TestOutputPathsAreHostPaths(t *testing.T) {
	requireTier(t)
	root, cfg := base.provision(t)
	remove(t, root, "/etc/motd")
	appendTo(t, root, fooPath, "# edited\n")
	retarget(t, root, "/etc/motd.link", "/etc/motd")
	remove(t, root, "/etc/linked.hard")
	copyFile(t, root, "/etc/linked.txt", "/etc/linked.hard")
	remove(t, root, maskedPath)
	appendTo(t, root, coreKeys, "# edited\n")
	chmod(t, root, "/var/lib/app", 0o755)

	exit, rep := check(t, root, cfg)
	wantDrift(t, root, exit, rep, []key{
		drifted("missing", "file", "/etc/motd"),
		unitDrift("content", "unit", fooUnit, fooPath),
		drifted("target", "link", "/etc/motd.link"),
		drifted("hardlink", "hardlink", "/etc/linked.hard"),
		unitDrift("unmasked", "mask", "masked.service", maskedPath),
		keysDrift("content", "core", coreKeys),
		drifted("mode", "directory", "/var/lib/app"),
	})
	r := runBinary(t, "check", "--root", root, "--config", cfg, "--format", "text")
	if r.exit != 1 {
		t.Errorf("--format text: exit %d, want 1", r.exit)
	}
	assertNoRoot(t, "text output", r.stdout, root)
	assertNoRoot(t, "text stderr", r.stderr, root)
	for _, p := range []string{"/etc/motd", fooPath, coreKeys, "/var/lib/app"} {
		if !strings.Contains(r.stdout, p) {
			t.Errorf("text output does not name %s:\n%s", p, r.stdout)
		}
	}
}

// TestKernelArgumentsNeedALiveHost: kernel arguments are checked against
// /proc/cmdline on a live host only; a --root check of a config that
// declares them reports no drift for them.
func TestKernelArgumentsNeedALiveHost(t *testing.T) {
	requireTier(t)
	root, cfg := kernelArgs.provision(t)
	exit, rep := check(t, root, cfg)
	wantClean(t, root, exit, rep)
	t.Logf("notices: %s", pretty(rep.Notices))
}

// TestInvalidConfig: a config drift-monitor cannot use is exit status 2 with
// a message on stderr that names the file, never a report.
func TestInvalidConfig(t *testing.T) {
	requireTier(t)
	tests := []struct {
		name string
		cfg  config
		// ignitionAccepts records whether Ignition 2.14 applies the config.
		ignitionAccepts bool
	}{
		{
			name: "overwrite: true without a source",
			cfg: config{Ignition: version{"3.3.0"}, Storage: &storage{Files: []file{
				{Path: "/etc/emptied.conf", Mode: mode(0o644), Overwrite: ptr(true)},
			}}},
		},
		{
			// Ignition 2.14 applies it; drift-monitor's Ignition packages no
			// longer know this experimental spec.
			name:            "spec 3.4.0-experimental",
			cfg:             specialBitsConfig,
			ignitionAccepts: true,
		},
		{
			name: "a relative path",
			cfg: config{Ignition: version{"3.2.0"}, Storage: &storage{Files: []file{
				{Path: "etc/relative", Contents: plainURL("x")},
			}}},
		},
	}
	root, _ := base.provision(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, log, err := runIgnition(t, tt.cfg.json(), prepare{})
			if (err == nil) != tt.ignitionAccepts {
				t.Errorf("Ignition applies the config: %v, want %v\nIgnition's log:\n%s", err == nil, tt.ignitionAccepts, log)
			}
			cfgFile := filepath.Join(t.TempDir(), "invalid.ign")
			if err := os.WriteFile(cfgFile, tt.cfg.json(), 0o600); err != nil {
				t.Fatal(err)
			}
			r := runBinary(t, "check", "--root", root, "--config", cfgFile, "--format", "json")
			if r.exit != 2 {
				t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, cfgFile) {
				t.Errorf("stderr does not name %s:\n%s", cfgFile, r.stderr)
			}
			t.Logf("stderr: %s", r.stderr)
		})
	}
}

// TestJSONItemShape: "unit" appears only on unit-related items and "user"
// only on sshkeys items, as the contract lists them.
func TestJSONItemShape(t *testing.T) {
	requireTier(t)
	root, cfg := base.provision(t)
	chmod(t, root, "/etc/motd", 0o600)
	rewrite(t, root, fooDropin, "[Service]\nNice=10\n")
	appendTo(t, root, coreKeys, "# edited\n")
	r := runBinary(t, "check", "--root", root, "--config", cfg, "--format", "json")
	var rep struct {
		Drift []map[string]json.RawMessage `json:"drift"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("exit %d, output is not JSON: %v\n%s", r.exit, err, r.stdout)
	}
	if len(rep.Drift) != 3 {
		t.Fatalf("want 3 drift items, got:\n%s", r.stdout)
	}
	for _, it := range rep.Drift {
		var entry string
		if err := json.Unmarshal(it["entry"], &entry); err != nil {
			t.Fatalf("entry: %v", err)
		}
		_, hasUnit := it["unit"]
		_, hasUser := it["user"]
		if hasUnit != unitEntries[entry] {
			t.Errorf("%s item: \"unit\" present %v, want %v (value %s)", entry, hasUnit, unitEntries[entry], it["unit"])
		}
		if hasUser != (entry == "sshkeys") {
			t.Errorf("%s item: \"user\" present %v, want %v (value %s)", entry, hasUser, entry == "sshkeys", it["user"])
		}
	}
}
