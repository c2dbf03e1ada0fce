package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/metrics"
	"github.com/sync-events/sync-events/internal/ratelimit"
)

// The spaces' routes.
const (
	SpacesPath          = "/api/v1/spaces"
	SpacePath           = SpacesPath + "/{spaceId}"
	SpaceMembersPath    = SpacePath + "/members"
	SpaceMemberPath     = SpaceMembersPath + "/{memberId}"
	SpaceEventsPath     = SpacePath + "/events"
	SpaceBatchPath      = SpaceEventsPath + "/batch"
	maxSpaceNameLen     = 100
	maxMemberLen        = 254                // "member#" and 254 characters of up to 4 bytes: at most 1,023 bytes, a sort key's 1,024
	MaxSpaceBatchEvents = MaxBatchEvents - 1 // the caller's role check is one more action
)

// spaceStatuses are the statuses of the event log's own codes: the
// spaces', deletions' and retention's.
var spaceStatuses = map[errcode.Code]int{
	eventstore.ErrCursorExpired.Code:  http.StatusGone,
	eventstore.ErrEventNotFound.Code:  http.StatusNotFound,
	eventstore.ErrAlreadyDeleted.Code: http.StatusConflict,
	eventstore.ErrNotDeletable.Code:   http.StatusConflict,
	eventstore.ErrSpaceExists.Code:    http.StatusConflict,
	eventstore.ErrSpacesLimit.Code:    http.StatusConflict,
	eventstore.ErrNotMember.Code:      http.StatusForbidden,
	eventstore.ErrRoleForbids.Code:    http.StatusForbidden,
	eventstore.ErrAlreadyMember.Code:  http.StatusConflict,
	eventstore.ErrMembersLimit.Code:   http.StatusConflict,
	eventstore.ErrNoSuchMember.Code:   http.StatusNotFound,
	eventstore.ErrLastOwner.Code:      http.StatusConflict,
}

var errBadSpaceID = errcode.Invalid("spaceId is not a space id: a UUID", errcode.Field{Field: "spaceId"})

// stream is where r's events go: the space its path names, or the caller's
// own stream.
func stream(r *mutation.Request) (string, error) {
	id, ok := r.PathParams["spaceId"]
	if !ok {
		return r.User, nil
	}
	if err := spaceCaller(r.User); err != nil {
		return "", err
	}
	return spaceStream(id)
}

// spaceMutationCaller is whom a mutation of a space counts a refusal
// against: its caller, when the route names a space and the caller is
// known.
func spaceMutationCaller(r *http.Request) (string, bool) {
	if r.PathValue("spaceId") == "" {
		return "", false
	}
	sub, err := user(r.Context())
	return sub, err == nil
}

// Refused mutations of spaces, per caller and execution environment: a
// refusal (not a member, a role that forbids) costs a failed transaction
// and takes no token of any stream's bucket, so a caller refused this
// often is answered 429 before DynamoDB is called. A member's own writes
// are never refused so.
var refusalsBucket = ratelimit.Bucket{Rate: 1, Burst: 10}

var errRefusalsLimited = errcode.New(errcode.RateLimited, "Too many refused requests to spaces from this user: retry after the time in Retry-After")

// spaceCaller refuses a caller whose sub cannot name a member: a member's
// sort key ("member#" and the sub) holds at most 1,024 bytes.
func spaceCaller(sub string) error {
	if len(memberKeyPrefix)+len(sub) > dynamodbstore.MaxSortKeyBytes {
		return errCallerIDUnsupported
	}
	return nil
}

const memberKeyPrefix = "member#"

func spaceStream(id string) (string, error) {
	parsed, ok := idempotency.ParseUUID(id)
	if !ok || parsed != id {
		return "", errBadSpaceID
	}
	return eventstore.SpaceStream(id), nil
}

// newSpace is POST /spaces' body.
type newSpace struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// createSpace makes a space with the caller its owner.
func createSpace(_ *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error) {
	var b newSpace
	if err := json.Unmarshal(r.Body, &b, json.RejectUnknownMembers(true)); err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, errcode.Invalid(`Invalid space: the body must be {"id": a UUID, "name": 1 to 100 characters}`, errcode.Field{Field: "body"})
	}
	if err := spaceCaller(r.User); err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	st, err := spaceStream(b.ID)
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, errcode.Invalid("Invalid space: id must be a UUID in lowercase", errcode.Field{Field: "id"})
	}
	if n := utf8.RuneCountInString(b.Name); n < 1 || n > maxSpaceNameLen {
		return mutation.Plan[eventstore.Change]{}, 0, errcode.Invalid(fmt.Sprintf("Invalid space: name must be 1 to %d characters", maxSpaceNameLen), errcode.Field{Field: "name"})
	}
	answer := eventstore.SpaceListing{ID: b.ID, Name: b.Name, Role: eventstore.RoleOwner}
	return membershipPlan(eventstore.CreateSpace(st, b.Name), http.StatusCreated, answer), 1, nil
}

// newMember is POST /spaces/{id}/members' body.
type newMember struct {
	Member string `json:"member"`
	Role   string `json:"role"`
}

// memberAnswer is the answer to adding a member.
type memberAnswer struct {
	Space  string `json:"space"`
	Member string `json:"member"`
	Role   string `json:"role"`
}

func addMember(_ *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error) {
	st, err := stream(r)
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	var b newMember
	if err := json.Unmarshal(r.Body, &b, json.RejectUnknownMembers(true)); err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, errcode.Invalid(`Invalid member: the body must be {"member": a user's sub, "role": "owner", "writer" or "reader"}`, errcode.Field{Field: "body"})
	}
	if err := checkMember(b.Member); err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	if !eventstore.ValidRole(b.Role) {
		return mutation.Plan[eventstore.Change]{}, 0, errcode.Invalid(`Invalid member: role must be "owner", "writer" or "reader"`, errcode.Field{Field: "role"})
	}
	answer := memberAnswer{Space: r.PathParams["spaceId"], Member: b.Member, Role: b.Role}
	return membershipPlan(eventstore.AddMember(st, b.Member, b.Role), http.StatusCreated, answer), 1, nil
}

// removedAnswer is the answer to removing a member, or leaving.
type removedAnswer struct {
	Space   string `json:"space"`
	Member  string `json:"member"`
	Removed bool   `json:"removed"`
}

func removeMember(_ *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error) {
	st, err := stream(r)
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	member, err := url.PathUnescape(r.PathParams["memberId"])
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, errcode.Invalid("memberId is not a percent-encoded user id", errcode.Field{Field: "memberId"})
	}
	if err := checkMember(member); err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	answer := removedAnswer{Space: r.PathParams["spaceId"], Member: member, Removed: true}
	return membershipPlan(eventstore.RemoveMember(st, member), http.StatusOK, answer), 1, nil
}

func checkMember(m string) error {
	if n := utf8.RuneCountInString(m); n < 1 || n > maxMemberLen || !utf8.ValidString(m) || eventstore.IsSpaceStream(m) || spaceCaller(m) != nil {
		return errcode.Invalid(fmt.Sprintf("member must be a user id: 1 to %d characters", maxMemberLen), errcode.Field{Field: "member"})
	}
	return nil
}

// membershipPlan commits one membership change, answered with status and
// answer.
func membershipPlan(change eventstore.Change, status int, answer any) mutation.Plan[eventstore.Change] {
	return mutation.Plan[eventstore.Change]{
		Execute: func(context.Context, time.Time) (idempotency.Execution[eventstore.Change], error) {
			body, err := json.Marshal(answer)
			if err != nil {
				return idempotency.Execution[eventstore.Change]{}, err
			}
			return idempotency.Execution[eventstore.Change]{
				Response: idempotency.Response{StatusCode: status, Body: body},
				Writes:   []eventstore.Change{change},
			}, nil
		},
		// The event's id is new: its condition cannot fail but by a UUID
		// clash, which retrying under a new key answers.
		Refused: func(context.Context, []idempotency.Refusal) error { return errEventExists },
	}
}

// listSpaces is GET /spaces: the caller's spaces, with their role.
func (h *Handler) listSpaces(r *http.Request) (mutation.Response, outcome) {
	ctx, method := r.Context(), r.Method
	user, err := user(ctx)
	if err != nil {
		return h.fail(err, method)
	}
	if wait, ok := h.reads.Take(user, time.Now()); !ok {
		return h.fail(limited(errReadsLimited, wait), method)
	}
	listed, err := h.events.Spaces(ctx, user)
	if err != nil {
		return h.fail(err, method)
	}
	if listed == nil {
		listed = []eventstore.SpaceListing{}
	}
	b, err := json.Marshal(struct {
		Spaces []eventstore.SpaceListing `json:"spaces"`
	}{listed})
	if err != nil {
		return h.fail(err, method)
	}
	return jsonOK(b), outcome{result: metrics.OutcomeRead}
}

// listSpaceEvents is GET /spaces/{id}/events: a member's page of the
// space's events, as GET /sync/events pages the caller's own.
func (h *Handler) listSpaceEvents(r *http.Request) (mutation.Response, outcome) {
	method := r.Method
	caller, err := user(r.Context())
	if err != nil {
		return h.fail(err, method)
	}
	st, err := spaceStream(r.PathValue("spaceId"))
	if err == nil {
		err = spaceCaller(caller)
	}
	if err != nil {
		return h.fail(err, method)
	}
	return h.page(r, caller, st, func(ctx context.Context) error {
		_, member, err := h.events.Role(ctx, st, caller)
		if err == nil && !member {
			err = eventstore.ErrNotMember
		}
		return err
	})
}
