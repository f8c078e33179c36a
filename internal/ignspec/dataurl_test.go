package ignspec

import (
	"bytes"
	"testing"

	"github.com/coreos/vcontext/path"
	"github.com/vincent-petithory/dataurl"
)

// FuzzBase64DataURL: where Base64DataURL decodes, dataurl decodes the same
// bytes, validBase64DataURL agrees, and Ignition's validation of a file's
// contents accepts the source as it accepts validQuick's placeholder; and
// it does decode the shape Ignition's tools write.
func FuzzBase64DataURL(f *testing.F) {
	for _, s := range []string{"data:;base64,", "data:;base64,eQ==", "data:;base64,eQ", "data:;base64,e Q==", "data:;base64,eQ==\n",
		"data:;base64,=", "data:;base64,YWJj%3D", "data:text/plain;base64,eQ==", "data:;BASE64,eQ==", "data:,eQ==", "data:;base64,4pyTIMOgIGxhIG1vZGU="} {
		f.Add(s)
	}
	if _, ok := Base64DataURL("data:;base64,eQ=="); !ok {
		f.Error("Base64DataURL does not decode data:;base64,eQ==")
	}
	placeholder := "data:,"
	if r := (Resource{Source: &placeholder}).Validate(path.New("json")); len(r.Entries) != 0 {
		f.Errorf("Ignition refuses validQuick's placeholder: %s", r)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Base64DataURL(s)
		if _, valid := validBase64DataURL(s, nil); valid != ok {
			t.Fatalf("validBase64DataURL(%q) = %v, Base64DataURL %v", s, valid, ok)
		}
		if !ok {
			return
		}
		du, err := dataurl.DecodeString(s)
		if err != nil {
			t.Fatalf("Base64DataURL(%q) = %q; dataurl: %v", s, got, err)
		}
		if !bytes.Equal(got, du.Data) {
			t.Fatalf("Base64DataURL(%q) = %q; dataurl: %q", s, got, du.Data)
		}
		if r := (Resource{Source: &s}).Validate(path.New("json")); len(r.Entries) != 0 {
			t.Fatalf("Ignition refuses %q: %s", s, r)
		}
	})
}
