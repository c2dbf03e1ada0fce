package api

import (
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/errcode"
	"github.com/sync-events/sync-events/internal/idempotency"
)

// headerValues returns every value of the header called name, whatever the
// case of its name in the event (API Gateway lowercases; tests and other
// proxies may not).
func headerValues(req *events.APIGatewayV2HTTPRequest, name string) []string {
	var vs []string
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			vs = append(vs, v)
		}
	}
	return vs
}

// userID is the verified caller: the sub claim the JWT authorizer put in
// the request context. Nothing the client sends can set it. Both tables
// are partitioned by it, so a sub that DynamoDB could not store as a
// partition key (over 2048 bytes, or not UTF-8) is refused here, before
// anything is sent, rather than failing as a 500 in the middle.
func userID(req *events.APIGatewayV2HTTPRequest) (string, error) {
	a := req.RequestContext.Authorizer
	if a == nil || a.JWT == nil || strings.TrimSpace(a.JWT.Claims["sub"]) == "" {
		return "", errUnauthorized
	}
	sub := a.JWT.Claims["sub"]
	if len(sub) > ddb.MaxPartitionKeyBytes || !utf8.ValidString(sub) {
		return "", errCallerIDUnsupported
	}
	return sub, nil
}

var errCallerIDUnsupported = errcode.New(errcode.CallerIDUnsupported,
	fmt.Sprintf("The token's sub claim is not a user id this service can store (at most %d bytes of UTF-8)", ddb.MaxPartitionKeyBytes))

// idempotencyKey is the request's key; its errors carry no details, so the
// seed's body for a missing key is kept byte for byte.
func idempotencyKey(req *events.APIGatewayV2HTTPRequest) (string, error) {
	return idempotency.ParseKey(headerValues(req, idempotency.HeaderName))
}

var (
	errContentType = errcode.New(errcode.UnsupportedMediaType, "Content-Type must be application/json")
	errCharset     = errcode.New(errcode.UnsupportedMediaType, "Content-Type charset must be utf-8")
	errNoBody      = errcode.Invalid("Request body is required", bodyField)
	errNotBase64   = errcode.Invalid("Request body is marked base64-encoded but is not valid base64", bodyField)
	bodyField      = map[string]string{"field": "body"}
)

// checkContentType accepts application/json, with a charset only if UTF-8,
// which is the only encoding JSON may have between systems (RFC 8259).
func checkContentType(req *events.APIGatewayV2HTTPRequest) error {
	vs := headerValues(req, "Content-Type")
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

// body is the request body as sent, base64-decoded if API Gateway encoded
// it, and no longer than limit.
func body(req *events.APIGatewayV2HTTPRequest, limit int) ([]byte, error) {
	tooLarge := errcode.New(errcode.PayloadTooLarge, fmt.Sprintf("Request body exceeds %d bytes", limit))
	var b []byte
	if req.IsBase64Encoded {
		if len(req.Body) > base64.StdEncoding.EncodedLen(limit) {
			return nil, tooLarge
		}
		var err error
		if b, err = base64.StdEncoding.Strict().DecodeString(req.Body); err != nil {
			return nil, errNotBase64
		}
	} else {
		b = []byte(req.Body)
	}
	switch {
	case len(b) > limit:
		return nil, tooLarge
	case len(strings.TrimSpace(string(b))) == 0:
		return nil, errNoBody
	}
	return b, nil
}

// canonicalBody is the RFC 8785 form of b, or the 400 that says why b has none.
func canonicalBody(b []byte) ([]byte, error) {
	c, err := idempotency.Canonicalize(b)
	var bad *idempotency.NotIJSONError
	if errors.As(err, &bad) {
		return nil, errcode.Invalid("Request body is not valid JSON (RFC 8259 / I-JSON): "+bad.Reason, bodyField)
	}
	return c, err
}
