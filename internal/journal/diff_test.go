package journal

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/google/go-cmp/cmp"
)

// diffLines is a diff of n lines of about 40 bytes each.
func diffLines(n int) string {
	var b strings.Builder
	b.WriteString("--- /etc/x (want)\n+++ /etc/x (got)\n")
	for i := range n {
		fmt.Fprintf(&b, "-line %04d of the file as it was declared\n", i)
	}
	return b.String()
}

// TestDiffInJournald: MESSAGE and DRIFT_DIFF stay within their bounds, and
// what they leave out is said, on a line boundary.
func TestDiffInJournald(t *testing.T) {
	const msg = `content mismatch for file "/etc/x"`
	for _, c := range []struct {
		name        string
		diff        string
		wantMessage string // "": cut, checked by the invariants below
		wantDiff    string
	}{
		{"none", "", msg, ""},
		{"small: whole in both", diffLines(3), msg + " (-want +got):\n" + diffLines(3), diffLines(3)},
		{"over 4 KiB: whole in DRIFT_DIFF, the head in MESSAGE", diffLines(200), "", diffLines(200)},
		{"over MaxDiff: cut in both", diffLines(5000), "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r recorder
			l, _ := nativeLogger(&r)
			l.Warn(msg, Path("/etc/x"), Diff(c.diff))
			got := r.sent[0]
			if len(got.Message) > MaxMessage || len(got.Vars[FieldDriftDiff]) > MaxDiff {
				t.Errorf("MESSAGE %d bytes (max %d), DRIFT_DIFF %d (max %d)", len(got.Message), MaxMessage, len(got.Vars[FieldDriftDiff]), MaxDiff)
			}
			if _, ok := got.Vars[FieldDriftDiff]; ok != (c.diff != "") {
				t.Errorf("DRIFT_DIFF present: %v, want %v", ok, c.diff != "")
			}
			if c.wantMessage != "" {
				if diff := cmp.Diff(c.wantMessage, got.Message); diff != "" {
					t.Errorf("MESSAGE (-want +got):\n%s", diff)
				}
			} else {
				head, ok := strings.CutPrefix(got.Message, msg+" (-want +got):\n")
				kept, note, _ := strings.Cut(head, "[… ")
				if !ok || !strings.HasPrefix(c.diff, kept) || !strings.HasSuffix(kept, "\n") || !strings.HasSuffix(note, " in DRIFT_DIFF]\n") {
					t.Errorf("MESSAGE is not the message, whole lines of the diff and a note:\n%s", got.Message)
				}
			}
			if c.wantDiff != "" || c.diff == "" {
				if diff := cmp.Diff(c.wantDiff, got.Vars[FieldDriftDiff]); diff != "" {
					t.Errorf("DRIFT_DIFF (-want +got):\n%.2000s", diff)
				}
			} else {
				kept, note, _ := strings.Cut(got.Vars[FieldDriftDiff], "[… ")
				left := strings.Count(c.diff[len(kept):], "\n")
				if !strings.HasPrefix(c.diff, kept) || note != fmt.Sprintf("%d more lines; drift-monitor check shows the whole diff]\n", left) {
					t.Errorf("DRIFT_DIFF is not whole lines of the diff and a note: ...%s", got.Vars[FieldDriftDiff][len(kept)-100:])
				}
			}
		})
	}
}

// TestDiffInPlainLines: outside journald the diff follows the message
// whole, escaped, as before there was a DRIFT_DIFF.
func TestDiffInPlainLines(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewHandler(&buf, WithNative(false)))
	d := diffLines(5000)
	l.Warn(`content mismatch for file "/etc/x"`, Path("/etc/x"), Diff(d))
	want := "WARN " + escape.Name(`content mismatch for file "/etc/x" (-want +got):`+"\n"+d) + " DRIFT_PATH=/etc/x\n"
	if buf.String() != want {
		t.Errorf("plain line: %.300q…, want %.300q…", buf.String(), want)
	}
}

func TestLongMessage(t *testing.T) {
	long := strings.Repeat("é", MaxMessage) // 2 bytes each
	var r recorder
	l, _ := nativeLogger(&r)
	l.Info(long)
	if got := r.sent[0].Message; len(got) > MaxMessage || !strings.HasSuffix(got, "é…") {
		t.Errorf("a %d-byte MESSAGE was sent (max %d), ending %q", len(got), MaxMessage, got[max(0, len(got)-8):])
	}
}
