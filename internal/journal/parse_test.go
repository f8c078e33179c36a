package journal

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What the plain handler writes, ParsePlain reads back.
func TestParsePlainRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(&buf, WithNative(false)))
	log.LogAttrs(context.Background(), slog.LevelWarn, `content mismatch for file "/etc/a b"`,
		MessageID(msgFileDrift), Path("/etc/a b"), Kind("content"),
		slog.String("DRIFT_WANT", `12 bytes, "quoted" \ and =`))
	got := ParsePlain(string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
	want := PlainRecord{Level: "WARN", Message: `content mismatch for file "/etc/a b"`, Fields: map[string]string{
		FieldMessageID: msgFileDrift, FieldDriftPath: "/etc/a b", FieldDriftKind: "content",
		"DRIFT_WANT": `12 bytes, "quoted" \ and =`,
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePlain (-want +got):\n%s", diff)
	}
	if got := ParsePlain("INFO no fields here"); got.Message != "no fields here" || len(got.Fields) != 0 {
		t.Errorf("ParsePlain without fields = %+v", got)
	}
}
