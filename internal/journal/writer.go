package journal

import "log/slog"

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

// WriterUnknown is the attr of a drift no audited write explains, and why.
func WriterUnknown(why string) slog.Attr { return slog.String(FieldWriter, "unknown ("+why+")") }

// WriterAttr is one field of a drift's writer; key is a FieldWriter*.
func WriterAttr(key, value string) slog.Attr { return slog.String(key, value) }

// Attribution is the attr of the attribution's health state.
func Attribution(state string) slog.Attr { return slog.String(FieldAttribution, state) }
