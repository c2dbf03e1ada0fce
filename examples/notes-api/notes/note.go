package notes

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

// Limits of a note's fields. A note stays far below DynamoDB's 400 KB an
// item, and its answer below what the ledger record holds.
const (
	MaxTitleChars = 200
	MaxBodyBytes  = 32 << 10
	// maxVersion keeps version+1 an integer JSON carries exactly (2^53).
	maxVersion = 1<<53 - 2
)

// note is a note as the API answers it. A PATCH answers the fields it
// changed and the new version: the rest it did not read.
type note struct {
	ID      string  `json:"id"`
	Title   *string `json:"title,omitempty"`
	Body    *string `json:"body,omitempty"`
	Version int64   `json:"version"`
}

// decode reads a JSON object into v, refusing members v does not have:
// a misspelt field would otherwise be dropped without a word.
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// The decoder's text quotes the client's input; an answer never does.
		return errcode.Invalid("Request body is not a valid note: an object of the note's fields, no others, each of its type", errcode.Field{Field: "body"})
	}
	return nil
}

// fieldCheck gathers every invalid field of a body, so that one answer
// names them all.
type fieldCheck struct{ errs errcode.FieldErrors }

func (c *fieldCheck) add(field, message string) {
	c.errs = append(c.errs, errcode.FieldError{Field: field, Message: message})
}

func (c *fieldCheck) title(t *string, required bool) {
	switch {
	case t == nil && required:
		c.add("title", "is required")
	case t == nil:
	case strings.TrimSpace(*t) == "" || utf8.RuneCountInString(*t) > MaxTitleChars:
		c.add("title", "must be 1 to 200 characters, not all blank")
	}
}

func (c *fieldCheck) body(b *string) {
	if b != nil && len(*b) > MaxBodyBytes {
		c.add("body", "must be at most 32768 bytes")
	}
}

// err is the 400 naming every invalid field, or nil.
func (c *fieldCheck) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return errcode.Invalid("Request body has invalid fields", c.errs)
}

// pathID is the note id of the path: a UUID, in lowercase.
func pathID(params map[string]string) (string, error) {
	id, ok := idempotency.ParseUUID(params["id"])
	if !ok {
		return "", errcode.Invalid("The note id in the path must be a UUID", errcode.Field{Field: "id"})
	}
	return id, nil
}
