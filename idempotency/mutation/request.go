package mutation

import (
	"context"
	"net/http"
	"net/url"
)

// Request is a mutation as the envelope sees it, whichever adapter made
// it. An adapter fills everything but User and Key, which the envelope
// sets once it has accepted them.
type Request struct {
	Method string
	// Route names the operation: the route pattern (API Gateway's route
	// or resource, "/notes/{id}"; an http.ServeMux pattern's path), or
	// the path where there is none (a function URL). It is recorded with
	// the key with its PathParams filled in ("/notes/n-1"): a key sent
	// again on another route, or for another resource, is a reused key.
	Route string
	// Path is the path requested; PathParams the route's parameters.
	Path       string
	PathParams map[string]string
	Query      url.Values
	Header     http.Header
	// Body is the body as sent; BodyBase64 says it is base64 text to
	// decode first (API Gateway's isBase64Encoded). A Mutation gets it
	// decoded, checked as JSON and within the size limit, with
	// BodyBase64 false.
	Body       []byte
	BodyBase64 bool
	// MaxBodyBytes, if set, bounds this request's body in place of
	// Options.MaxBodyBytes: a route's own limit (a batch takes more), so
	// that one Runner serves every route.
	MaxBodyBytes int
	// Claims are the verified token's claims: from API Gateway's JWT
	// authorizer, a REST API's Cognito authorizer, or for net/http what
	// the authenticating middleware put in the context (ContextWithClaims).
	Claims map[string]string
	// Event is what the adapter was handed: an
	// *events.APIGatewayV2HTTPRequest, an *events.APIGatewayProxyRequest
	// or an *http.Request, for Options that need more of it.
	Event any

	// User is the caller and Key the idempotency key, as the envelope
	// accepted them, for the mutation to read.
	User string
	Key  string
}

// Response is an answer: a status, headers and a body.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

func jsonResponse(status int, body []byte) Response {
	return Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

type claimsKey struct{}

// ContextWithClaims is ctx carrying the claims of a token that middleware
// in front of a net/http handler verified; the HTTP adapter hands them to
// the envelope as Request.Claims.
func ContextWithClaims(ctx context.Context, claims map[string]string) context.Context {
	return context.WithValue(ctx, claimsKey{}, claims)
}

func claimsFrom(ctx context.Context) map[string]string {
	c, _ := ctx.Value(claimsKey{}).(map[string]string)
	return c
}
