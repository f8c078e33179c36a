package statekey

import (
	"os"
	"time"
)

// DigestFiles names files other than configs by their contents, as a load
// names its config files (Of): each one's size and FileDigest, of the
// file as open opens it now, or, for a file whose trusted and settled stamp
// memo remembers, without reading it (FileStamp says where a stamp is
// trusted; a file hashed is remembered once settled). ok is false when one
// is not a regular file or cannot be read whole. For what is derived from
// files the way a state is derived from configs (the SELinux defaults a
// policy gives), whose digests must be what a config's would be.
func DigestFiles(open func(name string) (*os.File, error), names []string, memo DigestMemo) (sizes []int64, sums []FileDigest, ok bool) {
	return fileDigests(open, names, nil, Digests{Memo: memo, Now: time.Now})
}

// DigestOf is the FileDigest of contents in memory: what DigestFiles gives
// a file that holds them.
func DigestOf(b []byte) FileDigest { return heldDigest(b) }
