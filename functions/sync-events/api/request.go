package api

import (
	"encoding/base64"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/ddb"
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
func userID(req *events.APIGatewayV2HTTPRequest) (string, *Error) {
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

var errCallerIDUnsupported = newError(CodeCallerIDUnsupported,
	fmt.Sprintf("The token's sub claim is not a user id this service can store (at most %d bytes of UTF-8)", ddb.MaxPartitionKeyBytes))

func idempotencyKey(req *events.APIGatewayV2HTTPRequest) (string, *Error) {
	key, err := idempotency.ParseKey(headerValues(req, idempotency.HeaderName))
	if err != nil {
		// No details: the seed's body for a missing key is fixed byte for byte.
		return "", validation(err.Error(), nil)
	}
	return key, nil
}

// checkContentType accepts application/json, with a charset only if UTF-8,
// which is the only encoding JSON may have between systems (RFC 8259).
func checkContentType(req *events.APIGatewayV2HTTPRequest) *Error {
	vs := headerValues(req, "Content-Type")
	if len(vs) != 1 {
		return newError(CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	mt, params, err := mime.ParseMediaType(vs[0])
	if err != nil || mt != "application/json" {
		return newError(CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return newError(CodeUnsupportedMediaType, "Content-Type charset must be utf-8")
	}
	return nil
}

// body is the request body as sent, base64-decoded if API Gateway encoded
// it, and no longer than limit.
func body(req *events.APIGatewayV2HTTPRequest, limit int) ([]byte, *Error) {
	tooLarge := newError(CodePayloadTooLarge, fmt.Sprintf("Request body exceeds %d bytes", limit))
	var b []byte
	if req.IsBase64Encoded {
		if len(req.Body) > base64.StdEncoding.EncodedLen(limit) {
			return nil, tooLarge
		}
		var err error
		if b, err = base64.StdEncoding.Strict().DecodeString(req.Body); err != nil {
			return nil, validation("Request body is marked base64-encoded but is not valid base64", map[string]string{"field": "body"})
		}
	} else {
		b = []byte(req.Body)
	}
	switch {
	case len(b) > limit:
		return nil, tooLarge
	case len(strings.TrimSpace(string(b))) == 0:
		return nil, validation("Request body is required", map[string]string{"field": "body"})
	}
	return b, nil
}

// canonicalBody is the RFC 8785 form of b, or the 400 that says why b has none.
func canonicalBody(b []byte) ([]byte, *Error) {
	c, err := idempotency.Canonicalize(b)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), idempotency.ErrNotIJSON.Error()+": ")
		msg = strings.TrimPrefix(msg, "jsontext: ")
		return nil, validation("Request body is not valid JSON (RFC 8259 / I-JSON): "+msg, map[string]string{"field": "body"})
	}
	return c, nil
}
