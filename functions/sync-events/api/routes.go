package api

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// EventsPath is the events resource; BatchPath takes many events at once.
const (
	EventsPath = "/api/v1/sync/events"
	BatchPath  = EventsPath + "/batch"
)

// route is one row of the table: a method and a path pattern, and either
// a read or a mutation. Every mutation goes through the one envelope of
// package mutation: caller, key, content type, size, canonical body, the
// exactly-once flow, the answer.
type route struct {
	method string
	// pattern is the path: literal segments, or {name} for a path
	// parameter, which the request then carries as its path value. It is
	// also the route recorded with a mutation's key.
	pattern string
	read    func(h *Handler, r *http.Request) (mutation.Response, outcome)
	mutate  eventMutation
	// maxBody bounds a mutation's body; 0 is MAX_BODY_BYTES.
	maxBody int
}

// eventMutation reads a mutation's accepted body (valid I-JSON, within the
// size limit) into its plan, and says how many events it carries (for the
// metrics), or refuses it with an errcode.Error.
type eventMutation func(h *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error)

// routes is the table: what the API answers with anything but a refusal.
// The mux is built from it, and so are Routes (held to the OpenAPI
// document) and the template's routes.
var routes = []route{
	{method: http.MethodGet, pattern: EventsPath, read: (*Handler).listEvents},
	{method: http.MethodPost, pattern: EventsPath, mutate: postEvent},
	{method: http.MethodPost, pattern: BatchPath, mutate: postBatch, maxBody: MaxBatchBodyBytes},
	{method: http.MethodDelete, pattern: EventPath, mutate: deleteEvent},
	{method: http.MethodGet, pattern: SpacesPath, read: (*Handler).listSpaces},
	{method: http.MethodPost, pattern: SpacesPath, mutate: createSpace},
	{method: http.MethodPost, pattern: SpaceMembersPath, mutate: addMember},
	{method: http.MethodDelete, pattern: SpaceMemberPath, mutate: removeMember},
	{method: http.MethodGet, pattern: SpaceEventsPath, read: (*Handler).listSpaceEvents},
	{method: http.MethodPost, pattern: SpaceEventsPath, mutate: postEvent},
	{method: http.MethodPost, pattern: SpaceBatchPath, mutate: postBatch, maxBody: MaxBatchBodyBytes},
	{method: http.MethodDelete, pattern: SpaceEventPath, mutate: deleteEvent},
}

// methods are the table's methods, in the order they first appear in it:
// the order a 405's Allow lists them.
var methods = tableMethods()

func tableMethods() []string {
	var out []string
	for _, rt := range routes {
		if !slices.Contains(out, rt.method) {
			out = append(out, rt.method)
		}
	}
	return out
}

// Routes lists, as "METHOD pattern", what the handler answers with
// anything but a refusal. The OpenAPI document must describe exactly these.
func Routes() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.key()
	}
	return out
}

// key is the route as the mux's pattern: "METHOD path".
func (rt *route) key() string { return rt.method + " " + rt.pattern }

// newMux registers every route's pattern. It only matches: the handler
// answers what no route takes itself (see match), and runs the route.
func newMux() (*http.ServeMux, map[string]*route) {
	mux, byPattern := http.NewServeMux(), map[string]*route{}
	for i := range routes {
		rt := &routes[i]
		mux.Handle(rt.key(), http.NotFoundHandler())
		byPattern[rt.key()] = rt
	}
	return mux, byPattern
}

// route finds the request's route and runs it. A path no route has is a
// 404; a method its routes do not take is refused as such (RFC 9110,
// 15.5.6), with Allow, before anything about the request is looked at.
func (h *Handler) route(r *http.Request) (mutation.Response, outcome) {
	path := apiPath(r)
	r = routable(r, path)
	rt, allow := h.match(r)
	switch {
	case rt == nil && allow == nil:
		return h.fail(errNotFound, r.Method)
	case rt == nil:
		resp, out := h.fail(methodNotAllowed(allow), r.Method)
		resp.Header.Set("Allow", strings.Join(allow, ", "))
		return resp, out
	}
	bind(r, rt, path)
	if rt.read != nil {
		return rt.read(h, r)
	}
	return h.mutate(r, rt)
}

// apiPath is the path as the client sent it, percent-encoded: what the
// routes match segment by segment, and what the log shows.
func apiPath(r *http.Request) string { return cmp.Or(r.URL.RawPath, r.URL.EscapedPath()) }

// routable is r with its URL made for the mux to match path as sent:
// each segment compared as it was written, percent-encoding and all (so
// "%65vents" is not "events", and "..%2F" one segment), and no segment
// taken for "." or ".." and cleaned away (which the mux would answer with
// a redirect). A path with an empty segment has no route.
func routable(r *http.Request, path string) *http.Request {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(seg), ".", "%2E")
	}
	lookup := r.WithContext(r.Context()) // a shallow copy
	lookup.URL = &url.URL{Path: path, RawPath: strings.Join(segs, "/"), RawQuery: r.URL.RawQuery}
	return lookup
}

// match finds r's route. The mux matches each method's patterns; of the
// routes of every method that match the path, only those that spell out
// the most literal segments count, as in API Gateway: a path that a route
// spells out (…/events/batch) is that route's alone, not also a value of
// another's parameter (…/events/{eventId}). A path that a counted route
// has, but not with r's method, gives the methods it has (for 405's
// Allow); a path none has gives none (404).
func (h *Handler) match(r *http.Request) (rt *route, allow []string) {
	if !strings.HasPrefix(r.URL.Path, "/") || strings.Contains(r.URL.Path, "//") {
		return nil, nil
	}
	var found []*route
	best := -1
	for _, m := range methods {
		probe := *r
		probe.Method = m
		if _, pattern := h.mux.Handler(&probe); h.byPattern[pattern] != nil {
			found = append(found, h.byPattern[pattern])
			best = max(best, literalSegments(h.byPattern[pattern].pattern))
		}
	}
	for _, f := range found {
		switch {
		case literalSegments(f.pattern) != best:
		case f.method == r.Method:
			return f, nil
		default:
			allow = append(allow, f.method)
		}
	}
	return nil, allow
}

// bind gives r its route's pattern and path values: path's segments where
// the pattern has a {name}, as sent (percent-encoded), as the envelope
// and the reads take them.
func bind(r *http.Request, rt *route, path string) {
	r.Pattern = rt.key()
	segs := strings.Split(path, "/")
	for i, seg := range strings.Split(rt.pattern, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			r.SetPathValue(strings.TrimSuffix(name, "}"), segs[i])
		}
	}
}

// literalSegments counts pattern's segments that are no parameter.
func literalSegments(pattern string) int {
	n := 0
	for _, seg := range strings.Split(pattern, "/") {
		if seg != "" && !strings.HasPrefix(seg, "{") {
			n++
		}
	}
	return n
}

// memberPathSpace is the space a member's route names in path, if path is
// one: its log line shows the route's pattern with the space's id, never
// the member's.
func memberPathSpace(path string) (string, bool) {
	segs, want := strings.Split(path, "/"), strings.Split(SpaceMemberPath, "/")
	if len(segs) != len(want) {
		return "", false
	}
	for i, w := range want {
		if seg := segs[i]; (strings.HasPrefix(w, "{") && seg == "") || (!strings.HasPrefix(w, "{") && seg != w) {
			return "", false
		}
	}
	return segs[slices.Index(want, "{spaceId}")], true
}
