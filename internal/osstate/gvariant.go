package osstate

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The few GVariant shapes ostree's state files use, read from their
// serialised normal form (GLib's gvariant-serialiser.c; little-endian, as
// ostree writes them on the hosts it runs on): a{sv} dictionaries
// (/run/ostree-booted, /run/ostree/staged-deployment), strings, (tt), and
// the first member of a commit object. Only what is needed is decoded; a
// malformed value is an error, never a guess.

var errGVariant = errors.New("malformed GVariant")

// offsetSize is the size of the framing offsets of a container of n bytes.
func offsetSize(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= 0xff:
		return 1
	case n <= 0xffff:
		return 2
	case n <= 0xffffffff:
		return 4
	}
	return 8
}

func readOffset(b []byte, size int) int {
	switch size {
	case 1:
		return int(b[0])
	case 2:
		return int(binary.LittleEndian.Uint16(b))
	case 4:
		return int(binary.LittleEndian.Uint32(b))
	}
	return int(binary.LittleEndian.Uint64(b))
}

func align8(n int) int { return (n + 7) &^ 7 }

// variant is a GVariant "v": its type string and its value's bytes.
type variant struct {
	typ  string
	data []byte
}

// dict reads an a{sv}: each key with its variant value.
func dict(b []byte) (map[string]variant, error) {
	m := map[string]variant{}
	if len(b) == 0 {
		return m, nil
	}
	osz := offsetSize(len(b))
	if len(b) < osz {
		return nil, errGVariant
	}
	end := readOffset(b[len(b)-osz:], osz)
	if end > len(b) || (len(b)-end)%osz != 0 {
		return nil, errGVariant
	}
	n := (len(b) - end) / osz
	start := 0
	for i := 0; i < n; i++ {
		e := readOffset(b[end+i*osz:], osz)
		if e < start || e > end {
			return nil, errGVariant
		}
		k, v, err := dictEntry(b[start:e])
		if err != nil {
			return nil, err
		}
		m[k] = v
		start = align8(e)
	}
	return m, nil
}

// dictEntry reads one {sv}: the key's end is framed at the entry's end.
func dictEntry(b []byte) (string, variant, error) {
	osz := offsetSize(len(b))
	if len(b) < osz+1 {
		return "", variant{}, errGVariant
	}
	kend := readOffset(b[len(b)-osz:], osz)
	if kend < 1 || kend > len(b)-osz || b[kend-1] != 0 {
		return "", variant{}, errGVariant
	}
	key := string(b[:kend-1])
	vstart := align8(kend)
	if vstart > len(b)-osz {
		return "", variant{}, errGVariant
	}
	v, err := readVariant(b[vstart : len(b)-osz])
	return key, v, err
}

// readVariant splits a "v" into its value and type: the type string
// follows the last NUL.
func readVariant(b []byte) (variant, error) {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == 0 {
			return variant{typ: string(b[i+1:]), data: b[:i]}, nil
		}
	}
	return variant{}, errGVariant
}

// str reads an "s" value.
func (v variant) str() (string, error) {
	if v.typ != "s" || len(v.data) == 0 || v.data[len(v.data)-1] != 0 {
		return "", fmt.Errorf("%w: want a string, got type %q", errGVariant, v.typ)
	}
	return string(v.data[:len(v.data)-1]), nil
}

// devIno reads a "(tt)" value.
func (v variant) devIno() (dev, ino uint64, err error) {
	if v.typ != "(tt)" || len(v.data) != 16 {
		return 0, 0, fmt.Errorf("%w: want (tt), got type %q", errGVariant, v.typ)
	}
	return binary.LittleEndian.Uint64(v.data), binary.LittleEndian.Uint64(v.data[8:]), nil
}

// commitParts reads a commit object, (a{sv}aya(say)sstayay), as far as its
// metadata (the first member) and its parent's checksum (the second): the
// framing offsets of the six non-last variable-size members are at the
// end, in reverse order (ostree's OSTREE_COMMIT_GVARIANT_STRING,
// src/libostree/ostree-core.h).
func commitParts(b []byte) (meta map[string]variant, parent []byte, err error) {
	osz := offsetSize(len(b))
	if len(b) < 6*osz {
		return nil, nil, errGVariant
	}
	off := func(member int) int { return readOffset(b[len(b)-(member+1)*osz:], osz) }
	metaEnd, parentEnd := off(0), off(1)
	if metaEnd > parentEnd || parentEnd > len(b)-6*osz {
		return nil, nil, errGVariant
	}
	meta, err = dict(b[:metaEnd])
	if err != nil {
		return nil, nil, err
	}
	return meta, b[metaEnd:parentEnd], nil
}
