package conformance_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAdoptIgnitionCache: the config cache the real Ignition writes in its
// fetch stages (Debian's 2.14: spec 3.4.0-experimental, children merged in
// and still listed) is adopted by `drift-monitor adopt` from the root's
// /run, and `check` of the root Ignition's files stage wrote from it is
// clean: the cache is read as 3.4.0 and its children are not resolved again,
// so a remote child Ignition fetched is checked and is no notice, and it is
// never fetched by drift-monitor. A file a child declared, changed, is drift.
func TestAdoptIgnitionCache(t *testing.T) {
	requireTier(t)
	remoteChild := filesConfig("3.2.0", nil, plainFile("/etc/children/remote.conf", "from the remote child\n"))
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/child.ign" {
			http.NotFound(w, r)
			return
		}
		fetched.Add(1)
		w.Write(remoteChild.json())
	}))
	t.Cleanup(srv.Close)
	remoteURL := srv.URL + "/child.ign"
	tests := []struct {
		name   string
		cfg    config
		online bool
		// children are the sources the cache still lists.
		children []string
		// childFile is a file only a child declares.
		childFile string
		fetches   int32
	}{
		{
			name: "fetch-offline: data-URL child and grandchild", cfg: mergeFixture.apply,
			children:  []string{childRef(childCfg, true).Source, childRef(grandchildCfg, false).Source},
			childFile: "/etc/children/deep.conf",
		},
		{
			name:   "fetch: a remote child",
			cfg:    filesConfig("3.3.0", &configRefs{Merge: []resource{*remote(remoteURL, "")}}, plainFile("/etc/children/parent.conf", "from the parent\n")),
			online: true, children: []string{remoteURL}, childFile: "/etc/children/remote.conf", fetches: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fetched.Store(0)
			root, log, err := runIgnition(t, tt.cfg.json(), prepare{online: tt.online})
			if err != nil {
				t.Fatalf("%v\nIgnition's log:\n%s", err, log)
			}
			raw, err := os.ReadFile(filepath.Join(filepath.Dir(root), "run", "cache.json"))
			if err != nil {
				t.Fatalf("Ignition's cache: %v", err)
			}
			// What the cache is, as this test (and the loader's rule) assumes.
			cache := string(raw)
			if !strings.Contains(cache, `"version":"3.4.0-experimental"`) {
				t.Fatalf("Ignition's cache is not in 3.4.0-experimental: %s", cache)
			}
			for _, c := range tt.children {
				if !strings.Contains(cache, `"source":"`+c+`"`) {
					t.Errorf("Ignition's cache no longer lists the child %s: %s", c, cache)
				}
			}
			if !strings.Contains(cache, `"path":"`+tt.childFile+`"`) {
				t.Errorf("Ignition's cache does not hold the child's %s: %s", tt.childFile, cache)
			}
			if got := fetched.Load(); got != tt.fetches {
				t.Errorf("Ignition fetched the remote child %d times, want %d", got, tt.fetches)
			}

			// The cache as the initramfs leaves it to the real root.
			mustMkdir(t, filepath.Join(root, "run"), 0o755)
			mustWrite(t, filepath.Join(root, "run", "ignition.json"), cache, 0o640)
			r := runBinary(t, "adopt", "--root", root)
			fragment := filepath.Join(root, "etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json")
			if r.exit != 0 || r.stderr != "" {
				t.Fatalf("drift-monitor adopt: exit %d\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
			}
			if got, err := os.ReadFile(fragment); err != nil || string(got) != cache {
				t.Fatalf("the adopted fragment: %q, %v; want the cache's bytes", got, err)
			}

			exit, rep := check(t, root, "")
			wantClean(t, root, exit, rep)
			if want := []string{"/etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json"}; !slices.Equal(rep.Configs, want) {
				t.Errorf("configs %q, want %q", rep.Configs, want)
			}
			if len(rep.Notices) != 0 {
				t.Errorf("notices %v, want none: Ignition fetched and merged every child", keys(rep.Notices))
			}
			rewrite(t, root, tt.childFile, "tampered\n")
			exit, rep = check(t, root, "")
			wantDrift(t, root, exit, rep, []key{drifted("content", "file", tt.childFile)})
			if got := fetched.Load(); got != tt.fetches {
				t.Errorf("the remote child was fetched %d times, want %d (by Ignition only)", got, tt.fetches)
			}
		})
	}
}
