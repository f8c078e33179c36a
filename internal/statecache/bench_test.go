package statecache

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// BenchmarkDecode is what a cached check spends bringing a state of 10,000
// files out of its entry once it is in memory: the checksums and the
// metadata's decoding (paths, kinds, owners, modes and the contents' places).
func BenchmarkDecode(b *testing.B) {
	mode, uid := uint32(0o644), 0
	st := model.State{Files: []string{"/etc/drift-monitor/config.ign"}}
	for i := range 10000 {
		st.Entries = append(st.Entries, model.Entry{Kind: model.KindFile, Type: model.TypeRegular,
			Path: fmt.Sprintf("/var/lib/bench/d%03d/f%03d", i/100, i%100), Mode: &mode, UID: &uid, GID: &uid,
			Content: &model.Content{Exact: bytes.Repeat([]byte{byte(i)}, 512)}})
	}
	var key [sha256.Size]byte
	var buf bytes.Buffer
	if err := encodeState(&buf, key, &st); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeState(data, key); err != nil {
			b.Fatal(err)
		}
	}
}
