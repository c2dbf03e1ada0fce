// Package canonuuid owns the one rule by which the service reads a UUID from
// a client (an Idempotency-Key, an event id) or from storage: 8-4-4-4-12
// hexadecimal digits, either case, answered in lowercase. It knows nothing
// of what the UUID names.
package canonuuid

import "github.com/google/uuid"

// textLen is the length of the 8-4-4-4-12 text form of a UUID.
const textLen = 36

// Parse returns s in lowercase canonical form, and false if s is not a UUID
// in the 8-4-4-4-12 text form (braces, "urn:uuid:" and hyphen-less forms,
// which uuid.Parse would take, are refused).
func Parse(s string) (string, bool) {
	if len(s) != textLen {
		return "", false
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return id.String(), true
}
