package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

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
	// parameter, which the request then carries in its PathParams. It is
	// also the route recorded with a mutation's key.
	pattern string
	read    func(h *Handler, ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, outcome)
	mutate  eventMutation
	// maxBody bounds a mutation's body; 0 is MAX_BODY_BYTES.
	maxBody int
}

// eventMutation reads a mutation's accepted body (valid I-JSON, within the
// size limit) into its plan, and says how many events it carries (for the
// metrics), or refuses it with an errcode.Error.
type eventMutation func(h *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error)

// routes is the table: what the API answers with anything but a refusal.
// 404, 405 and Allow come from it, and so do Routes (held to the OpenAPI
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

// Routes lists, as "METHOD pattern", what the handler answers with
// anything but a refusal. The OpenAPI document must describe exactly these.
func Routes() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.method + " " + rt.pattern
	}
	return out
}

// match finds the route for method and path. A path that some route has
// but not with this method gives the methods that route has (for 405's
// Allow); a path no route has gives none (404).
func match(method, path string) (rt *route, params map[string]string, allow []string) {
	// The routes of the most literal segments win, as in API Gateway: a
	// path that a route spells out (…/events/batch) is that route's alone,
	// not also a value of another's parameter (…/events/{eventId}).
	best := -1
	for i := range routes {
		if _, ok := matchPattern(routes[i].pattern, path); ok {
			best = max(best, literalSegments(routes[i].pattern))
		}
	}
	for i := range routes {
		if literalSegments(routes[i].pattern) != best {
			continue
		}
		p, ok := matchPattern(routes[i].pattern, path)
		if !ok {
			continue
		}
		if routes[i].method == method {
			return &routes[i], p, nil
		}
		allow = append(allow, routes[i].method)
	}
	return nil, nil, allow
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

// matchPattern matches path against pattern segment by segment; a {name}
// segment takes any one non-empty segment.
func matchPattern(pattern, path string) (map[string]string, bool) {
	var params map[string]string
	for {
		pseg, prest, pmore := strings.Cut(strings.TrimPrefix(pattern, "/"), "/")
		seg, rest, more := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		if !strings.HasPrefix(pattern, "/") || !strings.HasPrefix(path, "/") || pmore != more {
			return nil, false
		}
		if name, ok := strings.CutPrefix(pseg, "{"); ok && strings.HasSuffix(name, "}") && seg != "" {
			if params == nil {
				params = map[string]string{}
			}
			params[strings.TrimSuffix(name, "}")] = seg
		} else if pseg != seg {
			return nil, false
		}
		if !more {
			return params, true
		}
		pattern, path = "/"+prest, "/"+rest
	}
}
