package journal

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

var id128 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// msgFileDrift is a drift record's MESSAGE_ID, for tests of the handler.
var msgFileDrift = DriftDetected(model.KindFile)

func TestCatalogIDs(t *testing.T) {
	// Every constant, by name: a new record type must be added here and to
	// Catalog, and an id must never be reused.
	consts := map[string]string{
		"MsgStarted":             MsgStarted,
		"MsgReady":               MsgReady,
		"MsgDriftResolved":       MsgDriftResolved,
		"MsgReloaded":            MsgReloaded,
		"MsgLoadFailed":          MsgLoadFailed,
		"MsgLoadSlow":            MsgLoadSlow,
		"MsgWatchesExhausted":    MsgWatchesExhausted,
		"MsgWatchesRestored":     MsgWatchesRestored,
		"MsgQueueOverflow":       MsgQueueOverflow,
		"MsgInhibited":           MsgInhibited,
		"MsgResumed":             MsgResumed,
		"MsgStopping":            MsgStopping,
		"MsgHookFailed":          MsgHookFailed,
		"MsgCheckFailed":         MsgCheckFailed,
		"MsgBusLost":             MsgBusLost,
		"MsgBusRestored":         MsgBusRestored,
		"MsgConfigUnwatched":     MsgConfigUnwatched,
		"MsgInhibitorsUnwatched": MsgInhibitorsUnwatched,
		"MsgInhibitorsRewatched": MsgInhibitorsRewatched,
		"MsgNotice":              MsgNotice,
		"MsgReconciled":          MsgReconciled,
		"MsgMetricsFailed":       MsgMetricsFailed,
		"MsgConfigIgnored":       MsgConfigIgnored,
		"MsgNothingToWatch":      MsgNothingToWatch,
		"MsgMCD":                 MsgMCD,
		"MsgAttribution":         MsgAttribution,
		"MsgChangeDenied":        MsgChangeDenied,
		"MsgUndeclared":          MsgUndeclared,
		"MsgUndeclaredGone":      MsgUndeclaredGone,
		"MsgImage":               MsgImage,
	}
	for _, m := range model.Kinds {
		if m.MessageID != "" {
			consts["model.Kinds["+string(m.Kind)+"]"] = m.MessageID
		}
	}
	got := map[string]string{}
	seen := map[string]string{}
	for _, e := range Catalog {
		if !id128.MatchString(e.ID) {
			t.Errorf("%s: id %q is not 32 lower-case hex digits", e.Name, e.ID)
		}
		if other, dup := seen[e.ID]; dup {
			t.Errorf("%s and %s share id %s", e.Name, other, e.ID)
		}
		seen[e.ID] = e.Name
		got[e.Name] = e.ID
		if e.Subject == "" || strings.ContainsAny(e.Subject, "\n\r") {
			t.Errorf("%s: subject %q must be one non-empty line", e.Name, e.Subject)
		}
		if strings.TrimSpace(e.Body) == "" {
			t.Errorf("%s: empty body", e.Name)
		}
	}
	if diff := cmp.Diff(consts, got); diff != "" {
		t.Errorf("Catalog does not list exactly the MESSAGE_ID constants (-want +got):\n%s", diff)
	}
}

// TestCatalogFormat checks CatalogText against systemd.catalog(7) and the
// parser in systemd's catalog.c: comments start with # or ;, an entry starts
// with "-- ID" after an empty line, headers follow until an empty line, and
// no body line may look like a comment (it would be dropped silently) or
// like the start of an entry.
func TestCatalogFormat(t *testing.T) {
	text := CatalogText()
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("catalog does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	type parsed struct {
		headers map[string]string
		body    []string
	}
	entries := map[string]*parsed{}
	var order []string
	var cur *parsed
	inHeader, prevEmpty := false, true
	for i, l := range lines {
		n := i + 1
		switch {
		case strings.HasPrefix(l, "-- "):
			if !prevEmpty {
				t.Errorf("line %d: entry start %q not preceded by an empty line", n, l)
			}
			id := strings.TrimPrefix(l, "-- ")
			if !id128.MatchString(id) {
				t.Errorf("line %d: bad id %q", n, id)
			}
			if _, dup := entries[id]; dup {
				t.Errorf("line %d: duplicate id %s", n, id)
			}
			cur = &parsed{headers: map[string]string{}}
			entries[id] = cur
			order = append(order, id)
			inHeader = true
		case l == "":
			if cur != nil && inHeader {
				inHeader = false
			} else if cur != nil {
				cur.body = append(cur.body, l)
			}
		case l[0] == '#' || l[0] == ';':
			if cur != nil {
				t.Errorf("line %d: %q inside an entry would be dropped as a comment", n, l)
			}
		case cur == nil:
			t.Errorf("line %d: text outside an entry: %q", n, l)
		case inHeader:
			k, v, ok := strings.Cut(l, ": ")
			if !ok || v == "" || strings.ContainsAny(k, " \t") {
				t.Errorf("line %d: malformed header %q", n, l)
				continue
			}
			cur.headers[k] = v
		default:
			if strings.TrimSpace(l) != l {
				t.Errorf("line %d: leading or trailing white space in %q", n, l)
			}
			cur.body = append(cur.body, l)
		}
		prevEmpty = l == ""
	}
	var wantOrder []string
	for _, e := range Catalog {
		wantOrder = append(wantOrder, e.ID)
		p := entries[e.ID]
		if p == nil {
			continue
		}
		wantHeaders := map[string]string{
			"Subject":       e.Subject,
			"Defined-By":    "drift-monitor",
			"Support":       CatalogSupport,
			"Documentation": CatalogDocumentation,
		}
		if diff := cmp.Diff(wantHeaders, p.headers); diff != "" {
			t.Errorf("%s headers (-want +got):\n%s", e.Name, diff)
		}
		if diff := cmp.Diff(strings.TrimSpace(e.Body), strings.TrimSpace(strings.Join(p.body, "\n"))); diff != "" {
			t.Errorf("%s body (-want +got):\n%s", e.Name, diff)
		}
	}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestCatalogJournalctl lets systemd's own parser judge the catalog where
// journalctl is installed: --update-catalog must accept it and --dump-catalog
// must give every entry back as written.
func TestCatalogJournalctl(t *testing.T) {
	journalctl, err := exec.LookPath("journalctl")
	if err != nil {
		t.Skip("journalctl not installed")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "usr/lib/systemd/catalog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "drift-monitor.catalog"), []byte(CatalogText()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(journalctl, "--root", root, "--update-catalog").CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("journalctl --update-catalog: %v\n%s", err, out)
	}
	for _, e := range Catalog {
		out, err := exec.Command(journalctl, "--root", root, "--dump-catalog", e.ID).Output()
		if err != nil {
			t.Fatalf("journalctl --dump-catalog %s: %v", e.ID, err)
		}
		want := "-- " + e.ID + "\n" +
			"Subject: " + e.Subject + "\n" +
			"Defined-By: " + CatalogDefinedBy + "\n" +
			"Support: " + CatalogSupport + "\n" +
			"Documentation: " + CatalogDocumentation + "\n\n" +
			strings.TrimSpace(e.Body) + "\n\n"
		if diff := cmp.Diff(want, string(out)); diff != "" {
			t.Errorf("%s as journalctl reads it (-want +got):\n%s", e.Name, diff)
		}
	}
}

// TestRecordTypes: every record's type is its catalog entry's, the drift
// of every kind of entry sharing one; names read as words.
func TestRecordTypes(t *testing.T) {
	for id, want := range map[string]string{
		MsgDriftResolved: RecordDriftResolved, MsgNotice: RecordNotice, MsgMCD: "mcd",
		MsgNothingToWatch: "nothing-to-watch", MsgStarted: "started",
		DriftDetected(model.KindFile): RecordDriftDetected, DriftDetected(model.KindUser): RecordDriftDetected,
	} {
		if got := RecordOf(id); got != want {
			t.Errorf("RecordOf(%s) = %q, want %q", id, got, want)
		}
	}
	types := map[string]string{}
	for _, e := range Catalog {
		if e.Record == "" || strings.ContainsAny(e.Record, " _") || strings.ToLower(e.Record) != e.Record {
			t.Errorf("%s: record type %q", e.Name, e.Record)
		}
		if other, dup := types[e.Record]; dup && e.Record != RecordDriftDetected {
			t.Errorf("%s and %s share the record type %q", e.Name, other, e.Record)
		}
		types[e.Record] = e.Name
	}
}

// TestNoticeExplainsEveryNotice: journalctl -x shows MsgNotice's text for
// every notice the daemon logs under it (every kind of drift.Notices but
// undeclared, which has records of its own), so that text must say what
// each DRIFT_KIND means.
func TestNoticeExplainsEveryNotice(t *testing.T) {
	var body string
	for _, c := range Catalog {
		if c.ID == MsgNotice {
			body = c.Body
		}
	}
	if body == "" {
		t.Fatal("no catalog entry for MsgNotice")
	}
	flat := strings.Join(strings.Fields(body), " ")
	for _, k := range drift.Notices {
		if k == drift.Undeclared {
			continue
		}
		if !strings.Contains(flat, `"`+string(k)+`"`) {
			t.Errorf("MsgNotice's catalog text does not explain the notice %q", k)
		}
	}
}
