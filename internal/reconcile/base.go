package reconcile

import (
	"bytes"
	"path"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// appendBase is the base of a file declared with append fragments and no
// contents: what it held before Ignition appended the fragments to it
// (ignition v2.27.0 internal/exec/util/file.go, PerformFetch with Append:
// os.OpenFile(O_APPEND|O_CREATE) on the existing file;
// internal/exec/stages/files/filesystemEntries.go, fileEntry.create: an
// existing regular file without contents.source is appended to in place).
// Only the first boot knows it, and its record (package firstboot) keeps it
// as a length and a keyed digest: the bytes are taken from the first of
// these that holds exactly them — the record itself (a base anyone could
// read), the start of the file as it is now (a fragment lost at the end),
// the /usr/etc twin of an rpm-ostree host's /etc file. Without a record,
// or when none holds the base, the file is refused: what stands there now
// is no base (a file that lost its last fragment would get its first one
// twice), and a guess would be written as if Ignition had written it.
func (r *Reconciler) appendBase(w *writer, e *model.Entry, ob *ondisk.Observation) ([]byte, error) {
	const what = "it is declared with append fragments and no contents, so its content is what it held before Ignition appended to it"
	b := e.Content.Base
	switch {
	case b == nil:
		return nil, refuse("%s, and no first-boot record (%s, written by drift-monitor adopt) says what that was: drift-monitor does not guess it", what, firstboot.DefaultPath)
	case b.Unknown != "":
		return nil, refuse("%s, and %s", what, b.Unknown)
	}
	if b.Size == 0 {
		return []byte{}, nil // nothing was there: Ignition created the file
	}
	if b.Bytes != nil && b.Holds(b.Bytes) {
		return bytes.Clone(b.Bytes), nil
	}
	if ob.Type == ondisk.Regular && ob.Size >= b.Size {
		dir, err := w.dir(path.Dir(e.Path))
		if err != nil {
			return nil, opError("opening directory", path.Dir(e.Path), err)
		}
		// Only the base's length is read: the rest is to be replaced.
		now, err := w.readPrefix(dir, path.Base(e.Path), b.Size)
		unix.Close(dir)
		if err != nil {
			return nil, opError("reading", e.Path, err)
		}
		if int64(len(now)) >= b.Size && b.Holds(now[:b.Size]) {
			return now[:b.Size], nil
		}
	}
	if b.Twin != "" {
		if twin, err := r.Root.ReadFile(b.Twin); err == nil && b.Holds(twin) {
			return twin, nil
		}
	}
	where := "the start of the file"
	if b.Twin != "" {
		where += " nor " + b.Twin
	}
	return nil, refuse("%s: %d bytes, recorded in %s by their digest only, and neither %s holds them any more: drift-monitor does not guess them", what, b.Size, b.Record, where)
}
