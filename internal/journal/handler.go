// Package journal turns drift-monitor's log/slog records into journald
// records with structured fields, or into plain escaped lines where there is
// no journald.
//
// It promises:
//   - Under systemd (stderr connected to journald, see NewHandler) every record
//     is sent through journald's native protocol: the message as MESSAGE, the
//     level as PRIORITY, SYSLOG_IDENTIFIER=drift-monitor, the caller as
//     CODE_FILE/CODE_LINE/CODE_FUNC, and every attr as a field of its own, so
//     that `journalctl -u drift-monitor DRIFT_PATH=/etc/chrony.conf` works.
//     Field values are sent as they are (journald stores them binary-safe),
//     except two bounds that keep records whole on the way to a log system
//     (see jsonThreshold): MESSAGE is at most MaxMessage bytes, and a diff
//     (Diff) is a DRIFT_DIFF field of at most MaxDiff bytes, of which the
//     message carries what fits. Other fields are not cut: a DRIFT_PATH of
//     4085 bytes or more reads as null in `journalctl -o json` without --all.
//   - Elsewhere every record is one line, `LEVEL message KEY=value ...`, in
//     which no control character survives unescaped: a newline, an ESC or a
//     bidi override in a path cannot forge a line or repaint a terminal.
//   - Attr keys become journald field names in both forms (see FieldName), so
//     what a test greps for in a plain line is what journalctl matches.
//
// It does not promise: that a record reaches journald (a failed send is
// written to the plain writer instead, with the error); that two attrs whose
// keys map to the same field name both survive in journald (the last wins);
// timestamps in plain lines (journald and CI runners stamp lines themselves).
package journal

import (
	"context"
	"encoding"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	sysjournal "github.com/coreos/go-systemd/v22/journal"

	"github.com/drift-monitor/drift-monitor/internal/escape"
)

// jsonThreshold: `journalctl -o json` (and whatever reads it, such as the
// OpenTelemetry journald receiver) prints a field as null unless --all is
// given when FIELD=value is this many bytes or more (JSON_THRESHOLD in
// systemd's src/shared/logs-show.c, which compares the field's whole
// FIELD=value with it: the longer a name, the shorter the value kept;
// test/systemd's forward test reads the records back through it).
const jsonThreshold = 4096

// MaxMessage bounds MESSAGE in journald, so that no record loses its
// message on the way to a log system: longer ones are cut, ending in "…".
const MaxMessage = jsonThreshold - len("MESSAGE=") - 1

// MaxDiff bounds DRIFT_DIFF in journald: a longer diff keeps its first
// whole lines and ends with a line that says how many were left out.
// drift-monitor check shows it whole.
const MaxDiff = 64 << 10

// Identifier is the default SYSLOG_IDENTIFIER.
const Identifier = "drift-monitor"

// LevelNotice is a slog level between Info and Warn that maps to journald's
// "notice" priority (5): normal but significant, such as a drift resolved.
const LevelNotice = slog.Level(2)

// MessageID is the attr that gives a record its catalog id.
func MessageID(id string) slog.Attr { return slog.String(FieldMessageID, id) }

// Record is the attr naming the type of the record whose MESSAGE_ID is id
// (FieldRecord): every record of the daemon carries both. An id that is
// none of Catalog's has no type: no attr.
func Record(id string) slog.Attr {
	r := RecordOf(id)
	if r == "" {
		return slog.Attr{}
	}
	return slog.String(FieldRecord, r)
}

// Kind is the attr for the kind of a drift (content, mode, enabled…).
func Kind(kind string) slog.Attr { return slog.String(FieldDriftKind, kind) }

// Path is the attr for the host path a record is about.
func Path(p string) slog.Attr { return slog.String(FieldDriftPath, p) }

// Unit is the attr for the systemd unit a record is about.
func Unit(u string) slog.Attr { return slog.String(FieldDriftUnit, u) }

// Entry is the attr for the desired-state entry a record is about.
func Entry(e string) slog.Attr { return slog.String(FieldDriftEntry, e) }

// User is the attr for the user an account record is about.
func User(u string) slog.Attr { return slog.String(FieldDriftUser, u) }

// Group is the attr for the group an account record is about.
func Group(g string) slog.Attr { return slog.String(FieldDriftGroup, g) }

// Want and Got are the attrs for what was declared and what was found.
func Want(v string) slog.Attr { return slog.String(FieldDriftWant, v) }

// Got: see Want.
func Got(v string) slog.Attr { return slog.String(FieldDriftGot, v) }

// Attribute is the attr for what metadata a drift of kind is about
// (DRIFT_ACL, DRIFT_XATTR, DRIFT_FILEATTR, DRIFT_LABEL), or what an
// undeclared change is (DRIFT_UNDECLARED); false for
// another kind.
func Attribute(kind, v string) (slog.Attr, bool) {
	f, ok := map[string]string{"acl": FieldDriftACL, "xattr": FieldDriftXattr, "fileattr": FieldDriftFileAttr, "label": FieldDriftLabel,
		"undeclared": FieldDriftUndeclared}[kind]
	return slog.String(f, v), ok
}

// ConfigError is the attr for why a desired state was refused.
func ConfigError(msg string) slog.Attr { return slog.String(FieldConfigError, msg) }

// BusLink is the attr naming a connection to the bus ("systemd", "api").
func BusLink(link string) slog.Attr { return slog.String(FieldBusLink, link) }

// Inhibitor is the attrs of an inhibitor's holder: who, why and, when it
// is known (pid > 0), its process.
func Inhibitor(who, why string, pid int) []slog.Attr {
	a := []slog.Attr{slog.String(FieldInhibitWho, who), slog.String(FieldInhibitWhy, why)}
	if pid > 0 {
		a = append(a, slog.Int(FieldInhibitPID, pid))
	}
	return a
}

// MetricsFile is the attr naming the metrics textfile.
func MetricsFile(p string) slog.Attr { return slog.String(FieldMetricsFile, p) }

// ReconciledEntries is the attr for how many entries a reconcile repaired.
func ReconciledEntries(n int) slog.Attr { return slog.Int(FieldReconciledEntries, n) }

// Diff is the attr for a drift's unified diff (-want +got); "" is no attr.
// In journald it is DRIFT_DIFF, cut to MaxDiff, and MESSAGE carries as much
// of it as stays within MaxMessage, so that `journalctl -u drift-monitor`
// shows it and a log system that drops long fields keeps its head; in plain
// lines it follows the message whole, as "MESSAGE (-want +got):\nDIFF"
// (escaped like the rest of the line).
func Diff(diff string) slog.Attr {
	if diff == "" {
		return slog.Attr{}
	}
	return slog.String(FieldDriftDiff, diff)
}

// Priority is the attr that overrides the priority derived from the level,
// for the syslog priorities slog has no level for (notice, crit, alert,
// emerg). A PRIORITY attr may also be an int 0-7 or a name ("notice").
func Priority(p sysjournal.Priority) slog.Attr { return slog.Int(FieldPriority, int(p)) }

// Sender sends one record to journald; go-systemd's journal.Send is one.
type Sender func(message string, priority sysjournal.Priority, vars map[string]string) error

// Option configures a Handler.
type Option func(*options)

type options struct {
	level  slog.Leveler
	native *bool
	ident  string
	send   Sender
}

// WithLevel sets the minimum level (default slog.LevelInfo).
func WithLevel(l slog.Leveler) Option { return func(o *options) { o.level = l } }

// WithNative forces the journald native protocol (true) or plain lines
// (false) instead of detecting whether stderr is connected to journald.
func WithNative(native bool) Option { return func(o *options) { o.native = &native } }

// withIdentifier sets SYSLOG_IDENTIFIER (default "drift-monitor").
func withIdentifier(ident string) Option { return func(o *options) { o.ident = ident } }

// withSender replaces journal.Send. go-systemd's journal package hard-codes
// its socket (/run/systemd/journal/socket, changeable only with -ldflags -X),
// so tests inject a Sender to see the fields a record becomes.
func withSender(send Sender) Option { return func(o *options) { o.send = send } }

// Handler is a slog.Handler for journald or plain lines; see the package doc.
type Handler struct {
	c      *core
	fields []field // from WithAttrs, keys final
	prefix string  // from WithGroup: "G1_G2_", already sanitized
}

type core struct {
	w      io.Writer
	mu     sync.Mutex // serialises writes to w
	level  slog.Leveler
	native bool
	ident  string
	send   Sender
}

type field struct{ key, val string }

// NewHandler returns a handler that sends records to journald when stderr is
// connected to it (journal.StderrIsJournalStream: JOURNAL_STREAM matches
// stderr, which systemd sets up for a service whose StandardError= is the
// journal) or when WithNative(true) asks for it, and otherwise writes plain
// lines to w. A malformed JOURNAL_STREAM counts as "not journald".
//
// It returns the concrete type; it satisfies slog.Handler.
func NewHandler(w io.Writer, opts ...Option) *Handler {
	o := options{level: slog.LevelInfo, ident: Identifier, send: sysjournal.Send}
	for _, opt := range opts {
		opt(&o)
	}
	native := false
	if o.native != nil {
		native = *o.native
	} else if ok, err := sysjournal.StderrIsJournalStream(); err == nil {
		native = ok
	}
	return &Handler{c: &core{w: w, level: o.level, native: native, ident: o.ident, send: o.send}}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.c.level.Level()
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	h2.fields = make([]field, len(h.fields), len(h.fields)+len(attrs))
	copy(h2.fields, h.fields)
	for _, a := range attrs {
		h2.fields = appendAttr(h2.fields, h.prefix, a)
	}
	return &h2
}

// WithGroup implements slog.Handler: the group's name prefixes the field
// names of the attrs that follow ("req" + "method" → REQ_METHOD).
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + sanitizePart(name) + "_"
	return &h2
}

// Handle implements slog.Handler. In native mode a failed send is not lost:
// the record is written to w as a plain line with JOURNAL_SEND_ERROR, and the
// error is returned.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]field, len(h.fields), len(h.fields)+r.NumAttrs())
	copy(fields, h.fields)
	r.Attrs(func(a slog.Attr) bool {
		fields = appendAttr(fields, h.prefix, a)
		return true
	})

	pri := LevelPriority(r.Level)
	// The last PRIORITY attr wins; it is not a field of its own.
	kept := fields[:0]
	for _, f := range fields {
		if f.key == FieldPriority {
			if p, ok := parsePriority(f.val); ok {
				pri = p
				continue
			}
		}
		kept = append(kept, f)
	}
	fields = kept
	msg := r.Message
	var diff string
	kept = fields[:0]
	for _, f := range fields {
		if f.key == FieldDriftDiff {
			diff = f.val // the last wins, as for any field
			continue
		}
		kept = append(kept, f)
	}
	fields = kept

	if !h.c.native {
		if diff != "" {
			msg += diffIntro + diff
		}
		return h.writePlain(pri, msg, fields)
	}
	if diff != "" {
		fields = append(fields, field{FieldDriftDiff, cutLines(diff, MaxDiff, "; drift-monitor check shows the whole diff")})
		if room := MaxMessage - len(msg) - len(diffIntro); room > 0 {
			msg += diffIntro + cutLines(diff, room, " in DRIFT_DIFF")
		}
	}
	msg = escape.Cut(msg, MaxMessage)
	vars := make(map[string]string, len(fields)+4)
	vars["SYSLOG_IDENTIFIER"] = h.c.ident
	if r.PC != 0 {
		fr, _ := runtime.CallersFrames([]uintptr{r.PC}).Next()
		if fr.File != "" {
			vars["CODE_FILE"] = fr.File
			vars["CODE_LINE"] = strconv.Itoa(fr.Line)
			vars["CODE_FUNC"] = fr.Function
		}
	}
	for _, f := range fields {
		vars[f.key] = f.val
	}
	if err := h.c.send(msg, pri, vars); err != nil {
		fields = append(fields, field{"JOURNAL_SEND_ERROR", err.Error()})
		if werr := h.writePlain(pri, msg, fields); werr != nil {
			return fmt.Errorf("sending to journald: %w (and writing the record: %v)", err, werr)
		}
		return fmt.Errorf("sending to journald: %w", err)
	}
	return nil
}

// diffIntro joins a message and its diff.
const diffIntro = " (-want +got):\n"

// cutLines returns s whole when it is at most max bytes long, and otherwise
// its first whole lines followed by a line saying how many more there are
// (and where), max bytes in all (less, when not even the note fits).
func cutLines(s string, max int, where string) string {
	if len(s) <= max {
		return s
	}
	note := func(n int) string {
		unit := "lines"
		if n == 1 {
			unit = "line"
		}
		return fmt.Sprintf("[… %d more %s%s]\n", n, unit, where)
	}
	lines := func(s string) int { return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1 }
	// The note for all the lines is the longest the note can be.
	budget := max - len(note(lines(s)))
	end := 0
	if budget > 0 {
		end = strings.LastIndexByte(s[:budget], '\n') + 1
	}
	return s[:end] + note(lines(s[end:]))
}

func (h *Handler) writePlain(pri sysjournal.Priority, msg string, fields []field) error {
	var b strings.Builder
	b.WriteString(priorityLabel(pri))
	b.WriteByte(' ')
	b.WriteString(escape.Name(msg))
	for _, f := range fields {
		b.WriteByte(' ')
		b.WriteString(f.key) // FieldName's output never needs escaping
		b.WriteByte('=')
		b.WriteString(QuoteValue(f.val))
	}
	b.WriteByte('\n')
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	_, err := io.WriteString(h.c.w, b.String())
	return err
}

// appendAttr flattens a into fields, following slog's rules: a zero attr is
// dropped, an empty group is dropped, a group with an empty key is inlined.
func appendAttr(fields []field, prefix string, a slog.Attr) []field {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return fields
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += sanitizePart(a.Key) + "_"
		}
		for _, ga := range a.Value.Group() {
			fields = appendAttr(fields, p, ga)
		}
		return fields
	}
	return append(fields, field{FieldName(prefix + sanitizePart(a.Key)), valueString(a.Value)})
}

// FieldName maps an attr key (with its group prefix) to a journald field
// name: upper case, every character outside [A-Z0-9_] becomes '_', leading
// underscores are dropped (journald reserves them for trusted fields), a
// leading digit or an empty name gets an "X_" or "X" in front, and the result
// is cut to journald's 64 characters.
func FieldName(key string) string {
	s := strings.TrimLeft(sanitizePart(key), "_")
	switch {
	case s == "":
		s = "X"
	case s[0] >= '0' && s[0] <= '9':
		s = "X_" + s
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

func sanitizePart(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func valueString(v slog.Value) (s string) {
	defer func() {
		// A String or Error method that panics (a typed nil error) must not
		// take the daemon down with it; slog's own handlers do the same.
		if p := recover(); p != nil {
			s = fmt.Sprintf("!PANIC: %v", p)
		}
	}()
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindTime:
		return v.Time().Format("2006-01-02T15:04:05.999999999Z07:00")
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return x.Error()
		case encoding.TextMarshaler:
			t, err := x.MarshalText()
			if err != nil {
				return "!ERROR: " + err.Error()
			}
			return string(t)
		case []byte:
			return string(x)
		}
	}
	return v.String()
}

// LevelPriority maps a slog level to a syslog priority: Debug (and below) 7,
// Info 6, LevelNotice 5, Warn 4, Error (and above) 3.
func LevelPriority(l slog.Level) sysjournal.Priority {
	switch {
	case l >= slog.LevelError:
		return sysjournal.PriErr
	case l >= slog.LevelWarn:
		return sysjournal.PriWarning
	case l >= LevelNotice:
		return sysjournal.PriNotice
	case l >= slog.LevelInfo:
		return sysjournal.PriInfo
	default:
		return sysjournal.PriDebug
	}
}

var priorityNames = [...]string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}

var priorityLabels = [...]string{"EMERG", "ALERT", "CRIT", "ERROR", "WARN", "NOTICE", "INFO", "DEBUG"}

func priorityLabel(p sysjournal.Priority) string {
	if p < 0 || int(p) >= len(priorityLabels) {
		return "PRI" + strconv.Itoa(int(p))
	}
	return priorityLabels[p]
}

// parsePriority accepts 0-7 or a syslog name (as systemd's log-level
// settings do: "notice", "warning", "err"…, plus "error" and "warn").
func parsePriority(s string) (sysjournal.Priority, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		if n >= 0 && n <= 7 {
			return sysjournal.Priority(n), true
		}
		return 0, false
	}
	s = strings.ToLower(s)
	switch s {
	case "error":
		return sysjournal.PriErr, true
	case "warn":
		return sysjournal.PriWarning, true
	}
	for i, n := range priorityNames {
		if s == n {
			return sysjournal.Priority(i), true
		}
	}
	return 0, false
}

// QuoteValue returns v as it is when it is a non-empty run of printable
// characters without spaces, quotes, '=' or backslashes, and as a Go quoted
// string (strconv.Quote: every control character escaped) otherwise.
func QuoteValue(v string) string {
	if v == "" {
		return `""`
	}
	for _, r := range v {
		if r == ' ' || r == '"' || r == '=' || r == '\\' || r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(v)
		}
	}
	return v
}
