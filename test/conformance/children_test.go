package conformance_test

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// childRef carries a child config in a data URL, as Ignition resolves it
// offline (fetch-offline).
func childRef(c config, hash bool) resource {
	raw := c.json()
	r := resource{Source: "data:;base64," + base64.StdEncoding.EncodeToString(raw)}
	if hash {
		r.Verification = &verification{Hash: sha512Of(string(raw))}
	}
	return r
}

func plainFile(p, content string) file {
	return file{Path: p, Mode: mode(0o644), Contents: percentURL(content)}
}

func filesConfig(v string, refs *configRefs, files ...file) config {
	return config{Ignition: version{Version: v}, Children: refs, Storage: &storage{Files: files}}
}

var (
	grandchildCfg = filesConfig("3.1.0", nil,
		plainFile("/etc/children/deep.conf", "from the grandchild\n"),
		plainFile("/etc/children/shared.conf", "the grandchild's\n"))
	childCfg = filesConfig("3.2.0", &configRefs{Merge: []resource{childRef(grandchildCfg, false)}},
		plainFile("/etc/children/child.conf", "from the child\n"),
		plainFile("/etc/children/shared.conf", "the child's\n"))

	// mergeFixture: a parent whose child (and grandchild) override its
	// shared file and add their own.
	mergeFixture = fixture{apply: filesConfig("3.3.0", &configRefs{Merge: []resource{childRef(childCfg, true)}},
		plainFile("/etc/children/parent.conf", "from the parent\n"),
		plainFile("/etc/children/shared.conf", "the parent's\n"))}

	// replaceFixture: Ignition drops every entry of the parent.
	replaceFixture = fixture{apply: filesConfig("3.3.0", &configRefs{Replace: ptr(childRef(childCfg, false))},
		plainFile("/etc/children/parent.conf", "from the parent\n"),
		plainFile("/etc/children/shared.conf", "the parent's\n"))}

	// Remote children: Ignition could not write these offline; the root is
	// written from the parent alone, which is what a host whose child
	// declared nothing more would hold.
	parentOnly   = filesConfig("3.3.0", nil, plainFile("/etc/children/parent.conf", "from the parent\n"))
	remoteMerge  = fixture{apply: parentOnly, declare: ptr(filesConfig("3.3.0", &configRefs{Merge: []resource{*remote("https://configs.example.com/child.ign?token=SECRET-TOKEN", "")}}, parentOnly.Storage.Files...))}
	remoteReplce = fixture{apply: parentOnly, declare: ptr(filesConfig("3.3.0", &configRefs{Replace: remote("s3://bucket/child.ign", "")}, parentOnly.Storage.Files...))}
)

// TestChildConfigs: roots written by the real Ignition from configs with
// data-URL children check clean; a child's file mutated is drift; the
// entries replace or a child's override dropped are never reported; a
// remote child is a notice naming it.
func TestChildConfigs(t *testing.T) {
	requireTier(t)
	tests := []struct {
		name    string
		fixture fixture
		mutate  func(t *testing.T, root string)
		want    []key
		notices []key // the config notices, exactly
		// nothingChecked: a remote replace leaves no entry to check.
		nothingChecked bool
	}{
		{name: "merge: clean", fixture: mergeFixture},
		{name: "merge: the child's file mutated", fixture: mergeFixture,
			mutate: func(t *testing.T, r string) { rewrite(t, r, "/etc/children/child.conf", "tampered\n") },
			want:   []key{drifted("content", "file", "/etc/children/child.conf")}},
		{name: "merge: the grandchild's file removed", fixture: mergeFixture,
			mutate: func(t *testing.T, r string) { remove(t, r, "/etc/children/deep.conf") },
			want:   []key{drifted("missing", "file", "/etc/children/deep.conf")}},
		{name: "merge: the overridden file back to the parent's content", fixture: mergeFixture,
			mutate: func(t *testing.T, r string) { rewrite(t, r, "/etc/children/shared.conf", "the parent's\n") },
			want:   []key{drifted("content", "file", "/etc/children/shared.conf")}},
		{name: "replace: clean, the parent's file never expected", fixture: replaceFixture},
		{name: "replace: the child's file mutated", fixture: replaceFixture,
			mutate: func(t *testing.T, r string) { rewrite(t, r, "/etc/children/child.conf", "tampered\n") },
			want:   []key{drifted("content", "file", "/etc/children/child.conf")}},
		{name: "replace: a file at the parent's path is no drift", fixture: replaceFixture,
			mutate: func(t *testing.T, r string) { create(t, r, "/etc/children/parent.conf", "anything\n") }},
		{name: "remote merge: a notice, the parent still checked", fixture: remoteMerge,
			mutate:  func(t *testing.T, r string) { rewrite(t, r, "/etc/children/parent.conf", "tampered\n") },
			want:    []key{drifted("content", "file", "/etc/children/parent.conf")},
			notices: []key{drifted("unverifiable", "config", "")}},
		{name: "remote replace: a notice, nothing of the parent checked", fixture: remoteReplce,
			mutate:  func(t *testing.T, r string) { rewrite(t, r, "/etc/children/parent.conf", "tampered\n") },
			notices: []key{drifted("unverifiable", "config", "")}, nothingChecked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, cfg := tt.fixture.provision(t)
			if tt.mutate != nil {
				tt.mutate(t, root)
			}
			exit, rep := check(t, root, cfg)
			switch {
			case tt.nothingChecked:
				if exit != 0 || len(rep.Drift) != 0 || rep.Checked != 0 {
					t.Errorf("exit %d, drift %v, %d checked: want exit 0, no drift, nothing checked", exit, keys(rep.Drift), rep.Checked)
				}
			case len(tt.want) == 0:
				wantClean(t, root, exit, rep)
			default:
				wantDrift(t, root, exit, rep, tt.want)
			}
			var notices []key
			for _, n := range rep.Notices {
				if n.Entry == "config" {
					if n.Path != cfg {
						t.Errorf("notice %q: path %q, want the config that references the child, %q", n.Message, n.Path, cfg)
					}
					n.Path = ""
					notices = append(notices, keyOf(n))
				}
				if strings.Contains(n.Message, "SECRET-TOKEN") {
					t.Errorf("notice shows the URL's query: %s", n.Message)
				}
			}
			if !slices.Equal(notices, tt.notices) {
				t.Errorf("config notices %v, want %v", notices, tt.notices)
			}
		})
	}
}

// TestSuppliedRemoteChild: a remote child with verification.hash, supplied
// as a *.child file whose digest is that hash, is checked as if fetched; the
// root is what Ignition writes from the same child in a data URL.
func TestSuppliedRemoteChild(t *testing.T) {
	requireTier(t)
	childJSON := childCfg.json()
	remoteChild := remote("https://configs.example.com/child.ign", sha512Of(string(childJSON)))
	f := fixture{apply: mergeFixture.apply,
		declare: ptr(filesConfig("3.3.0", &configRefs{Merge: []resource{*remoteChild}}, mergeFixture.apply.Storage.Files...))}
	for _, tt := range []struct {
		name   string
		mutate func(t *testing.T, root string)
		want   []key
	}{
		{name: "clean"},
		{name: "the supplied child's file mutated",
			mutate: func(t *testing.T, r string) { rewrite(t, r, "/etc/children/child.conf", "tampered\n") },
			want:   []key{drifted("content", "file", "/etc/children/child.conf")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, cfg := f.provision(t)
			supply := filepath.Join(filepath.Dir(cfg), "child.child")
			mustWrite(t, supply, string(childJSON), 0o600)
			if tt.mutate != nil {
				tt.mutate(t, root)
			}
			exit, rep := check(t, root, cfg, "--config", supply)
			if len(tt.want) == 0 {
				wantClean(t, root, exit, rep)
			} else {
				wantDrift(t, root, exit, rep, tt.want)
			}
			for _, n := range rep.Notices {
				if n.Entry == "config" {
					t.Errorf("notice %q: the supplied child is not unfetched", n.Message)
				}
			}
		})
	}
}
