// Package openapi owns the API's contract: openapi.yaml, the OpenAPI 3.1
// document clients are generated from, and the check that holds an
// exchange (an API Gateway event and the function's answer) to it. Tests
// use the check; the Lambda never links this package (a test of its
// dependency list holds that).
package openapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	_ "embed"

	"github.com/aws/aws-lambda-go/events"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// ErrNotHTTP reports an event that no HTTP request could have produced
// (a method that is not a token, say): API Gateway never delivers one, so
// the document has nothing to say about it. Fuzzed events can be such.
var ErrNotHTTP = errors.New("the event is not an HTTP request")

// Document is openapi.yaml as committed.
//
//go:embed openapi.yaml
var Document []byte

// Contract is the loaded document and its validator.
type Contract struct {
	mu        sync.Mutex // the validator caches as it goes
	validator validator.Validator
	model     *v3.Document
}

var (
	loaded   *Contract
	loadErr  error
	loadOnce sync.Once
)

// Load parses Document once and checks it against the OpenAPI 3.1 schema.
func Load() (*Contract, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

func load() (*Contract, error) {
	doc, err := libopenapi.NewDocument(Document)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi.yaml: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %s", describe(verrs))
	}
	return &Contract{validator: v, model: &model.Model}, nil
}

// ErrorCodes is the ErrorCode enum: the closed list of codes.
func (c *Contract) ErrorCodes() []string {
	schema := c.model.Components.Schemas.GetOrZero("ErrorCode").Schema()
	var codes []string
	for _, n := range schema.Enum {
		codes = append(codes, n.Value)
	}
	return codes
}

// QueryPattern is the pattern of a query parameter of an operation, or "".
func (c *Contract) QueryPattern(path, method, name string) string {
	op, ok := c.model.Paths.PathItems.GetOrZero(path).GetOperations().Get(method)
	if !ok {
		return ""
	}
	for _, p := range op.Parameters {
		if p.In == "query" && p.Name == name && p.Schema != nil {
			return p.Schema.Schema().Pattern
		}
	}
	return ""
}

// Operations lists "METHOD /path" for every operation in the document.
func (c *Contract) Operations() []string {
	var ops []string
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			ops = append(ops, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// Check holds one exchange to the document. The answer must be one the
// document lists for the operation (status, headers, body). The request is
// held to the document only when the function accepted it (2xx): a request
// the document calls invalid must not succeed, while a refused one may be
// anything. A path the document does not have must be answered 404.
//
// path is the path the function took the request for (the API's
// RequestPath: rawPath, less a stage API Gateway put before it): the
// contract owns no reading of API Gateway's events.
func (c *Contract) Check(path string, req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) error {
	hreq, err := httpRequest(path, req)
	if err != nil {
		return err
	}
	hresp := httpResponse(hreq, resp)
	item := c.pathItem(hreq.URL.Path)
	if item == nil {
		return wantRefusal(hreq, resp, http.StatusNotFound, "NOT_FOUND")
	}
	// Methods are case-sensitive (RFC 9110, 9.1): "post" is not POST.
	if _, ok := item.GetOperations().Get(strings.ToLower(hreq.Method)); !ok || hreq.Method != strings.ToUpper(hreq.Method) {
		if want := allow(item); resp.Headers["Allow"] != want {
			return fmt.Errorf("%s %s: Allow %q, want %q", hreq.Method, hreq.URL.Path, resp.Headers["Allow"], want)
		}
		return wantRefusal(hreq, resp, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp.StatusCode < 300 {
		if ok, errs := c.validator.ValidateHttpRequestSync(hreq); !ok {
			return fmt.Errorf("%s %s was answered %d, but the document refuses the request: %s", hreq.Method, hreq.URL.Path, resp.StatusCode, describe(errs))
		}
	}
	if ok, errs := c.validator.ValidateHttpResponse(hreq, hresp); !ok {
		return fmt.Errorf("%s %s: the answer %d %s breaks the document: %s", hreq.Method, hreq.URL.Path, resp.StatusCode, resp.Body, describe(errs))
	}
	return nil
}

// pathItem is the document's path that path is, literally or by its
// template ({name} takes one non-empty segment), as the function's route
// table matches paths; nil if none.
func (c *Contract) pathItem(path string) *v3.PathItem {
	if item := c.model.Paths.PathItems.GetOrZero(path); item != nil {
		return item
	}
	segs := strings.Split(path, "/")
	var best *v3.PathItem
	bestLiterals := -1
	for tmpl, item := range c.model.Paths.PathItems.FromOldest() {
		t := strings.Split(tmpl, "/")
		if len(t) != len(segs) {
			continue
		}
		match := true
		for i := range t {
			if templated := strings.HasPrefix(t[i], "{") && strings.HasSuffix(t[i], "}"); !(templated && segs[i] != "" || t[i] == segs[i]) {
				match = false
				break
			}
		}
		// The template of the most literal segments wins, as the route
		// table's does.
		if literals := strings.Count(tmpl, "/") - strings.Count(tmpl, "{"); match && literals > bestLiterals {
			best, bestLiterals = item, literals
		}
	}
	return best
}

// allow is the Allow header of a 405 on item's path: its methods, in the
// order the route table lists a path's methods.
func allow(item *v3.PathItem) string {
	var out []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if _, ok := item.GetOperations().Get(strings.ToLower(m)); ok {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// wantRefusal checks that a request outside the document was refused with
// status and code.
func wantRefusal(req *http.Request, resp events.APIGatewayV2HTTPResponse, status int, code string) error {
	var body struct{ Error string }
	if resp.StatusCode != status || json.Unmarshal([]byte(resp.Body), &body) != nil || body.Error != code {
		return fmt.Errorf("%s %s is not in the document, and was answered %d %s instead of %d %s", req.Method, req.URL.Path, resp.StatusCode, resp.Body, status, code)
	}
	return nil
}

// httpRequest is the HTTP request an API Gateway event stands for. A body
// marked base64 that does not decode is kept as it came: the function
// refuses it, and only its answer is checked.
func httpRequest(path string, req events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(req.Body); err == nil {
			body = b
		}
	}
	// Every request API Gateway delivers has a method (net/http would read
	// none as GET) and an origin-form target, which starts with "/" (RFC
	// 9112, 3.2.1).
	if req.RequestContext.HTTP.Method == "" || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("%w: method %q, path %q", ErrNotHTTP, req.RequestContext.HTTP.Method, path)
	}
	// The path is taken literally, as the function takes rawPath: "%65" is
	// not "e", and a "?" or "#" in it starts no query or fragment.
	u := url.URL{Scheme: "https", Host: req.RequestContext.DomainName, Path: path, RawQuery: rawQuery(req)}
	hreq, err := http.NewRequest(req.RequestContext.HTTP.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotHTTP, err)
	}
	for k, v := range req.Headers {
		// HTTP drops the blanks around a field value (RFC 9110, 5.5).
		hreq.Header.Set(k, strings.Trim(v, " \t"))
	}
	return hreq, nil
}

// rawQuery is the event's query string: rawQueryString, else the parsed
// parameters joined again.
func rawQuery(req events.APIGatewayV2HTTPRequest) string {
	if req.RawQueryString != "" || len(req.QueryStringParameters) == 0 {
		return req.RawQueryString
	}
	q := make([]string, 0, len(req.QueryStringParameters))
	for k, v := range req.QueryStringParameters {
		q = append(q, k+"="+v)
	}
	return strings.Join(q, "&")
}

func httpResponse(req *http.Request, resp events.APIGatewayV2HTTPResponse) *http.Response {
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: resp.StatusCode, Header: h, Request: req, Body: io.NopCloser(strings.NewReader(resp.Body))}
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" {
			b.WriteString(": " + e.Reason)
		}
		for _, s := range e.SchemaValidationErrors {
			b.WriteString(" [" + s.FieldPath + ": " + s.Reason + "]")
		}
	}
	return b.String()
}
