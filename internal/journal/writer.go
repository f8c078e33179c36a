package journal

import "log/slog"

// WriterUnknown is the attr of a drift no audited write explains, and why.
func WriterUnknown(why string) slog.Attr { return slog.String(FieldWriter, "unknown ("+why+")") }

// WriterAttr is one field of a drift's writer; key is a FieldWriter*.
func WriterAttr(key, value string) slog.Attr { return slog.String(key, value) }

// Attribution is the attr of the attribution's health state.
func Attribution(state string) slog.Attr { return slog.String(FieldAttribution, state) }
