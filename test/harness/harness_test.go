package harness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckBus(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "bus")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plain := filepath.Join(dir, "file")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, addr string
		refused    string // part of the error; "" means accepted
	}{
		{"a private socket", "unix:path=" + sock, ""},
		{"with dbus-daemon's guid", "unix:path=" + sock + ",guid=0123", ""},
		{"tcp", "tcp:host=127.0.0.1,port=1", "not a unix:path="},
		{"abstract", "unix:abstract=/tmp/x", "not a unix:path="},
		{"two addresses", "unix:path=" + sock + ";unix:path=/run/dbus/system_bus_socket", "several addresses"},
		{"other options", "unix:path=" + sock + ",x=y", "unexpected address options"},
		{"no socket there", "unix:path=" + filepath.Join(dir, "none"), "no such file"},
		{"not a socket", "unix:path=" + plain, "is not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkBus(tc.addr)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("checkBus(%q) = %v, want it accepted", tc.addr, err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("checkBus(%q) = %v, want an error with %q", tc.addr, err, tc.refused)
			}
		})
	}
}

// TestCheckBusRefusesTheSystemBus: the machine's own bus is refused by its
// path and by another way to the same socket.
func TestCheckBusRefusesTheSystemBus(t *testing.T) {
	real := "/run/dbus/system_bus_socket"
	if fi, err := os.Stat(real); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Skipf("no system bus on this machine (%v): nothing to refuse", err)
	}
	link := filepath.Join(t.TempDir(), "innocent")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"unix:path=" + real, "unix:path=/var/run/dbus/../dbus/system_bus_socket", "unix:path=" + link} {
		if err := checkBus(addr); err == nil || !strings.Contains(err.Error(), "the machine's system bus") {
			t.Errorf("checkBus(%q) = %v, want it refused as the system bus", addr, err)
		}
	}
}

func TestSelect(t *testing.T) {
	rs := []Record{
		{"MESSAGE_ID": MsgReady},
		{"MESSAGE_ID": DriftDetectedIDs["file"], "DRIFT_MONITOR_RECORD": DriftDetected, "DRIFT_PATH": "/a", "DRIFT_KIND": "mode"},
		{"MESSAGE": "no id"},
		{"MESSAGE_ID": DriftDetectedIDs["directory"], "DRIFT_MONITOR_RECORD": DriftDetected, "DRIFT_PATH": "/b", "DRIFT_KIND": "mode"},
	}
	for _, tc := range []struct {
		name     string
		from, to int
		id       string
		fields   map[string]string
		want     []Record
	}{
		{"by id", 0, 4, DriftDetectedIDs["directory"], nil, []Record{rs[3]}},
		{"by type", 0, 4, DriftDetected, nil, []Record{rs[1], rs[3]}},
		{"by field", 0, 4, DriftDetected, map[string]string{"DRIFT_PATH": "/b"}, []Record{rs[3]}},
		{"after from", 2, 4, DriftDetected, nil, []Record{rs[3]}},
		{"before to", 0, 2, DriftDetected, nil, []Record{rs[1]}},
		{"without an id", 0, 4, "", nil, []Record{rs[2]}},
		{"beyond the end", 0, 9, MsgReady, nil, []Record{rs[0]}},
		{"none", 0, 4, MsgReloaded, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Select(rs, tc.from, tc.to, tc.id, tc.fields)); diff != "" {
				t.Errorf("Select (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJournalRecord(t *testing.T) {
	got := JournalRecord(map[string]any{"MESSAGE": "m", "DRIFT_PATH": []string{"/a", "/b"}, "NULL": nil})
	want := Record{"MESSAGE": "m", "DRIFT_PATH": "/a\n/b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JournalRecord (-want +got):\n%s", diff)
	}
}

func TestAwait(t *testing.T) {
	t.Run("holds after a few tries", func(t *testing.T) {
		n := 0
		res, obs := Await(Waiting{Timeout: 10 * time.Second}, func() (bool, string) {
			n++
			return n == 3, fmt.Sprintf("try %d", n)
		})
		if res != Held || obs != "try 3" {
			t.Errorf("Await = %v, %q; want Held, \"try 3\"", res, obs)
		}
	})
	t.Run("times out with the last observation", func(t *testing.T) {
		n := 0
		res, obs := Await(Waiting{Timeout: 50 * time.Millisecond}, func() (bool, string) {
			n++
			return false, fmt.Sprintf("try %d", n)
		})
		if res != TimedOut || obs != fmt.Sprintf("try %d", n) || n < 2 {
			t.Errorf("Await = %v, %q after %d tries; want TimedOut with the last of several tries", res, obs, n)
		}
	})
	t.Run("checks once more after the deadline", func(t *testing.T) {
		start := time.Now()
		res, _ := Await(Waiting{Timeout: 30 * time.Millisecond}, func() (bool, string) {
			return time.Since(start) >= 30*time.Millisecond, ""
		})
		if res != Held {
			t.Errorf("Await = %v, want Held: the condition held at the deadline", res)
		}
	})
	t.Run("ends when stopped", func(t *testing.T) {
		stop := make(chan struct{})
		close(stop)
		res, obs := Await(Waiting{Timeout: 10 * time.Second, Stop: stop}, func() (bool, string) { return false, "still no" })
		if res != Stopped || obs != "still no" {
			t.Errorf("Await = %v, %q; want Stopped, \"still no\"", res, obs)
		}
	})
	t.Run("looks again when woken", func(t *testing.T) {
		wake := make(chan struct{}, 1)
		n := 0
		start := time.Now()
		res, _ := Await(Waiting{Timeout: 10 * time.Second, Wake: wake}, func() (bool, string) {
			n++
			if n > 20 { // past the backoff's growth: only the wake-ups keep it quick
				return true, ""
			}
			wake <- struct{}{}
			return false, ""
		})
		if d := time.Since(start); res != Held || d > 2*time.Second {
			t.Errorf("Await = %v after %v; want Held at once, each look woken", res, d)
		}
	})
}

type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

func TestPollFailure(t *testing.T) {
	ft := &fatalTB{TB: t}
	Poll(ft, Waiting{Timeout: 30 * time.Millisecond, Describe: func() string { return "the log" }}, "the unit to start",
		func() (bool, string) { return false, "inactive" })
	for _, want := range []string{"timed out after 30ms", "the unit to start", "last observation: inactive", "\nthe log"} {
		if !strings.Contains(ft.fatal, want) {
			t.Errorf("Poll failure %q does not contain %q", ft.fatal, want)
		}
	}
}
