package journal

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sysjournal "github.com/coreos/go-systemd/v22/journal"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// plainLogger logs plain lines into a buffer, whatever the environment says.
func plainLogger(opts ...Option) (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	h := NewHandler(&buf, append([]Option{WithNative(false), WithLevel(slog.LevelDebug)}, opts...)...)
	return slog.New(h), &buf
}

type valuer struct{ s string }

func (v valuer) LogValue() slog.Value { return slog.StringValue("resolved:" + v.s) }

func TestPlainGolden(t *testing.T) {
	log, buf := plainLogger()
	log.Info("Starting drift-monitor 1.0", MessageID(MsgStarted))
	log.Warn("Drift: /etc/chrony.conf content differs",
		MessageID(msgFileDrift), Kind("content"), Path("/etc/chrony.conf"), Entry("file:/etc/chrony.conf"))
	log.Log(context.Background(), LevelNotice, "Resolved", Path("/etc/chrony.conf"))
	log.Info("priority override", Priority(sysjournal.PriCrit), "PRIORITY", "notice")
	log.Debug("debug", "count", 3, "ratio", 0.5, "ok", true, "took", 1500*time.Millisecond)
	log.Error("evil\nline\x1b[2J and \u202etxt.exe", Path("/etc/a b\n\x1b]0;pwn\a"), "empty", "", "quote", `say "hi"`, "eq", "a=b")
	log.Info("errors and valuers", "err", errors.New("open /x: permission denied"), "v", valuer{"x"},
		"at", time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC), "bytes", []byte("raw"))
	log.With("req", "r1").WithGroup("watch").With("dir", "/etc").Info("grouped",
		slog.Group("limit", "max_user_watches", 8192), slog.Group("", "inlined", 1), slog.Group("empty"))
	log.Info("odd keys", "lower-case.key", 1, "_trusted", 2, "9lives", 3, "", 4, "ünïcode", 5)

	golden := filepath.Join("testdata", "plain.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("plain lines differ from %s (-want +got):\n%s", golden, diff)
	}
}

func TestPlainNeverWritesControlCharacters(t *testing.T) {
	log, buf := plainLogger()
	var all strings.Builder
	for r := rune(0); r < 0x100; r++ {
		all.WriteRune(r)
	}
	all.WriteString("\u2028\u2029\u202e\u2066\ufeff\xff\xfe")
	s := all.String()
	log.Info(s, s, s, "k", s)
	out := buf.String()
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("want exactly one line, got %q", out)
	}
	for i, r := range strings.TrimSuffix(out, "\n") {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u2028' || r == '\u2029' || r == '\u202e' || r == '\u2066' || r == '\ufeff' {
			t.Errorf("raw control character %U at byte %d in %q", r, i, out)
		}
	}
}

func TestQuoteValue(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"bare", "/etc/chrony.conf", "/etc/chrony.conf"},
		{"empty", "", `""`},
		{"space", "a b", `"a b"`},
		{"equals", "a=b", `"a=b"`},
		{"quote", `a"b`, `"a\"b"`},
		{"backslash", `a\b`, `"a\\b"`},
		{"newline", "a\nb", `"a\nb"`},
		{"escape", "\x1b]0;t\a", `"\x1b]0;t\a"`},
		{"nbsp", "a\u00a0b", `"a\u00a0b"`},
		{"invalid utf-8", "\xff", `"\xff"`},
		{"unicode kept", "ünïcode", "ünïcode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QuoteValue(tt.in); got != tt.want {
				t.Errorf("QuoteValue(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFieldName(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"already valid", "DRIFT_PATH", "DRIFT_PATH"},
		{"lower case", "drift_path", "DRIFT_PATH"},
		{"punctuation", "config-error.detail", "CONFIG_ERROR_DETAIL"},
		{"leading underscore", "_PID", "PID"},
		{"only underscores", "__", "X"},
		{"leading digit", "9lives", "X_9LIVES"},
		{"empty", "", "X"},
		{"non-ascii", "ünï", "N_"},
		{"space", "a b", "A_B"},
		{"too long", strings.Repeat("a", 70), strings.Repeat("A", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FieldName(tt.in)
			if got != tt.want {
				t.Errorf("FieldName(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if err := validJournalField(got); err != nil {
				t.Errorf("FieldName(%q) = %q: %v", tt.in, got, err)
			}
		})
	}
}

// validJournalField is journald's rule (journal_field_valid in systemd's
// journal-file.c), written out independently of FieldName.
func validJournalField(s string) error {
	if s == "" || len(s) > 64 {
		return errors.New("length not in 1..64")
	}
	if s[0] == '_' || (s[0] >= '0' && s[0] <= '9') {
		return errors.New("starts with _ or a digit")
	}
	for _, c := range []byte(s) {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return errors.New("character outside [A-Z0-9_]")
		}
	}
	return nil
}

func TestLevelPriority(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level
		want  sysjournal.Priority
	}{
		{"below debug", slog.LevelDebug - 4, sysjournal.PriDebug},
		{"debug", slog.LevelDebug, sysjournal.PriDebug},
		{"between debug and info", slog.LevelDebug + 2, sysjournal.PriDebug},
		{"info", slog.LevelInfo, sysjournal.PriInfo},
		{"info+1", slog.LevelInfo + 1, sysjournal.PriInfo},
		{"notice", LevelNotice, sysjournal.PriNotice},
		{"warn", slog.LevelWarn, sysjournal.PriWarning},
		{"error", slog.LevelError, sysjournal.PriErr},
		{"above error", slog.LevelError + 4, sysjournal.PriErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LevelPriority(tt.level); got != tt.want {
				t.Errorf("LevelPriority(%v) = %d, want %d", tt.level, got, tt.want)
			}
		})
	}
}

type sent struct {
	Message  string
	Priority sysjournal.Priority
	Vars     map[string]string
}

// recorder is a Sender that keeps what it was given.
type recorder struct {
	mu   sync.Mutex
	sent []sent
	err  error
}

func (r *recorder) send(msg string, pri sysjournal.Priority, vars map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, sent{msg, pri, vars})
	return r.err
}

func nativeLogger(r *recorder, opts ...Option) (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	h := NewHandler(&buf, append([]Option{WithNative(true), withSender(r.send), WithLevel(slog.LevelDebug)}, opts...)...)
	return slog.New(h), &buf
}

func TestNativeFields(t *testing.T) {
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want sent
	}{
		{
			name: "drift detected",
			log: func(l *slog.Logger) {
				l.Warn("Drift: /etc/chrony.conf content differs\n-want\n+got",
					MessageID(msgFileDrift), Kind("content"), Path("/etc/chrony.conf"), Entry("file:/etc/chrony.conf"))
			},
			want: sent{"Drift: /etc/chrony.conf content differs\n-want\n+got", sysjournal.PriWarning, map[string]string{
				"SYSLOG_IDENTIFIER": "drift-monitor",
				"MESSAGE_ID":        msgFileDrift,
				"DRIFT_KIND":        "content",
				"DRIFT_PATH":        "/etc/chrony.conf",
				"DRIFT_ENTRY":       "file:/etc/chrony.conf",
			}},
		},
		{
			name: "the other fields' helpers",
			log: func(l *slog.Logger) {
				l.LogAttrs(context.Background(), slog.LevelInfo, "m", append(Inhibitor("updater", "v42", 4711),
					Want("0644"), Got("0640"), ConfigError("x.ign: bad"), BusLink("api"))...)
			},
			want: sent{"m", sysjournal.PriInfo, map[string]string{
				"SYSLOG_IDENTIFIER": "drift-monitor", "INHIBIT_WHO": "updater", "INHIBIT_WHY": "v42", "INHIBIT_PID": "4711",
				"DRIFT_WANT": "0644", "DRIFT_GOT": "0640", "CONFIG_ERROR": "x.ign: bad", "BUS_LINK": "api",
			}},
		},
		{
			name: "an inhibitor of unknown process",
			log: func(l *slog.Logger) {
				l.LogAttrs(context.Background(), slog.LevelInfo, "m", Inhibitor("updater", "v42", 0)...)
			},
			want: sent{"m", sysjournal.PriInfo, map[string]string{
				"SYSLOG_IDENTIFIER": "drift-monitor", "INHIBIT_WHO": "updater", "INHIBIT_WHY": "v42",
			}},
		},
		{
			name: "values are sent raw, not escaped",
			log:  func(l *slog.Logger) { l.Info("m", Path("/etc/a b\nc")) },
			want: sent{"m", sysjournal.PriInfo, map[string]string{
				"SYSLOG_IDENTIFIER": "drift-monitor", "DRIFT_PATH": "/etc/a b\nc",
			}},
		},
		{
			name: "priority attr overrides the level and is not a field",
			log:  func(l *slog.Logger) { l.Info("m", Priority(sysjournal.PriNotice)) },
			want: sent{"m", sysjournal.PriNotice, map[string]string{"SYSLOG_IDENTIFIER": "drift-monitor"}},
		},
		{
			name: "priority by name, lower-case key",
			log:  func(l *slog.Logger) { l.Error("m", "priority", "crit") },
			want: sent{"m", sysjournal.PriCrit, map[string]string{"SYSLOG_IDENTIFIER": "drift-monitor"}},
		},
		{
			name: "invalid priority is kept as a field",
			log:  func(l *slog.Logger) { l.Info("m", "PRIORITY", 9) },
			want: sent{"m", sysjournal.PriInfo, map[string]string{"SYSLOG_IDENTIFIER": "drift-monitor", "PRIORITY": "9"}},
		},
		{
			name: "notice level",
			log:  func(l *slog.Logger) { l.Log(context.Background(), LevelNotice, "m") },
			want: sent{"m", sysjournal.PriNotice, map[string]string{"SYSLOG_IDENTIFIER": "drift-monitor"}},
		},
		{
			name: "debug",
			log:  func(l *slog.Logger) { l.Debug("m") },
			want: sent{"m", sysjournal.PriDebug, map[string]string{"SYSLOG_IDENTIFIER": "drift-monitor"}},
		},
		{
			name: "groups prefix field names",
			log: func(l *slog.Logger) {
				l.With("req", "r1").WithGroup("watch").With("dir", "/etc").WithGroup("").Info("m",
					slog.Group("limit", "max-user-watches", 8192), slog.Group("", "inlined", 1), slog.Group("empty"), slog.Attr{})
			},
			want: sent{"m", sysjournal.PriInfo, map[string]string{
				"SYSLOG_IDENTIFIER":            "drift-monitor",
				"REQ":                          "r1",
				"WATCH_DIR":                    "/etc",
				"WATCH_LIMIT_MAX_USER_WATCHES": "8192",
				"WATCH_INLINED":                "1",
			}},
		},
		{
			name: "keys sanitized, values formatted",
			log: func(l *slog.Logger) {
				l.Info("m", "_pid", 1, "9x", 2, "err", errors.New("boom"), "v", valuer{"a"},
					"d", 2*time.Second, "t", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), "b", []byte("raw"))
			},
			want: sent{"m", sysjournal.PriInfo, map[string]string{
				"SYSLOG_IDENTIFIER": "drift-monitor",
				"PID":               "1",
				"X_9X":              "2",
				"ERR":               "boom",
				"V":                 "resolved:a",
				"D":                 "2s",
				"T":                 "2024-01-02T03:04:05Z",
				"B":                 "raw",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			l, buf := nativeLogger(&r)
			tt.log(l)
			if buf.Len() != 0 {
				t.Errorf("native mode wrote plain output: %q", buf.String())
			}
			if len(r.sent) != 1 {
				t.Fatalf("sent %d records, want 1", len(r.sent))
			}
			got := r.sent[0]
			// The caller's location is real; check it, then compare the rest.
			if f := got.Vars["CODE_FILE"]; !strings.HasSuffix(f, "handler_test.go") {
				t.Errorf("CODE_FILE = %q, want this test file", f)
			}
			if got.Vars["CODE_LINE"] == "" || !strings.Contains(got.Vars["CODE_FUNC"], "TestNativeFields") {
				t.Errorf("CODE_LINE = %q, CODE_FUNC = %q", got.Vars["CODE_LINE"], got.Vars["CODE_FUNC"])
			}
			delete(got.Vars, "CODE_FILE")
			delete(got.Vars, "CODE_LINE")
			delete(got.Vars, "CODE_FUNC")
			for k := range got.Vars {
				if err := validJournalField(k); err != nil {
					t.Errorf("field %q: %v", k, err)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sent record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNativeIdentifier(t *testing.T) {
	var r recorder
	l, _ := nativeLogger(&r, withIdentifier("drift-monitor-test"))
	l.Info("m", "SYSLOG_IDENTIFIER", "overridden")
	l.Info("m")
	if got := []string{r.sent[0].Vars["SYSLOG_IDENTIFIER"], r.sent[1].Vars["SYSLOG_IDENTIFIER"]}; !cmp.Equal(got, []string{"overridden", "drift-monitor-test"}) {
		t.Errorf("SYSLOG_IDENTIFIER = %q", got)
	}
}

func TestNativeSendFailureFallsBackToPlain(t *testing.T) {
	r := recorder{err: errors.New("journald is gone")}
	var buf bytes.Buffer
	h := NewHandler(&buf, WithNative(true), withSender(r.send))
	rec := slog.NewRecord(time.Time{}, slog.LevelWarn, "Drift: x", 0)
	rec.AddAttrs(Path("/etc/x"))
	err := h.Handle(context.Background(), rec)
	if !errors.Is(err, r.err) {
		t.Errorf("Handle error = %v, want it to wrap %v", err, r.err)
	}
	want := "WARN Drift: x DRIFT_PATH=/etc/x JOURNAL_SEND_ERROR=\"journald is gone\"\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("fallback line (-want +got):\n%s", diff)
	}
}

func TestLevelFilter(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewHandler(&buf, WithNative(false), WithLevel(slog.LevelWarn)))
	l.Info("hidden")
	l.Log(context.Background(), LevelNotice, "hidden too")
	l.Warn("shown")
	if diff := cmp.Diff("WARN shown\n", buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAutoDetectsJournalStream(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Fstat(2, &st); err != nil {
		t.Skipf("cannot stat stderr: %v", err)
	}
	stderrStream := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	tests := []struct {
		name   string
		env    string
		native bool
	}{
		{"unset", "", false},
		{"matches stderr", stderrStream, true},
		{"other stream", "1:1", false},
		{"malformed", "garbage", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("JOURNAL_STREAM", tt.env)
			if got := NewHandler(&bytes.Buffer{}).c.native; got != tt.native {
				t.Errorf("JOURNAL_STREAM=%q: native = %v, want %v", tt.env, got, tt.native)
			}
		})
	}
}

func TestConcurrentPlainLinesDoNotInterleave(t *testing.T) {
	log, buf := plainLogger()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := log.With("g", g)
			for i := range 100 {
				l.Info("concurrent record", "i", i, "pad", strings.Repeat("x", 200))
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("got %d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "INFO concurrent record G=") || !strings.HasSuffix(l, strings.Repeat("x", 200)) {
			t.Fatalf("mangled line %q", l)
		}
	}
}
