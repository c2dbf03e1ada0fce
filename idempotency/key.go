package idempotency

import (
	"strings"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
)

// HeaderName is the request header that carries the idempotency key.
const HeaderName = "Idempotency-Key"

// Key errors: each a 400 whose message the client reads.
var (
	ErrKeyMissing  = &errcode.Error{Code: errcode.ValidationFailed, Message: "Idempotency-Key header is required"}
	ErrKeyMultiple = &errcode.Error{Code: errcode.ValidationFailed, Message: "Idempotency-Key header must appear once, with a single value"}
	ErrKeyInvalid  = &errcode.Error{Code: errcode.ValidationFailed, Message: "Idempotency-Key must be a UUID in canonical form (8-4-4-4-12 hexadecimal digits)"}
)

// ParseKey validates the values an Idempotency-Key header arrived with and
// returns the key in lowercase canonical form. UUIDs are case-insensitive
// (RFC 9562), so upper- and lowercase spellings of one key name one record.
// Leading and trailing blanks are not part of an HTTP field value (RFC 9110,
// section 5.5), so they are dropped, as net/http and API Gateway do. The
// key may also come as a Structured Field String (RFC 8941), in double
// quotes, which is how draft-ietf-httpapi-idempotency-key-header defines the
// header: "8e03978e-..." and the bare UUID are the same key. Braces,
// "urn:uuid:" prefixes, hyphen-less forms, single quotes, unbalanced quotes
// and structured-field parameters are refused rather than guessed.
func ParseKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrKeyMissing
	case 1:
	default:
		return "", ErrKeyMultiple
	}
	v := strings.Trim(values[0], " \t")
	if v == "" {
		return "", ErrKeyMissing
	}
	// API Gateway joins repeated headers with commas into one value.
	if strings.Contains(v, ",") {
		return "", ErrKeyMultiple
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		// A UUID holds no '"' or backslash, so the string needs no unescaping:
		// what is inside the quotes is the key, or it is not a UUID.
		v = v[1 : len(v)-1]
	}
	key, ok := ParseUUID(v)
	if !ok {
		return "", ErrKeyInvalid
	}
	return key, nil
}

// uuidTextLen is the length of the 8-4-4-4-12 text form of a UUID.
const uuidTextLen = 36

// ParseUUID is the one rule by which a key is read, offered to anything
// else a client names by a UUID (an event's id, a note's): s must be
// 8-4-4-4-12 hexadecimal digits, in either case, and comes back in
// lowercase. Braces, "urn:uuid:" and hyphen-less forms, which
// uuid.Parse would take, are refused, so one UUID has one spelling.
func ParseUUID(s string) (string, bool) {
	if len(s) != uuidTextLen {
		return "", false
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return id.String(), true
}
