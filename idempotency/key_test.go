package idempotency

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	const key = "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31"
	tests := []struct {
		name    string
		values  []string
		want    string
		wantErr error
	}{
		{"canonical", []string{key}, key, nil},
		{"uppercase is the same key", []string{strings.ToUpper(key)}, key, nil},
		{"surrounding blanks are not part of the value", []string{" \t" + key + " "}, key, nil},
		{"absent", nil, "", ErrKeyMissing},
		{"empty", []string{""}, "", ErrKeyMissing},
		{"blank", []string{"   "}, "", ErrKeyMissing},
		{"two headers", []string{key, key}, "", ErrKeyMultiple},
		{"comma-joined by API Gateway", []string{key + "," + key}, "", ErrKeyMultiple},
		{"not a UUID", []string{"hello"}, "", ErrKeyInvalid},
		{"braces", []string{"{" + key + "}"}, "", ErrKeyInvalid},
		{"urn form", []string{"urn:uuid:" + key}, "", ErrKeyInvalid},
		{"no hyphens", []string{strings.ReplaceAll(key, "-", "")}, "", ErrKeyInvalid},
		{"hyphens misplaced", []string{"6f1c2a9e3-b7d-4c1e-9a52-0d8e4f7b6a31"}, "", ErrKeyInvalid},
		{"not hex", []string{"zf1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31"}, "", ErrKeyInvalid},
		{"over-long", []string{key + "0"}, "", ErrKeyInvalid},
		{"very long", []string{strings.Repeat("a", 10000)}, "", ErrKeyInvalid},
		{"inner blank", []string{"6f1c2a9e-3b7d-4c1e-9a52 0d8e4f7b6a31"}, "", ErrKeyInvalid},
		{"structured field string (the draft's form)", []string{`"` + key + `"`}, key, nil},
		{"structured field string, uppercase, blanks around", []string{` "` + strings.ToUpper(key) + `" `}, key, nil},
		{"empty structured field string", []string{`""`}, "", ErrKeyInvalid},
		{"one quote alone", []string{`"`}, "", ErrKeyInvalid},
		{"opening quote only", []string{`"` + key}, "", ErrKeyInvalid},
		{"closing quote only", []string{key + `"`}, "", ErrKeyInvalid},
		{"quoted twice", []string{`""` + key + `""`}, "", ErrKeyInvalid},
		{"single quotes", []string{"'" + key + "'"}, "", ErrKeyInvalid},
		{"blanks inside the quotes", []string{`" ` + key + `"`}, "", ErrKeyInvalid},
		{"structured field parameters", []string{`"` + key + `";a=1`}, "", ErrKeyInvalid},
		{"escaped quote inside", []string{`"\"` + key[2:] + `"`}, "", ErrKeyInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKey(tt.values)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("ParseKey(%q) = %q, %v; want %q, %v", tt.values, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
