package model

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
)

// TestDigest: the keyed digest is HMAC-SHA256 under the key of the
// content's SHA-256 (what drift's reports and the first-boot record have
// always given), named "hmac-sha256:HEX", and reads back from its text.
func TestDigest(t *testing.T) {
	key := []byte("the host's digest key")
	sum := sha256.Sum256([]byte("hunter2"))
	m := hmac.New(sha256.New, key)
	m.Write(sum[:])
	want := Digest(m.Sum(nil))
	got := NewKey(key).Digest(sum)
	if !got.Equal(want) {
		t.Fatalf("Digest = %s, want %s", got, want)
	}
	if s := got.String(); !strings.HasPrefix(s, "hmac-sha256:") || len(s) != len("hmac-sha256:")+64 {
		t.Errorf("String = %q", s)
	}
	back, err := ParseDigest(got.String())
	if err != nil || back != got {
		t.Errorf("ParseDigest(%q) = %s, %v", got, back, err)
	}
	for _, bad := range []string{"", "sha256:" + strings.Repeat("0", 64), "hmac-sha256:xyz", "hmac-sha256:" + strings.Repeat("0", 62)} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) took it", bad)
		}
	}
	if NewKey(key).Digest(sum) == NewKey([]byte("another key")).Digest(sum) {
		t.Error("two keys give the same digest")
	}
}

// TestBaseJSON: a Base is written as the first-boot record has it (its
// digest as text, no key, no record path) and matches its content only
// under its key.
func TestBaseJSON(t *testing.T) {
	key := NewKey([]byte("k"))
	b := Base{Size: 3, Keyed: key.Digest(sha256.Sum256([]byte("abc"))), Key: key, Record: "/r"}
	raw, err := json.Marshal(&b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"size":3,"digest":"` + b.Keyed.String() + `"}`; string(raw) != want {
		t.Errorf("JSON %s, want %s", raw, want)
	}
	if raw, _ := json.Marshal(&Base{Unknown: "why"}); string(raw) != `{"unknown":"why","size":0}` {
		t.Errorf("JSON of an unknown base: %s", raw)
	}
	var back Base
	if err := json.Unmarshal(raw, &back); err != nil || back.Keyed != b.Keyed || back.Key.Valid() {
		t.Errorf("read back %+v, %v", back, err)
	}
	if !b.Holds([]byte("abc")) || b.Holds([]byte("abd")) {
		t.Error("Holds does not tell the base from another content")
	}
	back.Key = NewKey([]byte("not k"))
	if back.Holds([]byte("abc")) {
		t.Error("Holds under another key")
	}
}
