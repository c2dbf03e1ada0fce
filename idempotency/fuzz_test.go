package idempotency

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzCanonicalHash: whatever Canonicalize accepts, canonicalizing again
// changes nothing; white space and key order never change the hash; and the
// canonical form means what the input meant.
func FuzzCanonicalHash(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		canonical, err := Canonicalize(body)
		if err != nil {
			return
		}
		again, err := Canonicalize(canonical)
		if err != nil || !bytes.Equal(again, canonical) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", body, canonical, again, err)
		}
		hash := HashCanonical(canonical)
		indented := jsontext.Value(bytes.Clone(body))
		if err := indented.Indent(jsontext.WithIndent("\t")); err == nil {
			if h, err := PayloadHash(indented); err != nil || h != hash {
				t.Fatalf("re-indenting %q changed the hash (%v)", body, err)
			}
		}
		var inMeaning, canonMeaning any
		if json.Unmarshal(body, &inMeaning) != nil || json.Unmarshal(canonical, &canonMeaning) != nil {
			t.Fatalf("encoding/json refuses %q or its canonical form %q", body, canonical)
		}
		if !reflect.DeepEqual(inMeaning, canonMeaning) {
			t.Fatalf("meaning changed: %q -> %q", body, canonical)
		}
		// encoding/json re-encodes with its own key order and escaping.
		reordered, err := json.Marshal(inMeaning)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := PayloadHash(reordered); err != nil || h != hash {
			t.Fatalf("re-encoding %q as %q changed the hash (%v)", body, reordered, err)
		}
	})
}
