package apitest

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/local/devserver"
)

// maxEventBodyBytes mirrors API Gateway's 10 MB payload limit.
const maxEventBodyBytes = 10 << 20

// Event builds the API Gateway HTTP API (payload 2.0) event for r, as
// API Gateway would: header names lowercased, repeated headers and query
// parameters joined with commas, a body that is not UTF-8 text
// base64-encoded, and a bearer token's claims as the JWT authorizer's
// (decoded, NOT verified: devserver.BearerClaims).
func Event(r *http.Request) (events.APIGatewayV2HTTPRequest, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxEventBodyBytes+1))
	if err != nil {
		return events.APIGatewayV2HTTPRequest{}, err
	}
	if len(b) > maxEventBodyBytes {
		return events.APIGatewayV2HTTPRequest{}, fmt.Errorf("request body over %d bytes", maxEventBodyBytes)
	}
	now := time.Now()
	ev := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "$default",
		RawPath:  r.URL.EscapedPath(), // as API Gateway hands it: percent-encoded
		Headers:  map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "000000000000", APIID: "local", Stage: "$default", RouteKey: "$default",
			RequestID: uuid.NewString(), DomainName: r.Host, Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: r.RemoteAddr, UserAgent: r.UserAgent(),
			},
		},
	}
	ev.RawQueryString = r.URL.RawQuery
	if q := r.URL.Query(); len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			ev.Cookies = vs
			continue
		}
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if claims := devserver.BearerClaims(r.Header.Get("Authorization")); claims != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}
	}
	if utf8.Valid(b) {
		ev.Body = string(b)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return ev, nil
}
