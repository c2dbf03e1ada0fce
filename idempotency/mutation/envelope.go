package mutation

import (
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

// Subject is the default Options.User: the token's sub claim, which the
// authorizer verified. Nothing the client sends can set it.
func Subject(r *Request) (string, error) {
	sub := r.Claims["sub"]
	if strings.TrimSpace(sub) == "" {
		return "", ErrUnauthorized
	}
	return sub, nil
}

// HeaderKey is the default Options.Key: the Idempotency-Key header, read
// by idempotency.ParseKey.
func HeaderKey(r *Request) (string, error) {
	return idempotency.ParseKey(r.Header.Values(idempotency.HeaderName))
}

var (
	errContentType = errcode.New(errcode.UnsupportedMediaType, "Content-Type must be application/json")
	errCharset     = errcode.New(errcode.UnsupportedMediaType, "Content-Type charset must be utf-8")
	errNoBody      = errcode.Invalid("Request body is required", bodyField)
	errNotBase64   = errcode.Invalid("Request body is marked base64-encoded but is not valid base64", bodyField)
	bodyField      = errcode.Field{Field: "body"}
)

// checkContentType accepts application/json, with a charset only if UTF-8,
// which is the only encoding JSON may have between systems (RFC 8259).
func checkContentType(h http.Header) error {
	vs := h.Values("Content-Type")
	if len(vs) != 1 {
		return errContentType
	}
	mt, params, err := mime.ParseMediaType(vs[0])
	if err != nil || mt != "application/json" {
		return errContentType
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return errCharset
	}
	return nil
}

// tooLarge is the 413 for a body over limit bytes.
func tooLarge(limit int) error {
	return errcode.New(errcode.PayloadTooLarge, fmt.Sprintf("Request body exceeds %d bytes", limit))
}

// decodeBody is the body as sent, base64-decoded if it was marked so, and
// no longer than limit.
func decodeBody(b []byte, isBase64 bool, limit int) ([]byte, error) {
	if isBase64 {
		if len(b) > base64.StdEncoding.EncodedLen(limit) {
			return nil, tooLarge(limit)
		}
		d := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
		n, err := base64.StdEncoding.Strict().Decode(d, b)
		if err != nil {
			return nil, errNotBase64
		}
		b = d[:n]
	}
	switch {
	case len(b) > limit:
		return nil, tooLarge(limit)
	case len(strings.TrimSpace(string(b))) == 0:
		return nil, errNoBody
	}
	return b, nil
}

// canonicalJSON is the RFC 8785 form of b, or the 400 that says why b has
// none.
func canonicalJSON(b []byte) ([]byte, error) {
	c, err := idempotency.Canonicalize(b)
	var bad *idempotency.NotIJSONError
	if errors.As(err, &bad) {
		return nil, errcode.Invalid("Request body is not valid JSON (RFC 8259 / I-JSON): "+notIJSONReason(bad.Reason), bodyField)
	}
	return c, err
}

// notIJSONReasons map what the JSON library says to a sentence of our
// own: its text quotes the client's member names, pointers, strings and
// numbers, and an answer never echoes the client's input. The first
// matching row wins; the last is the catch-all.
var notIJSONReasons = []struct{ cue, reason string }{
	{"duplicate", "a member name appears twice in one object"},
	{"UTF-8", "it is not UTF-8"},
	{"surrogate", "a string holds an unpaired surrogate escape"},
	{"noncharacter", "a string or member name holds a Unicode noncharacter"},
	{"range of a double", "a number is outside the range of a double"},
	{"EOF", "it ends inside a JSON value"},
	{"", "it is not well-formed JSON"},
}

// byteOffset is the position the library reports: a number, not input.
var byteOffset = regexp.MustCompile(`after offset ([0-9]+)$`)

// notIJSONReason is reason in words that hold no byte the client sent:
// one of notIJSONReasons, and the byte offset where the library gave one.
func notIJSONReason(reason string) string {
	out := ""
	for _, r := range notIJSONReasons {
		if strings.Contains(reason, r.cue) {
			out = r.reason
			break
		}
	}
	if m := byteOffset.FindStringSubmatch(reason); m != nil {
		out += " (after byte " + m[1] + ")"
	}
	return out
}
