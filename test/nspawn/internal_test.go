package nspawn

// Tests of the harness's pure parts: they need neither root nor a container.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestIsPIDNamespaceInit(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   bool
	}{
		{"container init", "Name:\tsystemd\nNSpid:\t25132\t1\nNSpgid:\t1\n", true},
		{"nested container init", "NSpid:\t900\t40\t1\n", true},
		{"host process", "Name:\tsystemd-nspawn\nNSpid:\t25126\n", false},
		{"process inside a container", "NSpid:\t25166\t12\n", false},
		{"host pid 1", "NSpid:\t1\n", false},
		{"no NSpid line (old kernel)", "Name:\tsh\nPid:\t7\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isPIDNamespaceInit(tt.status); got != tt.want {
				t.Errorf("isPIDNamespaceInit(%q) = %v, want %v", tt.status, got, tt.want)
			}
		})
	}
}

func TestJournalEntries(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []map[string]any
		wantErr string
	}{
		{name: "no entries", out: "", want: nil},
		{
			name: "strings",
			out:  `{"MESSAGE":"started","_SYSTEMD_UNIT":"drift-monitor.service","PRIORITY":"6"}` + "\n",
			want: []map[string]any{{"MESSAGE": "started", "_SYSTEMD_UNIT": "drift-monitor.service", "PRIORITY": "6"}},
		},
		{
			name: "binary value as bytes",
			out:  `{"MESSAGE":[98,105,110,1,97,114,121]}` + "\n" + `{"MESSAGE":"next"}` + "\n",
			want: []map[string]any{{"MESSAGE": "bin\x01ary"}, {"MESSAGE": "next"}},
		},
		{
			name: "field repeated, one value binary",
			out:  `{"TAG":["a",[98,0],"c"]}`,
			want: []map[string]any{{"TAG": []string{"a", "b\x00", "c"}}},
		},
		{
			name: "null for a value left out",
			out:  `{"MESSAGE":null}`,
			want: []map[string]any{{"MESSAGE": nil}},
		},
		{name: "not JSON", out: "-- No entries --\n", wantErr: "journal entry 1"},
		{name: "number out of byte range", out: `{"M":[1,256]}`, wantErr: "field M"},
		{name: "object value", out: `{"M":{"a":1}}`, wantErr: "field M"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JournalEntries(tt.out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("JournalEntries(%q) error = %v, want one containing %q", tt.out, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("JournalEntries(%q): %v", tt.out, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("JournalEntries(%q)\n got %#v\nwant %#v", tt.out, got, tt.want)
			}
		})
	}
}

func TestJournalArgs(t *testing.T) {
	got := journalArgs("drift-monitor.service", []string{"-b"})
	want := []string{"journalctl", "-o", "json", "--all", "--no-pager", "-q", "-u", "drift-monitor.service", "-b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("journalArgs = %q, want %q", got, want)
	}
	if got := journalArgs("", nil); reflect.DeepEqual(got[len(got)-2:], []string{"-u", ""}) {
		t.Errorf("journalArgs with no unit = %q, want no -u", got)
	}
}

// fatalTB records Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

func TestWaitForMessages(t *testing.T) {
	t.Run("timeout names the wait and the last observation", func(t *testing.T) {
		m := &Machine{Name: "dm-e2e-test", exited: make(chan struct{})}
		ft := &fatalTB{TB: t}
		m.WaitFor(ft, 30*time.Millisecond, "the unit to start", func() (bool, string) { return false, "inactive" })
		for _, want := range []string{"dm-e2e-test", "timed out after 30ms", "the unit to start", "last observation: inactive"} {
			if !strings.Contains(ft.fatal, want) {
				t.Errorf("WaitFor failure %q does not contain %q", ft.fatal, want)
			}
		}
	})
	t.Run("a stopped container fails at once with its log", func(t *testing.T) {
		log := filepath.Join(t.TempDir(), "nspawn.log")
		if err := os.WriteFile(log, []byte("Container dm-e2e-test has been shut down.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		m := &Machine{Name: "dm-e2e-test", LogPath: log, exited: make(chan struct{})}
		close(m.exited)
		ft := &fatalTB{TB: t}
		start := time.Now()
		m.WaitFor(ft, time.Minute, "the unit to start", func() (bool, string) { return false, "inactive" })
		if time.Since(start) > 10*time.Second {
			t.Errorf("WaitFor took %v on a stopped container, want it to fail at once", time.Since(start))
		}
		for _, want := range []string{"stopped", "last observation: inactive", "has been shut down"} {
			if !strings.Contains(ft.fatal, want) {
				t.Errorf("WaitFor failure %q does not contain %q", ft.fatal, want)
			}
		}
	})
	t.Run("success reports nothing", func(t *testing.T) {
		m := &Machine{Name: "dm-e2e-test", exited: make(chan struct{})}
		ft := &fatalTB{TB: t}
		m.WaitFor(ft, time.Second, "anything", func() (bool, string) { return true, "" })
		if ft.fatal != "" {
			t.Errorf("WaitFor failed: %s", ft.fatal)
		}
	})
}

func TestNspawnArgs(t *testing.T) {
	src := filepath.Join(t.TempDir(), "drift-monitor")
	if err := os.WriteFile(src, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := nspawnArgs("dm-e2e-1-1", Options{
		BindRO:     []Mount{{Src: src, Dst: "/usr/bin/drift-monitor"}},
		Bind:       []Mount{{Src: filepath.Dir(src), Dst: "/srv/out"}},
		NspawnArgs: []string{"--setenv=A=1"},
		InitArgs:   []string{"systemd.log_level=debug"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-D", "/", "--volatile=yes", "--overlay=/usr::/usr", "-b", "--register=no", "--keep-unit", "-M", "dm-e2e-1-1",
		"--bind-ro=" + src + ":/usr/bin/drift-monitor", "--bind=" + filepath.Dir(src) + ":/srv/out",
		"--setenv=A=1", "--", "systemd.firstboot=off", "systemd.log_color=0", "systemd.log_level=debug",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nspawnArgs\n got %q\nwant %q", got, want)
	}

	bad := []struct {
		name    string
		mount   Mount
		wantErr string
	}{
		{"relative source", Mount{Src: "bin/drift-monitor", Dst: "/usr/bin/x"}, "not absolute"},
		{"relative destination", Mount{Src: src, Dst: "usr/bin/x"}, "not absolute"},
		{"colon", Mount{Src: src, Dst: "/etc/a:b"}, "colon"},
		{"missing source", Mount{Src: src + ".missing", Dst: "/x"}, "bind source"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := nspawnArgs("dm", Options{BindRO: []Mount{tt.mount}})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("nspawnArgs(%+v) error = %v, want one containing %q", tt.mount, err, tt.wantErr)
			}
		})
	}
}

func TestOctalMode(t *testing.T) {
	tests := []struct {
		mode fs.FileMode
		want string
	}{
		{0o644, "0644"},
		{0o755 | fs.ModeSetuid, "4755"},
		{0o2750&0o777 | fs.ModeSetgid, "2750"},
		{0o777 | fs.ModeSticky, "1777"},
	}
	for _, tt := range tests {
		if got := octalMode(tt.mode); got != tt.want {
			t.Errorf("octalMode(%v) = %q, want %q", tt.mode, got, tt.want)
		}
	}
}

func TestCgroupMounts(t *testing.T) {
	mountinfo := strings.Join([]string{
		`25 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw`,
		`35 25 0:30 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755`,
		`36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw`,
		`37 35 0:32 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup rw,xattr,name=systemd`,
		`38 35 0:33 / /sys/fs/cgroup/memory rw,nosuid shared:12 - cgroup cgroup rw,memory`,
		`39 35 0:32 /sub /mnt/with\040space rw - cgroup cgroup rw,name=systemd`,
	}, "\n") + "\n"
	p := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(p, []byte(mountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := cgroupMounts(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]cgroupMount{
		"cgroup2":      {point: "/sys/fs/cgroup/unified"},
		"name=systemd": {point: "/sys/fs/cgroup/systemd"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cgroupMounts = %+v, want %+v", got, want)
	}
	if got, want := unescapeMountinfo(`/mnt/with\040space\`), `/mnt/with space\`; got != want {
		t.Errorf("unescapeMountinfo = %q, want %q", got, want)
	}
}

func TestQuote(t *testing.T) {
	got := quote([]string{"sh", "-c", "echo $x", ""})
	if want := `sh -c "echo $x" ""`; got != want {
		t.Errorf("quote = %s, want %s", got, want)
	}
}
