// Package contents works out what a declared file holds, as Ignition's
// files stage writes it: the contents' source decoded (a data URL),
// decompressed and verified against its verification.hash, then each
// append fragment. A remote source is described (its hash, or why it
// cannot be verified), never fetched. Both the readers (a config whose
// contents do not decode is refused where it is declared) and the
// derivation of entries read contents through it: a leaf of its own so
// that the readers, which run before the merge, need not import the
// derivation, which runs after it.
package contents

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/vincent-petithory/dataurl"
)

// Of works out what a declared file must hold, following Ignition's
// file stage: contents (decoded, decompressed), then each append fragment.
func Of(f types.File) (*model.Content, error) {
	c := &model.Content{}
	base := f.Contents
	switch {
	case base.Source == nil:
		if f.Overwrite != nil && *f.Overwrite {
			c.Exact = []byte{} // Ignition truncates: an empty base
		} else if len(f.Append) == 0 {
			return nil, nil // existing content is kept: nothing declared
		}
	default:
		data, hash, why, err := Resource(base)
		if err != nil {
			return nil, fmt.Errorf("contents: %w", err)
		}
		switch {
		case why != "":
			c.Unverifiable = why
			return c, nil
		case hash != nil:
			c.Hash = hash
		default:
			c.Exact = data
		}
	}
	var suffix []byte
	for i, a := range f.Append {
		data, _, why, err := Resource(a)
		if err != nil {
			return nil, fmt.Errorf("append %d: %w", i, err)
		}
		if why != "" || data == nil {
			return &model.Content{Unverifiable: fmt.Sprintf("append %d: %s", i, orRemote(why))}, nil
		}
		suffix = append(suffix, data...)
	}
	if c.Exact != nil {
		c.Exact = append(c.Exact, suffix...)
	} else {
		c.Suffix = suffix
	}
	return c, nil
}

func orRemote(why string) string {
	if why != "" {
		return why
	}
	return "remote source: its length is unknown, so the content after it cannot be located"
}

// Resource decodes an Ignition resource. It returns the bytes of a data URL
// (decompressed, and verified against its verification.hash), or the
// verification hash of a remote source, or why the source cannot be
// verified without fetching it (it is never fetched).
func Resource(r types.Resource) (data []byte, hash *model.Hash, unverifiable string, err error) {
	if r.Source == nil || *r.Source == "" {
		// Ignition fetches nothing for an empty source ("" parses as a URL
		// without a scheme): the file it writes is empty.
		return []byte{}, nil, "", nil
	}
	src := *r.Source
	if data, ok := types.Base64DataURL(src); ok {
		data, err := decompressed(data, r.Compression)
		if err == nil {
			err = VerifyHash(r.Verification, data)
		}
		return data, nil, "", err
	}
	u, err := url.Parse(src)
	if err != nil {
		return nil, nil, "", fmt.Errorf("invalid source URL: %w", err)
	}
	if u.Scheme != "data" {
		if r.Verification.Hash == nil {
			return nil, nil, fmt.Sprintf("remote %s source without verification.hash (never fetched)", u.Scheme), nil
		}
		// With compression, the hash describes the decompressed file (Ignition
		// verifies after decompressing): what the disk holds.
		algo, sum, ok := strings.Cut(*r.Verification.Hash, "-")
		if !ok {
			return nil, nil, "", fmt.Errorf("invalid verification.hash %q", *r.Verification.Hash)
		}
		return nil, &model.Hash{Algorithm: algo, Hex: strings.ToLower(sum)}, "", nil
	}
	du, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, nil, "", fmt.Errorf("undecodable data URL: %w", err)
	}
	data, err = decompressed(du.Data, r.Compression)
	if err == nil {
		err = VerifyHash(r.Verification, data)
	}
	return data, nil, "", err
}

// decompressed is data as the disk holds it: gunzipped for gzip.
func decompressed(data []byte, compression *string) ([]byte, error) {
	if compression != nil && *compression == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip data URL: %w", err)
		}
		data, err = io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("gzip data URL: %w", err)
		}
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Compressed says whether a file has a compressed source.
func Compressed(f types.File) bool {
	return anySource(f, func(r types.Resource) bool { return r.Compression != nil && *r.Compression != "" })
}

// anySource says whether is holds for the file's contents or one of its
// append fragments.
func anySource(f types.File, is func(types.Resource) bool) bool {
	return is(f.Contents) || slices.ContainsFunc(f.Append, is)
}
