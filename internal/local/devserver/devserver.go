// Package devserver serves a Lambda handler over plain HTTP for local
// development: it turns each request into the API Gateway HTTP API (payload
// 2.0) event the function would get in AWS, and stands in for the JWT
// authorizer by decoding a bearer token's claims WITHOUT checking its
// signature. It is for loopback use only and never ships in the Lambda binary.
package devserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"
)

// HandlerFunc is a Lambda handler of HTTP API events.
type HandlerFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// maxRequestBytes mirrors API Gateway's 10 MB payload limit.
const maxRequestBytes = 10 << 20

// invocationTimeout is the deadline given to each invocation, as Lambda would.
const invocationTimeout = 10 * time.Second

// Handler adapts fn to net/http.
func Handler(fn HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, err := Event(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		lc := &lambdacontext.LambdaContext{AwsRequestID: uuid.NewString()}
		ctx, cancel := context.WithTimeout(lambdacontext.NewContext(r.Context(), lc), invocationTimeout)
		defer cancel()
		resp, err := fn(ctx, ev)
		if err != nil {
			http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
			return
		}
		write(w, resp)
	})
}

// Event builds the API Gateway event for r, as API Gateway would: header
// names lowercased, repeated headers and query parameters joined with
// commas, a body that is not UTF-8 text base64-encoded.
func Event(r *http.Request) (events.APIGatewayV2HTTPRequest, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil {
		return events.APIGatewayV2HTTPRequest{}, err
	}
	if len(b) > maxRequestBytes {
		return events.APIGatewayV2HTTPRequest{}, fmt.Errorf("request body over %d bytes", maxRequestBytes)
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
	if claims := bearerClaims(r.Header.Get("Authorization")); claims != nil {
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

// bearerClaims decodes the claims of "Bearer <JWT>" the way API Gateway
// hands them to the function: every value a string. The signature is NOT
// checked: this is a local stand-in for the authorizer.
func bearerClaims(auth string) map[string]string {
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return nil
	}
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return nil
	}
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64:
			out[k] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
	}
	return out
}

// UnsignedToken is a JWT carrying claims and no real signature: what
// bearerClaims reads, for make run's clients and tests. API Gateway would
// refuse it.
func UnsignedToken(claims map[string]any) string {
	b, err := json.Marshal(claims)
	if err != nil {
		panic(err) // claims are plain values
	}
	return "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(b) + ".unsigned"
}

func write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body) //nolint:errcheck // the client went away
}

// BearerSubject is the sub claim of a bearer token, "Bearer <JWT>" or the
// JWT alone (as AppSync's authorization header carries it), read as
// bearerClaims reads it: NOT checked.
func BearerSubject(auth string) (string, bool) {
	if !strings.HasPrefix(auth, "Bearer ") {
		auth = "Bearer " + auth
	}
	sub := bearerClaims(auth)["sub"]
	return sub, sub != ""
}
