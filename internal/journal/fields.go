package journal

// Journal field names the daemon's records carry, beyond journald's own
// (MESSAGE, CODE_FILE, SYSLOG_IDENTIFIER...). Each is documented once, in
// Fields: the attrs below use the names, the catalog's @FIELD@ placeholders
// name them (TestCatalogFieldsKnown), and tools/gencatalog writes the man
// page's list of them from Fields.
const (
	FieldMessageID = "MESSAGE_ID"
	FieldPriority  = "PRIORITY"
	// FieldRecord is every record's type: its catalog entry's, the same
	// for the drift of every kind of entry (RecordDriftDetected), whose
	// MESSAGE_IDs differ.
	FieldRecord     = "DRIFT_MONITOR_RECORD"
	FieldDriftKind  = "DRIFT_KIND"
	FieldDriftPath  = "DRIFT_PATH"
	FieldDriftUnit  = "DRIFT_UNIT"
	FieldDriftEntry = "DRIFT_ENTRY"
	FieldDriftWant  = "DRIFT_WANT"
	FieldDriftGot   = "DRIFT_GOT"
	// FieldDriftUser and FieldDriftGroup name the account a user or group
	// entry's record is about.
	FieldDriftUser  = "DRIFT_USER"
	FieldDriftGroup = "DRIFT_GROUP"
	// FieldConfigError is why a desired state was refused.
	FieldConfigError = "CONFIG_ERROR"
	// FieldBusLink names the bus connection lost or back.
	FieldBusLink = "BUS_LINK"
	// The holder of an inhibitor.
	FieldInhibitWho = "INHIBIT_WHO"
	FieldInhibitWhy = "INHIBIT_WHY"
	FieldInhibitPID = "INHIBIT_PID"
	// FieldDriftDiff is a content drift's unified diff (see Diff).
	FieldDriftDiff = "DRIFT_DIFF"
	// The metadata a drift of kind acl, xattr, fileattr or label is about
	// (drift.Drift.Attribute), each kind its own field.
	FieldDriftACL      = "DRIFT_ACL"
	FieldDriftXattr    = "DRIFT_XATTR"
	FieldDriftFileAttr = "DRIFT_FILEATTR"
	FieldDriftLabel    = "DRIFT_LABEL"
	// FieldDriftUndeclared is what an undeclared change is (attributes
	// that differ, or added, or removed).
	FieldDriftUndeclared = "DRIFT_UNDECLARED"
	// FieldMetricsFile is the metrics textfile that could not be written.
	FieldMetricsFile = "METRICS_FILE"
	// FieldReconciledEntries counts the entries a reconcile repaired.
	FieldReconciledEntries = "RECONCILED_ENTRIES"
)

// Fields of a drift's writer (daemon --attribution=audit), from the kernel's
// audit record of the write: who made it and with what.
const (
	// FieldWriter is "unknown (why)" when no audited write matched.
	FieldWriter        = "DRIFT_WRITER"
	FieldWriterPID     = "DRIFT_WRITER_PID"
	FieldWriterComm    = "DRIFT_WRITER_COMM"
	FieldWriterExe     = "DRIFT_WRITER_EXE"
	FieldWriterUID     = "DRIFT_WRITER_UID"
	FieldWriterAUID    = "DRIFT_WRITER_AUID"
	FieldWriterUser    = "DRIFT_WRITER_USER" // the login uid's name in the root's passwd
	FieldWriterSes     = "DRIFT_WRITER_SES"
	FieldWriterSyscall = "DRIFT_WRITER_SYSCALL"
	FieldWriterUnit    = "DRIFT_WRITER_UNIT"
	FieldWriterRemote  = "DRIFT_WRITER_REMOTE_HOST" // the login session's, from logind
	// FieldWriterSessionUser is the login session's user, from logind.
	FieldWriterSessionUser = "DRIFT_WRITER_SESSION_USER"
	FieldAttribution       = "ATTRIBUTION_STATE"
	FieldAttributionWhy    = "ATTRIBUTION_PROBLEM"
)

// FieldDoc documents fields that go together, for drift-monitor(8).
type FieldDoc struct {
	Names []string
	// Man is what they hold, as roff text lines after the names' tag.
	Man string
}

// Fields documents every field of the daemon's records, in the man page's
// order; MESSAGE_ID and PRIORITY, which every record has, come first.
// TestFieldsDocumented fails on a Field constant missing from it.
var Fields = []FieldDoc{
	{[]string{FieldMessageID}, `The record's type, one of the ids listed below: the drift of each kind
of entry has an id of its own, so that
.B journalctl \-x
explains that kind.`},
	{[]string{FieldRecord}, `The record's type by name, in every record:
.B drift\-detected
for the drift of every kind of entry (the ids of
.BR "Configuration drift" " below),"
.BR drift\-resolved ,
.BR notice ,
.BR started ,
.BR ready ,
and so on: the name of the id's constant in lower case, words joined by
.BR \- .
.B journalctl \-u drift\-monitor DRIFT_MONITOR_RECORD=drift\-detected
lists every drift.`},
	{[]string{FieldPriority}, "The record's syslog priority."},
	{[]string{FieldDriftKind}, "What differs, for example\n.BR content ."},
	{[]string{FieldDriftEntry}, "What was declared, for example\n.BR file ."},
	{[]string{FieldDriftPath}, "The host path of the entry (for units, the unit file)."},
	{[]string{FieldDriftUnit}, "The systemd unit."},
	{[]string{FieldDriftUser, FieldDriftGroup}, "The user (of a user or SSH keys entry) or group a record is about."},
	{[]string{FieldDriftWant, FieldDriftGot}, "What was declared and what was found, where they can be shown."},
	{[]string{FieldDriftACL, FieldDriftXattr, FieldDriftFileAttr, FieldDriftLabel}, `The ACL entry, extended attribute, file attribute
.RB ( immutable ", " append\-only )
or SELinux label a drift of kind
.BR acl ", " xattr ", " fileattr " or " label
is about (an extended attribute's value only as its size and keyed digest).`},
	{[]string{FieldDriftUndeclared}, `What an undeclared change to the image's
.I /etc
is: the attributes that differ
.RB ( type ", " mode ", " owner ", " group ", " target ", " content ,
and on rpm hosts
.BR device ", " capabilities ),
.BR added ,
.BR removed ,
or
.B unreadable
(see
.BR "THE IMAGE" ).`},
	{[]string{FieldDriftDiff}, `The unified diff
.RI ( "\-want +got" )
of a content drift, where it can be shown, at most 65536 bytes: a longer
diff keeps its first whole lines and ends with a line
.RB \(lq "[\[u2026] N more lines; drift\-monitor check shows the whole diff]" \(rq.
.B MESSAGE
carries as much of the diff as keeps it under 4088 bytes (every message is
cut there, ending in \(lq\[u2026]\(rq), ending with
.RB \(lq "[\[u2026] N more lines in DRIFT_DIFF]" \(rq
when the diff does not fit:
.B journalctl \-o json
(and the OpenTelemetry journald receiver, which reads it) prints a field of
4096 bytes or more, name and
.RB \(lq = \(rq
included, as
.B null
unless
.B \-\-all
(the receiver's
.BR "all: true" )
is given, and so keeps every
.B MESSAGE
and short field, and a long
.B DRIFT_DIFF
only with
.BR \-\-all .
On standard error the diff follows the message whole, as
.RI \(lq "MESSAGE (\-want +got):" \(rq
and the diff, escaped.`},
	{[]string{FieldInhibitWho, FieldInhibitWhy, FieldInhibitPID}, "The holder of an inhibitor."},
	{[]string{FieldConfigError}, "Why a desired config could not be loaded."},
	{[]string{FieldBusLink}, `Which connection to the system bus was lost or is back:
.B systemd
(unit enablement) or
.B api
(the daemon's D\-Bus API).`},
	{[]string{FieldReconciledEntries}, `How many entries a
.B drift\-monitor reconcile
repaired.`},
	{[]string{FieldMetricsFile}, "The metrics textfile that could not be written."},
	{[]string{FieldWriter, FieldWriterPID, FieldWriterComm, FieldWriterExe, FieldWriterUID, FieldWriterAUID,
		FieldWriterUser, FieldWriterSes, FieldWriterSyscall, FieldWriterUnit, FieldWriterSessionUser, FieldWriterRemote},
		`With
.BR \-\-attribution=audit :
the writer of a drift, from the kernel's audit record of the write (see
.BR ATTRIBUTION ),
or
.B DRIFT_WRITER=unknown (why)
when no audited write explains it.`},
	{[]string{FieldAttribution, FieldAttributionWhy}, "What attribution can claim now, and why not (see\n.BR ATTRIBUTION )."},
}
