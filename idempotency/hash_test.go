package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestHashMatchesJavaScript checks the canonical form and hash of each
// vector against what Node.js computed (testdata/gen-vectors.mjs).
func TestHashMatchesJavaScript(t *testing.T) {
	raw, err := os.ReadFile("testdata/jcs-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct{ Input, Canonical, Sha256 string }
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) < 10 {
		t.Fatalf("only %d vectors", len(vectors))
	}
	for _, v := range vectors {
		got, err := Canonicalize([]byte(v.Input))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", v.Input, err)
			continue
		}
		if string(got) != v.Canonical {
			t.Errorf("Canonicalize(%s)\n got %s\nwant %s", v.Input, got, v.Canonical)
		}
		if h, _ := PayloadHash([]byte(v.Input)); h != v.Sha256 {
			t.Errorf("PayloadHash(%s) = %s, want %s", v.Input, h, v.Sha256)
		}
	}
}

func TestEquivalentBodiesHashTheSame(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"key order", `{"a":1,"b":{"c":2,"d":3}}`, `{"b":{"d":3,"c":2},"a":1}`},
		{"white space", `{"a":[1,2]}`, "\n{ \"a\" :\t[ 1 ,\r\n 2 ] }\n"},
		{"string escapes", `{"s":"Aé/"}`, `{"s":"\u0041\u00e9\/"}`},
		{"number spelling", `{"n":[100,0.5,0]}`, `{"n":[1e2,5E-1,-0.0]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, errA := PayloadHash([]byte(tt.a))
			hb, errB := PayloadHash([]byte(tt.b))
			if errA != nil || errB != nil || ha != hb {
				t.Fatalf("hashes %s (%v) and %s (%v) differ", ha, errA, hb, errB)
			}
		})
	}
}

func TestDifferentBodiesHashDifferently(t *testing.T) {
	ha, _ := PayloadHash([]byte(`{"a":1}`))
	hb, _ := PayloadHash([]byte(`{"a":"1"}`))
	if ha == hb {
		t.Fatal("a number and a string hash the same")
	}
}

func TestCanonicalizeRejectsWhatIJSONRefuses(t *testing.T) {
	tests := []struct{ name, body string }{
		{"duplicate names", `{"a":1,"a":2}`},
		{"invalid UTF-8", "{\"a\":\"\xff\"}"},
		{"lone high surrogate", `{"a":"\ud800"}`},
		{"lone low surrogate", `{"a":"\udc00x"}`},
		{"number over double range", `{"a":1e400}`},
		{"negative number over double range", `[-1e309]`},
		{"trailing garbage", `{"a":1} x`},
		{"two values", `{} {}`},
		{"not JSON", `hello`},
		{"empty", ``},
		{"truncated", `{"a":`},
		{"deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000)},
		{"single quotes", `{'a':1}`},
		{"trailing comma", `{"a":1,}`},
		{"NaN", `{"a":NaN}`},
		// Noncharacters, RFC 7493 section 2.1, escaped or raw, in values and names.
		{"escaped U+FFFF", `{"a":"\uffff"}`},
		{"escaped U+FFFE", `["x\uFFFEy"]`},
		{"raw U+FDD0", "{\"a\":\"\uFDD0\"}"},
		{"raw U+FDEF", "[\"\uFDEF\"]"},
		{"U+1FFFE as an escaped pair in a name", `{"\ud83f\udffe":1}`},
		{"raw U+10FFFF", "[\"\U0010FFFF\"]"},
		{"raw U+7FFFF", "[\"\U0007FFFF\"]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Canonicalize([]byte(tt.body))
			if !errors.Is(err, ErrNotIJSON) {
				t.Fatalf("Canonicalize accepted it (err = %v)", err)
			}
		})
	}
}

func TestCanonicalizeKeepsTheCharactersNextToNoncharacters(t *testing.T) {
	for _, body := range []string{"[\"\uFDCF\uFDF0\uFFFD\uFFEF\U0010FFFD\U0001FFFD\U00020000\"]", `["\ufdcf\ufffd\ud83f\udffd"]`} {
		if _, err := Canonicalize([]byte(body)); err != nil {
			t.Errorf("Canonicalize(%q): %v", body, err)
		}
	}
}

func TestCanonicalizeKeepsTheLargestDouble(t *testing.T) {
	// The overflow check must not refuse the largest double itself, nor a
	// number that merely underflows to zero next to it.
	body := []byte(`[1.7976931348623157e308,1e-400]`)
	got, err := Canonicalize(body)
	if err != nil || string(got) != `[1.7976931348623157e+308,0]` {
		t.Fatalf("Canonicalize(%s) = %s, %v", body, got, err)
	}
}

func TestCanonicalizeLeavesInputAlone(t *testing.T) {
	body := []byte(`{"b":1, "a":2}`)
	before := bytes.Clone(body)
	if _, err := Canonicalize(body); err != nil || !bytes.Equal(body, before) {
		t.Fatalf("input changed to %s (err %v)", body, err)
	}
}

func TestHashIsLowercaseHexSHA256OfCanonicalForm(t *testing.T) {
	sum := sha256.Sum256([]byte(`{"a":2,"b":1}`))
	if got, _ := PayloadHash([]byte(`{"b":1,"a":2}`)); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("got %s", got)
	}
}
