// Spaces: streams of events shared by their members, each with a role. A
// space's items live under the partition SpaceStream(id): its head and
// its events, as a user's; its meta item (name, counts of members and
// owners); and one item per member (role). Each member's own partition
// holds a listing item per space they are in (role, name) and a count of
// their spaces, so that a member lists their spaces with one Query and the
// limits hold in the transactions that change them.
//
// Every commit to a space checks the caller's role in the same
// transaction as its events, its head and its ledger record (checkRole):
// no write can commit after a removal commits, which deletes the member
// item the check reads. Membership changes are commits too: each writes an
// event of a reserved type (syncevent.ReservedTypes) at the space's next
// position, so a space's stream orders them with its events.

package eventstore

import (
	"cmp"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Roles of a space's members.
const (
	RoleOwner  = "owner"
	RoleWriter = "writer"
	RoleReader = "reader"
)

// ValidRole reports whether r is a role.
func ValidRole(r string) bool { return r == RoleOwner || r == RoleWriter || r == RoleReader }

// MembershipPayload is the payload of the events of membership changes:
// syncevent.SpaceCreatedType's (Name), syncevent.MemberAddedType's and
// syncevent.MemberRemovedType's (Member, Role: the role added, or the one
// the removed member had, which the commit reads).
type MembershipPayload struct {
	Name   string `json:"name,omitempty"`
	Member string `json:"member,omitempty"`
	Role   string `json:"role,omitempty"`
}

// Limits of spaces.
const (
	maxSpaceMembers = 100
	maxUserSpaces   = 100
)

// spaceStreamPrefix begins every space's stream id, and no user's: the API
// refuses subs that begin so.
const spaceStreamPrefix = "space#"

// SpaceStream is the stream id of space id: its partition in the events table.
func SpaceStream(id string) string { return spaceStreamPrefix + id }

// IsSpaceStream reports whether stream is a space's.
func IsSpaceStream(stream string) bool { return strings.HasPrefix(stream, spaceStreamPrefix) }

// SpaceID is the id of the space whose stream is stream, and false for a
// user's stream.
func SpaceID(stream string) (string, bool) { return strings.CutPrefix(stream, spaceStreamPrefix) }

// Sort keys of a space's and a member's items besides events and heads.
const (
	metaID         = "meta"
	memberPrefix   = "member#"
	userSpacesID   = "spaces"
	attrRole       = "role"
	attrName       = "name"
	attrMembers    = "members"
	attrOwners     = "owners"
	attrSpaceCount = "n"
	// attrPending is a member item's count of the member's events
	// accepted and not yet sequenced (sequence.go): an accept adds
	// to it, the pass that places them takes it back.
	attrPending = "pending"
	// attrLeaving is until when (Unix ms) a member being removed is
	// accepted nothing (markMemberLeaving).
	attrLeaving = "leaving_ms"
	// attrAcceptWindow and attrAccepts are a member's accepts limit
	// (acceptLimit): the window they last accepted in, and how many
	// requests of theirs it accepted.
	attrAcceptWindow = "accept_window"
	attrAccepts      = "accepts"
)

// The answers to a refused change of a space.
var (
	ErrSpaceExists   = errcode.New("SPACE_ALREADY_EXISTS", "A space with this id exists")
	ErrNotMember     = errcode.New("SPACE_NOT_MEMBER", "You are not a member of this space (or there is no such space)")
	ErrRoleForbids   = errcode.New("SPACE_ROLE_FORBIDS", "Your role in this space does not allow this")
	ErrAlreadyMember = errcode.New("SPACE_ALREADY_MEMBER", "This user is a member of this space already")
	ErrNoSuchMember  = errcode.New("SPACE_NO_SUCH_MEMBER", "This user is not a member of this space")
	ErrLastOwner     = errcode.New("SPACE_LAST_OWNER", "The last owner of a space may not leave it or be removed")
	ErrMembersLimit  = errcode.New("SPACE_MEMBERS_LIMIT", fmt.Sprintf("This space has %d members, the most it may have", maxSpaceMembers))
	ErrSpacesLimit   = errcode.New("USER_SPACES_LIMIT", fmt.Sprintf("This user is in %d spaces, the most one may be in", maxUserSpaces))
)

// CreateSpace is the change that makes the space whose stream is stream
// (SpaceStream) named name, with the caller its owner, and writes its
// first event (syncevent.SpaceCreatedType). Commit refuses it with
// ErrSpaceExists, or ErrSpacesLimit when the caller is in maxUserSpaces
// spaces already.
func CreateSpace(stream, name string) Change {
	return Change{stream: stream, op: createSpace{name: name}}
}

type createSpace struct{ name string }

func (c createSpace) plan(_ context.Context, t Table, stream, caller string, at time.Time) (*guard, []syncevent.Event, error) {
	g := newGuard(t, stream, caller)
	g.newStream = ErrSpaceExists
	g.check(t.putNew(stream, metaID, map[string]types.AttributeValue{
		attrName: S(c.name), attrMembers: N(1), attrOwners: N(1),
	}), ErrSpaceExists)
	g.check(t.put(stream, memberPrefix+caller, map[string]types.AttributeValue{attrRole: S(RoleOwner)}), nil)
	joined(t, g, stream, caller, RoleOwner, c.name)
	ev, err := serviceEvent(stream, syncevent.SpaceCreatedType, at, MembershipPayload{Name: c.name})
	return g, ev, err
}

// AddMember is the change that makes member a member of the space of
// stream in role, by an owner, and writes it at the space's next position
// (syncevent.MemberAddedType). Commit refuses it with ErrNotMember,
// ErrRoleForbids (the caller is no owner), ErrAlreadyMember,
// ErrMembersLimit, or ErrSpacesLimit (member is in maxUserSpaces spaces).
func AddMember(stream, member, role string) Change {
	return Change{stream: stream, op: addMember{member: member, role: role}}
}

type addMember struct{ member, role string }

func (a addMember) plan(ctx context.Context, t Table, stream, caller string, at time.Time) (*guard, []syncevent.Event, error) {
	if a.member == caller {
		return nil, nil, ErrAlreadyMember
	}
	g := newGuard(t, stream, caller)
	checkRole(g, t, stream, caller, RoleOwner)
	g.check(t.putNew(stream, memberPrefix+a.member, map[string]types.AttributeValue{attrRole: S(a.role)}), ErrAlreadyMember)
	g.check(countMembers(t, stream, 1, a.role == RoleOwner), ErrMembersLimit)
	name, err := spaceName(ctx, t, stream)
	if err != nil {
		return nil, nil, err
	}
	joined(t, g, stream, a.member, a.role, name)
	ev, err := serviceEvent(stream, syncevent.MemberAddedType, at, MembershipPayload{Member: a.member, Role: a.role})
	return g, ev, err
}

// RemoveMember is the change that removes member from the space of
// stream, by an owner or by member themself (leaving), and writes it, with
// the role they had, at the space's next position
// (syncevent.MemberRemovedType), after every event of theirs accepted
// before it. Commit refuses it with ErrNotMember, ErrRoleForbids (the
// caller is neither an owner nor member), ErrNoSuchMember, or
// ErrLastOwner.
func RemoveMember(stream, member string) Change {
	return Change{stream: stream, op: removeMember{member: member}}
}

// Leave is RemoveMember of the caller: Commit refuses it with
// ErrNotMember, or ErrLastOwner.
func Leave(stream string) Change { return Change{stream: stream, op: removeMember{}} }

// removeMember removes member, or, when member is empty, the caller.
type removeMember struct{ member string }

func (r removeMember) plan(ctx context.Context, t Table, stream, caller string, at time.Time) (*guard, []syncevent.Event, error) {
	member := cmp.Or(r.member, caller)
	g := newGuard(t, stream, caller)
	if member != caller {
		checkRole(g, t, stream, caller, RoleOwner)
	}
	had, found, err := t.Role(ctx, stream, member)
	if err != nil {
		return nil, nil, err
	}
	gone := ErrNoSuchMember
	if member == caller {
		gone = ErrNotMember // leaving a space one is not in
	}
	if !found {
		had = noRole // a condition no member item meets
	}
	g.check(deleteMember(t, stream, member, had), nil)
	// The member item as read is what the delete is conditioned on:
	// gone, or changed (added back, another role) since; then read it
	// again and make the removal anew, at what is there now.
	if g.explain == nil {
		g.explain = map[int]func(context.Context) error{}
	}
	g.explain[len(g.writes)-1] = func(ctx context.Context) error {
		now, err := readMember(ctx, t, stream, member)
		switch {
		case err != nil:
			return err
		case now.found && now.role == had && now.pending:
			return errMemberPending
		case now.found || found:
			return fmt.Errorf("%w: the member changed while being removed", idempotency.ErrTransactionConflict)
		default:
			return gone
		}
	}
	// While the member's accepted events wait to be placed, their next
	// accepts are stopped, so that the count can come down to 0.
	g.whilePending = func(ctx context.Context, now time.Time, first bool) (Head, error) {
		if first {
			if err := markMemberLeaving(ctx, t, stream, member, now); err != nil {
				return Head{}, err
			}
		}
		return awaitPlaced(ctx, t, stream, member)
	}
	g.check(countMembers(t, stream, -1, had == RoleOwner), ErrLastOwner)
	left(t, g, stream, member)
	// Encoded as removals always were (encoding/json, escaped for HTML),
	// so that their payloads stay the same byte for byte.
	payload, err := stdjson.Marshal(MembershipPayload{Member: member, Role: had})
	if err != nil {
		return nil, nil, err
	}
	return g, []syncevent.Event{newServiceEvent(stream, syncevent.MemberRemovedType, at, payload)}, nil
}

// joined adds member's listing item and counts the space among theirs.
func joined(t Table, g *guard, stream, member, role, name string) {
	g.check(t.put(member, stream, map[string]types.AttributeValue{attrRole: S(role), attrName: S(name)}), nil)
	g.check(types.TransactWriteItem{Update: &types.Update{
		TableName:                aws.String(t.Name),
		Key:                      Key(member, userSpacesID),
		UpdateExpression:         aws.String("ADD #n :one"),
		ConditionExpression:      aws.String("attribute_not_exists(#n) OR #n < :max"),
		ExpressionAttributeNames: map[string]string{"#n": attrSpaceCount},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": N(1), ":max": N(maxUserSpaces),
		},
	}}, ErrSpacesLimit)
}

// left removes member's listing item and uncounts the space.
func left(t Table, g *guard, stream, member string) {
	g.check(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(t.Name), Key: Key(member, stream)}}, nil)
	g.check(types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(t.Name),
		Key:                       Key(member, userSpacesID),
		UpdateExpression:          aws.String("ADD #n :minus"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSpaceCount},
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": &types.AttributeValueMemberN{Value: "-1"}},
	}}, nil)
}

// roleCheck is the condition of a commit at the head that caller is a
// member of stream with one of roles and has no accepted event waiting to
// be sequenced: a commit at the head would be listed before it, against
// the order the member wrote them in.
func roleCheck(t Table, stream, caller string, roles ...string) types.TransactWriteItem {
	cond, names, values := roleCondition(roles)
	names["#pn"] = attrPending
	values[":zero"] = N(0)
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(t.Name),
		Key:                       Key(stream, memberPrefix+caller),
		ConditionExpression:       aws.String(cond + " AND " + noPending),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// checkRole adds roleCheck to g, its failure answered by what the member
// item holds now: not a member, a role that may not, or (a role that may)
// accepted events that were still waiting, errMemberPending.
func checkRole(g *guard, t Table, stream, caller string, roles ...string) {
	g.check(roleCheck(t, stream, caller, roles...), nil)
	if g.explain == nil {
		g.explain = map[int]func(context.Context) error{}
	}
	g.explain[len(g.writes)-1] = func(ctx context.Context) error { return whyRefused(ctx, t, stream, caller, roles) }
}

// noPending is the condition that a member item counts no pending
// events (#pn, :zero).
const noPending = "(attribute_not_exists(#pn) OR #pn = :zero)"

// acceptLimit is each member's limit on accepted requests: at most Max
// in each Window (windows of fixed length from the Unix epoch). The
// head's bucket limits a stream's commits at the head; an accept does not
// touch the head, so a space's limit on its busy path is each member's,
// counted on the member item the accept's role check updates anyway: the
// same call. The zero acceptLimit is none.
type acceptLimit struct {
	Window time.Duration
	Max    int
}

// window is the number of the window at now.
func (l acceptLimit) window(now time.Time) int64 { return now.UnixMilli() / l.Window.Milliseconds() }

// Ends is when the window holding now ends: when a member refused for
// the limit may be accepted again.
func (l acceptLimit) ends(now time.Time) time.Time {
	return time.UnixMilli((l.window(now) + 1) * l.Window.Milliseconds())
}

// acceptCheck is the role check of an accept (commit.go): that
// caller is an owner or a writer of stream, counting the n events it
// accepts as theirs, pending, on their member item. A removal waits for
// that count to come back to 0 (a pass takes it back as it
// places them), so that none of them is listed after it.
//
// A member being removed (markMemberLeaving) is accepted nothing until the mark
// lapses, so that their count can come down to 0.
//
// Under a limit, the request is counted in the window at now, and
// refused if the member's count there is full. The check expects the
// member item's window to be the current one (or none yet); from, when
// not 0, is the earlier window the item was found at
// (whyNotAccepted's acceptWindowPassedError), whose count the check starts
// over.
func acceptCheck(t Table, stream, caller string, n int, now time.Time, limit acceptLimit, from int64) types.TransactWriteItem {
	cond, names, values := roleCondition([]string{RoleOwner, RoleWriter})
	names["#pn"], names["#lv"] = attrPending, attrLeaving
	values[":n"] = N(uint64(n))
	values[":now"] = N(uint64(now.UnixMilli()))
	cond += " AND (attribute_not_exists(#lv) OR #lv < :now)"
	update := "ADD #pn :n"
	if limit.Max > 0 {
		names["#aw"], names["#ac"] = attrAcceptWindow, attrAccepts
		values[":w"] = N(uint64(limit.window(now)))
		values[":one"] = N(1)
		if from == 0 {
			values[":room"] = N(uint64(limit.Max - 1))
			cond += " AND (attribute_not_exists(#aw) OR #aw = :w) AND (attribute_not_exists(#ac) OR #ac <= :room)"
			update = "SET #aw = :w ADD #pn :n, #ac :one"
		} else {
			values[":from"] = N(uint64(from))
			cond += " AND #aw = :from"
			update = "SET #aw = :w, #ac = :one ADD #pn :n"
		}
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(t.Name),
		Key:                       Key(stream, memberPrefix+caller),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// leavingFor is how long a removal's mark stops a member's accepts: long
// enough to place what they have pending, short enough that a removal
// given up on (its request never retried) does not stop them for long.
const leavingFor = 30 * time.Second

// markMemberLeaving stops member's accepts for leavingFor from now, so that a
// removal waiting for their pending count to come down to 0 is not
// outrun by their next accepts. A removal that commits deletes the mark
// with the item; one that does not leaves it to lapse.
func markMemberLeaving(ctx context.Context, t Table, stream, member string, now time.Time) error {
	_, err := t.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.Name),
		Key:                       Key(stream, memberPrefix+member),
		UpdateExpression:          aws.String("SET #lv = :until"),
		ConditionExpression:       aws.String("attribute_exists(#r)"),
		ExpressionAttributeNames:  map[string]string{"#lv": attrLeaving, "#r": attrRole},
		ExpressionAttributeValues: map[string]types.AttributeValue{":until": N(uint64(now.Add(leavingFor).UnixMilli()))},
	})
	var gone *types.ConditionalCheckFailedException
	if errors.As(err, &gone) {
		return nil // not a member: the removal's own condition answers
	}
	if err != nil {
		return dynamodbstore.Classify(fmt.Errorf("mark a member leaving: %w", err))
	}
	return nil
}

// awaitPlaced places stream's front, pass after pass, until member's
// pending count is 0, and returns the head to commit at. Its passes race
// the sequencer's, whose wins place the same events: only the count says
// when to stop. Removals are rare; a busy space's backlog is the wait,
// not the races.
func awaitPlaced(ctx context.Context, t Table, stream, member string) (Head, error) {
	for deadline := time.Now().Add(maxPlacedWait); ; {
		head, ok, err := passForHead(ctx, t, stream)
		if err != nil {
			return Head{}, err
		}
		m, err := readMember(ctx, t, stream, member)
		if err != nil {
			return Head{}, err
		}
		if !m.pending {
			if !ok {
				return t.ReadHead(ctx, stream)
			}
			return head, nil
		}
		if err := ctx.Err(); err != nil {
			return Head{}, err
		}
		if time.Now().After(deadline) {
			return Head{}, fmt.Errorf("%w: the member's accepted events are still being sequenced", idempotency.ErrTransactionConflict)
		}
	}
}

// maxPlacedWait bounds a removal's wait for the member's accepted events
// to be placed; past it the request is a conflict, retried.
const maxPlacedWait = 10 * time.Second

// placedWrite is the write of a sequencer's pass that takes n of member's
// events off their pending count once placed: conditioned on the member
// item being there, which it is while the count is above 0 (a removal
// waits for 0).
func placedWrite(t Table, stream, member string, n int) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(t.Name),
		Key:                       Key(stream, memberPrefix+member),
		UpdateExpression:          aws.String("ADD #pn :minus"),
		ConditionExpression:       aws.String("attribute_exists(#r)"),
		ExpressionAttributeNames:  map[string]string{"#pn": attrPending, "#r": attrRole},
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": &types.AttributeValueMemberN{Value: strconv.Itoa(-n)}},
	}}
}

// whyNotAccepted answers caller's failed acceptCheck under limit at
// now: not a member, a role that may not write, their accepts filling
// the window (errAcceptsLimited), a count of an earlier window to start
// over (*acceptWindowPassedError), or errMemberPending for one being
// removed.
func whyNotAccepted(ctx context.Context, t Table, stream, caller string, limit acceptLimit, now time.Time) error {
	roles := []string{RoleOwner, RoleWriter}
	m, err := readMember(ctx, t, stream, caller)
	if err != nil || !m.found || !slices.Contains(roles, m.role) || limit.Max == 0 {
		return whyRefusedMember(m, err, roles)
	}
	switch w := limit.window(now); {
	case m.acceptWindow != 0 && m.acceptWindow < w:
		return &acceptWindowPassedError{From: m.acceptWindow}
	case m.acceptWindow == w && m.accepts >= int64(limit.Max):
		return errAcceptsLimited
	}
	return whyRefusedMember(m, nil, roles)
}

// acceptWindowPassedError is why an accept under a limit was refused when
// the member item counts an earlier window, From: the caller checks
// again from it (acceptCheck), which starts the count over. It is never
// an answer to a client.
type acceptWindowPassedError struct{ From int64 }

func (e *acceptWindowPassedError) Error() string {
	return "eventstore: the member's accepts were counted in an earlier window"
}

// errAcceptsLimited is why an accept was refused when the member's
// requests fill their window (acceptLimit): the caller answers that the
// rate is exceeded, to retry at the window's end.
var errAcceptsLimited = errors.New("eventstore: the member's accepts fill the window")

// errMemberPending is why a commit at the head was refused when the
// member it checks has accepted events not yet sequenced: the caller
// sequences the stream (or accepts instead) and tries again. It is never
// an answer to a client.
var errMemberPending = errors.New("eventstore: the member has accepted events waiting to be sequenced")

// roleCondition is the condition that a member item's role is one of
// roles, with its names and values.
func roleCondition(roles []string) (string, map[string]string, map[string]types.AttributeValue) {
	values := map[string]types.AttributeValue{}
	in := make([]string, len(roles))
	for i, r := range roles {
		in[i] = ":r" + strconv.Itoa(i)
		values[in[i]] = S(r)
	}
	return "#r IN (" + strings.Join(in, ", ") + ")", map[string]string{"#r": attrRole}, values
}

// countMembers adds delta to the space's members (and owners, if owner),
// within the limits: at most maxSpaceMembers, never the last owner gone.
func countMembers(t Table, stream string, delta int, owner bool) types.TransactWriteItem {
	update, cond := "ADD #m :d", "#m < :max"
	names := map[string]string{"#m": attrMembers}
	values := map[string]types.AttributeValue{":d": N(0), ":max": N(maxSpaceMembers)}
	values[":d"] = &types.AttributeValueMemberN{Value: strconv.Itoa(delta)}
	if delta < 0 {
		cond = "attribute_exists(#m)"
		delete(values, ":max")
	}
	if owner {
		update += ", #o :d"
		names["#o"] = attrOwners
		if delta < 0 {
			cond += " AND #o > :one"
			values[":one"] = N(1)
		}
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(t.Name), Key: Key(stream, metaID), UpdateExpression: aws.String(update),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}}
}

// noRole is no role: a member item never holds it.
const noRole = "none"

// deleteMember deletes member's item if it still has role, the role read
// (noRole when it was not there: a condition no item meets, so that the commit
// still fails, and still tells a replay, its key recorded, from a member
// who is not there, even if one is added meanwhile), and counts no pending
// events: each was accepted before the removal, and is placed before it.
func deleteMember(t Table, stream, member, role string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(t.Name), Key: Key(stream, memberPrefix+member),
		ConditionExpression:       aws.String("#r = :r AND " + noPending),
		ExpressionAttributeNames:  map[string]string{"#r": attrRole, "#pn": attrPending},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": S(role), ":zero": N(0)},
	}}
}

// Role is user's role in the space of stream, read with strong
// consistency; found is false when they are not a member.
func (t Table) Role(ctx context.Context, stream, user string) (role string, found bool, _ error) {
	m, err := readMember(ctx, t, stream, user)
	return m.role, m.found, err
}

// member is a member item as read.
type member struct {
	role    string
	found   bool
	pending bool // events accepted, not yet sequenced
	// acceptWindow and accepts are the accepts limit's count (acceptLimit).
	acceptWindow, accepts int64
}

func readMember(ctx context.Context, t Table, stream, user string) (member, error) {
	item, err := t.get(ctx, stream, memberPrefix+user, "member")
	if err != nil {
		return member{}, err
	}
	r, ok := item[attrRole].(*types.AttributeValueMemberS)
	if !ok {
		return member{}, nil
	}
	n, _ := item[attrPending].(*types.AttributeValueMemberN)
	m := member{role: r.Value, found: true, pending: n != nil && n.Value != "0"}
	for name, into := range map[string]*int64{attrAcceptWindow: &m.acceptWindow, attrAccepts: &m.accepts} {
		if v, ok := item[name].(*types.AttributeValueMemberN); ok {
			if *into, err = strconv.ParseInt(v.Value, 10, 64); err != nil {
				return member{}, fmt.Errorf("%w: member %s: %w", errBadItem, name, err)
			}
		}
	}
	return m, nil
}

func spaceName(ctx context.Context, t Table, stream string) (string, error) {
	item, err := t.get(ctx, stream, metaID, "space")
	if err != nil {
		return "", err
	}
	name, _ := item[attrName].(*types.AttributeValueMemberS)
	if name == nil {
		return "", nil // no such space: the caller's role check fails the commit
	}
	return name.Value, nil
}

// newGuard is an empty guard of a commit to stream by caller whose role
// checks (roleCheck, refusal nil) are answered by whether caller is a
// member at all: ErrRoleForbids or ErrNotMember.
func newGuard(t Table, stream, caller string) *guard {
	return &guard{unexplained: func(ctx context.Context) error { return whyRefused(ctx, t, stream, caller, nil) }}
}

// whyRefused answers the caller's failed role check: whether they are a
// member at all.
// roles, when given, are those the check allowed: a member with one of
// them failed on something else, accepted events still waiting
// (errMemberPending), even if placed since.
func whyRefused(ctx context.Context, t Table, stream, caller string, roles []string) error {
	m, err := readMember(ctx, t, stream, caller)
	return whyRefusedMember(m, err, roles)
}

// whyRefusedMember is whyRefused of the member item as read.
func whyRefusedMember(m member, err error, roles []string) error {
	switch {
	case err != nil:
		return err
	case !m.found:
		return ErrNotMember
	case m.pending || slices.Contains(roles, m.role):
		return errMemberPending
	default:
		return ErrRoleForbids
	}
}

// SpaceListing is one of a user's spaces.
type SpaceListing struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// Spaces lists user's spaces, by id, with strong consistency.
func (t Table) Spaces(ctx context.Context, user string) ([]SpaceListing, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(t.Name),
		KeyConditionExpression:    aws.String("#u = :u AND begins_with(#id, :p)"),
		ExpressionAttributeNames:  map[string]string{"#u": attrStream, "#id": attrID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": S(user), ":p": S(spaceStreamPrefix)},
		ConsistentRead:            aws.Bool(true),
	}
	var out []SpaceListing
	for {
		page, err := t.Client.Query(ctx, in)
		if err != nil {
			return nil, dynamodbstore.Classify(fmt.Errorf("query spaces: %w", err))
		}
		for _, item := range page.Items {
			id, _ := item[attrID].(*types.AttributeValueMemberS)
			role, _ := item[attrRole].(*types.AttributeValueMemberS)
			name, _ := item[attrName].(*types.AttributeValueMemberS)
			if id == nil || role == nil || name == nil {
				return nil, fmt.Errorf("%w: a space listing lacks an attribute", errBadItem)
			}
			out = append(out, SpaceListing{ID: strings.TrimPrefix(id.Value, spaceStreamPrefix), Name: name.Value, Role: role.Value})
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
