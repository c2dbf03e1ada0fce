package edge

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Serve answers an API Gateway HTTP API (payload 2.0) event with h: the
// event converted once into an *http.Request (Request), h's answer
// collected into the event's response.
func Serve(ctx context.Context, h http.Handler, ev *events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	var w responseWriter
	h.ServeHTTP(&w, Request(ctx, ev))
	return w.response()
}

// Request is ev as net/http carries it, with ctx:
//   - the method as sent (API Gateway passes any token);
//   - the URL's RawPath is RequestPath, percent-encoded as API Gateway
//     hands it, and its Path that unescaped (RawPath again where it does
//     not unescape); its query is queryStringParameters (API Gateway has
//     joined repeated parameters with commas);
//   - the headers (cookies in Cookie), the host (the domain name), the
//     source IP as RemoteAddr;
//   - the body as sent: base64 text where isBase64Encoded (Base64Body);
//   - the context: the JWT authorizer's sub as the caller (WithCaller),
//     the event's request id (WithRequestID).
func Request(ctx context.Context, ev *events.APIGatewayV2HTTPRequest) *http.Request {
	if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
		if sub, ok := a.JWT.Claims["sub"]; ok {
			ctx = WithCaller(ctx, sub)
		}
	}
	ctx = WithRequestID(ctx, ev.RequestContext.RequestID)
	if ev.IsBase64Encoded {
		ctx = withBase64Body(ctx)
	}
	raw := RequestPath(ev)
	path, err := url.PathUnescape(raw)
	if err != nil {
		path = raw
	}
	body := []byte(ev.Body)
	r := &http.Request{
		Method: ev.RequestContext.HTTP.Method, URL: &url.URL{Path: path, RawPath: raw, RawQuery: query(ev.QueryStringParameters)},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: header(ev), Host: ev.RequestContext.DomainName,
		RemoteAddr: ev.RequestContext.HTTP.SourceIP, RequestURI: raw, ContentLength: int64(len(body)),
		Body: io.NopCloser(bytes.NewReader(body)),
	}
	return r.WithContext(ctx)
}

func header(ev *events.APIGatewayV2HTTPRequest) http.Header {
	h := make(http.Header, len(ev.Headers)+1)
	for k, v := range ev.Headers {
		h.Add(k, v)
	}
	if len(ev.Cookies) > 0 {
		h.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	return h
}

func query(params map[string]string) string {
	q := make(url.Values, len(params))
	for k, v := range params {
		q.Set(k, v)
	}
	return q.Encode()
}

// RequestPath is the path the request was for, without what API Gateway
// put in front of it. A static route that API Gateway matched names the
// path itself, whatever base path or stage came before it. Otherwise (the
// catch-all) it is rawPath, less a leading segment equal to the stage where
// API Gateway adds one: a named stage on the generated execute-api domain.
// A custom domain adds no stage, so a first segment that happens to equal
// the stage's name stays.
func RequestPath(req *events.APIGatewayV2HTTPRequest) string {
	if _, route, ok := strings.Cut(req.RouteKey, " "); ok && !strings.Contains(route, "{") {
		return route
	}
	p := req.RawPath
	if p == "" {
		p = req.RequestContext.HTTP.Path
	}
	stage := req.RequestContext.Stage
	if stage == "" || stage == "$default" || !strings.Contains(req.RequestContext.DomainName, ".execute-api.") {
		return p
	}
	if rest, ok := strings.CutPrefix(p, "/"+stage); ok && (rest == "" || rest[0] == '/') {
		return cmp.Or(rest, "/") // the stage itself is its root
	}
	return p
}

// responseWriter collects an answer for API Gateway: nothing is sniffed
// or added, so the response carries exactly the headers the handler set.
type responseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *responseWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// response is the answer as API Gateway takes it: each header's values
// joined, as its headers map carries them.
func (w *responseWriter) response() events.APIGatewayV2HTTPResponse {
	headers := make(map[string]string, len(w.header))
	for k, vs := range w.header {
		headers[k] = strings.Join(vs, ", ")
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: cmp.Or(w.status, http.StatusOK), Headers: headers, Body: w.body.String()}
}
