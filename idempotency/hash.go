package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrNotIJSON reports a body that is not valid I-JSON (RFC 7493), the
// subset of JSON that RFC 8785 canonicalizes. Canonicalize's errors are a
// *NotIJSONError, which matches it.
var ErrNotIJSON = errors.New("body is not valid I-JSON")

// NotIJSONError says why a body is not I-JSON. Reason is fit for the client:
// it names a byte offset, a code point or a rule, never the text around it.
type NotIJSONError struct{ Reason string }

func (e *NotIJSONError) Error() string { return ErrNotIJSON.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrNotIJSON) hold.
func (e *NotIJSONError) Is(target error) bool { return target == ErrNotIJSON }

func notIJSON(format string, args ...any) error {
	return &NotIJSONError{Reason: fmt.Sprintf(format, args...)}
}

// maxDouble is how jsontext spells an overflowing number once canonical: it
// clamps instead of failing, so its appearance is the cue to look closer.
var maxDouble = []byte("1.7976931348623157e+308")

// Canonicalize returns the RFC 8785 canonical form of body, leaving body
// untouched. Duplicate member names, invalid UTF-8, lone surrogates,
// Unicode noncharacters, numbers beyond double range, trailing data and
// nesting deeper than 10 000 levels are refused with an error wrapping
// [ErrNotIJSON].
func Canonicalize(body []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(body))
	if err := v.Canonicalize(); err != nil {
		// The library's own prefix says nothing to the client.
		return nil, notIJSON("%s", strings.TrimPrefix(err.Error(), "jsontext: "))
	}
	if err := rejectNoncharacters(v); err != nil {
		return nil, err
	}
	if bytes.Contains(v, maxDouble) {
		if err := rejectOverflow(body); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// rejectOverflow finds a number that does not fit in a double. It reads the
// body token by token, so it runs only when the cheap check above fires.
func rejectOverflow(body []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil // the body was already validated; this is io.EOF
		}
		if tok.Kind() != '0' {
			continue
		}
		// Underflow to zero is precision loss, as for any double; only
		// overflow changes the value beyond recognition.
		if f, _ := strconv.ParseFloat(tok.String(), 64); math.IsInf(f, 0) {
			return notIJSON("number %.40s is outside the range of a double", tok.String())
		}
	}
}

// rejectNoncharacters refuses a string or member name holding a Unicode
// noncharacter (U+FDD0 to U+FDEF, and the last two code points of every
// plane), which I-JSON forbids (RFC 7493 section 2.1). It reads the
// canonical form, where such characters always stand as raw UTF-8 (RFC
// 8785 escapes only controls, quote and backslash), so a byte scan finds
// them however the client escaped them. The error names the code point,
// never the text around it.
func rejectNoncharacters(canonical []byte) error {
	for i := 0; i < len(canonical); i++ {
		b := canonical[i]
		if b < 0xEF {
			continue
		}
		r, n := utf8.DecodeRune(canonical[i:])
		if isNoncharacter(r) {
			return notIJSON("a string or member name holds the noncharacter U+%04X (RFC 7493 section 2.1)", r)
		}
		i += n - 1
	}
	return nil
}

func isNoncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}

// HashCanonical is the lowercase hex SHA-256 of an already canonical body.
func HashCanonical(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// PayloadHash canonicalizes body and hashes the result: the payload_hash
// that a ledger record stores and a retry is compared against.
func PayloadHash(body []byte) (string, error) {
	canonical, err := Canonicalize(body)
	if err != nil {
		return "", err
	}
	return HashCanonical(canonical), nil
}
