package mutation

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/errcode"
)

// HTTPAPIHandler is a Lambda handler of API Gateway HTTP API requests
// (payload format 2.0), which Lambda function URLs also send.
type HTTPAPIHandler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// RESTHandler is a Lambda handler of API Gateway REST API proxy requests
// (payload format 1.0).
type RESTHandler = func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// HTTPAPI is a handler that runs requests whose method needs a key
// through mut, exactly once, and hands every other request to next (nil:
// 405).
func (m *Runner[W]) HTTPAPI(mut Mutation[W], next HTTPAPIHandler) HTTPAPIHandler {
	return func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		r := FromHTTPAPI(&e)
		if !m.NeedsKey(r.Method) {
			if next != nil {
				return next(ctx, e)
			}
			return m.notAllowed(r).HTTPAPI(), nil
		}
		resp, _ := m.Run(ctx, r, mut)
		return resp.HTTPAPI(), nil
	}
}

// REST is HTTPAPI for a REST API's proxy integration.
func (m *Runner[W]) REST(mut Mutation[W], next RESTHandler) RESTHandler {
	return func(ctx context.Context, e events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		r := FromREST(&e)
		if !m.NeedsKey(r.Method) {
			if next != nil {
				return next(ctx, e)
			}
			return m.notAllowed(r).REST(), nil
		}
		resp, _ := m.Run(ctx, r, mut)
		return resp.REST(), nil
	}
}

// HTTP is HTTPAPI for net/http. The body is read up to the runner's limit
// (and one byte more, to know it was passed) before anything else.
func (m *Runner[W]) HTTP(mut Mutation[W], next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		if !m.NeedsKey(hr.Method) {
			if next != nil {
				next.ServeHTTP(w, hr)
				return
			}
			m.notAllowed(&Request{Method: hr.Method}).Write(w)
			return
		}
		r, err := FromHTTP(hr, m.o.MaxBodyBytes)
		if err != nil {
			m.AnswerMutation(err).Write(w)
			return
		}
		resp, _ := m.Run(hr.Context(), r, mut)
		resp.Write(w)
	})
}

// notAllowed is the 405 for a method an adapter has no handler for.
func (m *Runner[W]) notAllowed(r *Request) Response {
	resp := m.AnswerRead(errcode.New(errcode.MethodNotAllowed, "Method not allowed on this route; allowed: "+strings.Join(m.o.Methods, ", ")))
	resp.Header.Set("Allow", strings.Join(m.o.Methods, ", "))
	return resp
}

// FromHTTPAPI is an HTTP API (payload 2.0) request as the envelope takes
// it. It reads these fields of the event, and no others:
//   - requestContext.http.method: the method;
//   - routeKey: the route, less the method ("POST /notes" is "/notes"),
//     or rawPath where there is none ($default, a function URL);
//   - rawPath and pathParameters;
//   - queryStringParameters;
//   - headers, whose names match in any case (API Gateway sends them in
//     lowercase: "idempotency-key", "content-type");
//   - body and isBase64Encoded: the envelope decodes a base64 body before
//     the body's checks and the mutation see it;
//   - requestContext.authorizer.jwt.claims: the claims a JWT authorizer
//     verified (the caller is their "sub" by default). A Lambda
//     authorizer's context is not read: it is in Event, for an
//     Options.User of one's own.
func FromHTTPAPI(e *events.APIGatewayV2HTTPRequest) *Request {
	route := e.RawPath
	if _, path, ok := strings.Cut(e.RouteKey, " "); ok {
		route = path
	}
	h := make(http.Header, len(e.Headers))
	for k, v := range e.Headers {
		h.Add(k, v)
	}
	var claims map[string]string
	if a := e.RequestContext.Authorizer; a != nil && a.JWT != nil {
		claims = a.JWT.Claims
	}
	return &Request{
		Method: e.RequestContext.HTTP.Method, Route: route, Path: e.RawPath, PathParams: e.PathParameters,
		Query: query(e.QueryStringParameters, nil), Header: h, Body: []byte(e.Body), BodyBase64: e.IsBase64Encoded,
		Claims: claims, Event: e,
	}
}

// FromREST is a REST API (payload 1.0) request as the envelope takes it.
// It reads these fields of the event, and no others:
//   - httpMethod, and resource: the route ("/notes/{id}");
//   - path and pathParameters;
//   - multiValueQueryStringParameters, else queryStringParameters;
//   - multiValueHeaders, else headers, whose names match in any case;
//   - body and isBase64Encoded (decoded before the checks and the
//     mutation, as for FromHTTPAPI);
//   - requestContext.authorizer.claims: the claims a Cognito user pool
//     authorizer verified, as strings. A Lambda authorizer's context is
//     in Event, for an Options.User of one's own.
func FromREST(e *events.APIGatewayProxyRequest) *Request {
	h := make(http.Header, len(e.Headers))
	for k, vs := range e.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if len(e.MultiValueHeaders) == 0 {
		for k, v := range e.Headers {
			h.Add(k, v)
		}
	}
	var claims map[string]string
	if c, ok := e.RequestContext.Authorizer["claims"].(map[string]any); ok {
		claims = make(map[string]string, len(c))
		for k, v := range c {
			claims[k] = fmt.Sprint(v)
		}
	}
	return &Request{
		Method: e.HTTPMethod, Route: e.Resource, Path: e.Path, PathParams: e.PathParameters,
		Query: query(e.QueryStringParameters, e.MultiValueQueryStringParameters), Header: h,
		Body: []byte(e.Body), BodyBase64: e.IsBase64Encoded, Claims: claims, Event: e,
	}
}

// FromHTTP is a net/http request as the envelope takes it, its body read
// up to limit bytes and one more. Its route is the pattern http.ServeMux
// matched, less the method and host ("PATCH /notes/{id}" is
// "/notes/{id}"), or the path; its path parameters are the pattern's
// wildcards. Its claims are what middleware put in its context with
// ContextWithClaims; its headers, query and body are the request's.
func FromHTTP(hr *http.Request, limit int) (*Request, error) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, int64(limit)+1))
	if err != nil {
		return nil, errcode.New(errcode.ValidationFailed, "Request body could not be read")
	}
	route, params := hr.URL.Path, map[string]string{}
	if hr.Pattern != "" {
		route = hr.Pattern
		if _, p, ok := strings.Cut(route, " "); ok {
			route = p
		}
		route = route[strings.Index(route, "/"):] // less a host, if the pattern has one
		for _, seg := range strings.Split(route, "/") {
			if name, ok := strings.CutPrefix(seg, "{"); ok {
				name = strings.TrimSuffix(strings.TrimSuffix(name, "}"), "...")
				if name != "$" {
					params[name] = hr.PathValue(name)
				}
			}
		}
	}
	return &Request{
		Method: hr.Method, Route: route, Path: hr.URL.Path, PathParams: params, Query: hr.URL.Query(),
		Header: hr.Header, Body: body, Claims: claimsFrom(hr.Context()), Event: hr,
	}, nil
}

func query(single map[string]string, multi map[string][]string) url.Values {
	q := url.Values{}
	for k, vs := range multi {
		q[k] = vs
	}
	for k, v := range single {
		if _, ok := q[k]; !ok {
			q.Set(k, v)
		}
	}
	return q
}

// HTTPAPI is r as an HTTP API (payload 2.0) response.
func (r Response) HTTPAPI() events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: r.StatusCode, Headers: singleHeaders(r.Header), Body: string(r.Body)}
}

// REST is r as a REST API (payload 1.0) response.
func (r Response) REST() events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: r.StatusCode, Headers: singleHeaders(r.Header), Body: string(r.Body)}
}

// Write sends r on w.
func (r Response) Write(w http.ResponseWriter) {
	for k, vs := range r.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(r.StatusCode)
	_, _ = w.Write(r.Body)
}

// singleHeaders is h with each header's values joined, as API Gateway's
// headers map carries them.
func singleHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		out[k] = strings.Join(vs, ", ")
	}
	return out
}
