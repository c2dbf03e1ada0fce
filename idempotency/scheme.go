package idempotency

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// HashSchemeD1JS is the Record.HashScheme of a record imported from the
// Workers + D1 service this one replaces (cmd/sync-events-import-d1): its
// PayloadHash is the lowercase hex SHA-256 of the payload as that
// service's JavaScript serialised it, JSON.stringify of the object with
// its keys sorted by JavaScript's default sort. That form is RFC 8785's
// but for the order of members and one member: in every object, the
// names that are array indexes ("0" to "4294967294" in canonical decimal;
// not "01", not "-1") come first in ascending numeric order, as
// JavaScript enumerates them, then the other names in RFC 8785's order;
// a member named "__proto__" is left out, as assigning it to a new object
// does not make it a member. A retry of such a record's key is held to
// that digest.
const HashSchemeD1JS = "d1-js"

// d1jsForm is the form HashSchemeD1JS hashes, made from the RFC 8785
// canonical form of the same body: RFC 8785 serialises numbers and
// strings as ECMAScript does (its section 3.2.2), and sorts names by
// UTF-16 code units as JavaScript's default sort does, so only the array
// index names move, and "__proto__" goes.
func d1jsForm(canonical []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(canonical))
	var out bytes.Buffer
	if err := jsOrder(dec, &out); err != nil {
		return nil, fmt.Errorf("the d1-js form: %w", err)
	}
	return out.Bytes(), nil
}

// jsMember is one member of an object in the d1-js form: its name as
// canonical JSON, and its value already in that form.
type jsMember struct {
	name, value []byte
	index       int64 // the array index the name is, or -1
}

// jsOrder writes the next value of dec to out in the d1-js form.
func jsOrder(dec *jsontext.Decoder, out *bytes.Buffer) error {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		var members []jsMember
		for dec.PeekKind() != '}' {
			raw, err := dec.ReadValue()
			if err != nil {
				return err
			}
			name := bytes.Clone(raw) // raw is the decoder's, until its next read
			var value bytes.Buffer
			if err := jsOrder(dec, &value); err != nil {
				return err
			}
			// Neither an index nor "__proto__" has a character that a
			// canonical name escapes, so the quoted text is the name.
			text := string(name[1 : len(name)-1])
			if text == "__proto__" {
				continue
			}
			members = append(members, jsMember{name: name, value: value.Bytes(), index: arrayIndex(text)})
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		slices.SortStableFunc(members, func(a, b jsMember) int {
			switch {
			case a.index >= 0 && b.index >= 0:
				return int(a.index - b.index)
			case a.index >= 0:
				return -1
			case b.index >= 0:
				return 1
			}
			return 0 // RFC 8785's order, kept
		})
		out.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				out.WriteByte(',')
			}
			out.Write(m.name)
			out.WriteByte(':')
			out.Write(m.value)
		}
		out.WriteByte('}')
		return nil
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		out.WriteByte('[')
		for i := 0; dec.PeekKind() != ']'; i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := jsOrder(dec, out); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken()
		out.WriteByte(']')
		return err
	default:
		v, err := dec.ReadValue()
		out.Write(v)
		return err
	}
}

// maxArrayIndex is the largest array index, 2^32 - 2.
const maxArrayIndex = 1<<32 - 2

// arrayIndex is the array index name is (ECMAScript: the canonical
// decimal string of an integer from 0 to 2^32 - 2), or -1.
func arrayIndex(name string) int64 {
	if name == "" || len(name) > 10 || (name[0] == '0' && len(name) > 1) {
		return -1
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return -1
		}
	}
	n, err := strconv.ParseInt(name, 10, 64)
	if err != nil || n > maxArrayIndex {
		return -1
	}
	return n
}
