package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Spaces. A space is a stream of events shared by its members, each with
// a role. Its items live in the events table under the partition
// SpaceStream(id): its head and its events, as a user's; its meta item
// (name, counts of members and owners); and one item per member (role).
// Each member's own partition holds a listing item per space they are in
// (role, name) and a count of their spaces, so that a member lists their
// spaces with one Query and the limits hold in the transactions that
// change them.
//
// Every commit to a space checks the caller's role in the same
// transaction as its events, its head and its ledger record: a
// ConditionCheck on the caller's member item. So no write can commit after
// a removal commits: the removal deletes that item, and a transaction
// whose condition read it either commits before the removal (its position
// below the removal's) or fails. Membership changes are commits too: each
// writes an event of a reserved type (syncevent.ReservedTypes) at the
// space's next position, so a space's stream orders them with its events.

// Roles of a space's members.
const (
	RoleOwner  = "owner"
	RoleWriter = "writer"
	RoleReader = "reader"
)

// ValidRole reports whether r is a role.
func ValidRole(r string) bool { return r == RoleOwner || r == RoleWriter || r == RoleReader }

// Event types of membership changes, written by the service alone.
const (
	TypeSpaceCreated  = syncevent.SpaceCreatedType
	TypeMemberAdded   = syncevent.MemberAddedType
	TypeMemberRemoved = syncevent.MemberRemovedType
)

// MembershipPayload is the payload of TypeSpaceCreated (Name) and of
// TypeMemberAdded and TypeMemberRemoved (Member, Role: the role added, or
// the one the removed member had, which the commit fills in).
type MembershipPayload struct {
	Name   string `json:"name,omitempty"`
	Member string `json:"member,omitempty"`
	Role   string `json:"role,omitempty"`
}

// Limits of spaces.
const (
	MaxSpaceMembers = 100
	MaxUserSpaces   = 100
)

const spacePrefix = "space#"

// SpaceStream is the stream id of space id: its partition in the events
// table. No user id begins so (the API refuses such subs).
func SpaceStream(id string) string { return spacePrefix + id }

// IsSpaceStream reports whether stream is a space's.
func IsSpaceStream(stream string) bool { return strings.HasPrefix(stream, spacePrefix) }

// SpaceID is the id of the space whose stream is stream, and false for a
// user's stream.
func SpaceID(stream string) (string, bool) { return strings.CutPrefix(stream, spacePrefix) }

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
)

// The answers to a refused change of a space.
var (
	ErrSpaceExists   = errcode.New("SPACE_ALREADY_EXISTS", "A space with this id exists")
	ErrNotMember     = errcode.New("SPACE_NOT_MEMBER", "You are not a member of this space (or there is no such space)")
	ErrRoleForbids   = errcode.New("SPACE_ROLE_FORBIDS", "Your role in this space does not allow this")
	ErrAlreadyMember = errcode.New("SPACE_ALREADY_MEMBER", "This user is a member of this space already")
	ErrNoSuchMember  = errcode.New("SPACE_NO_SUCH_MEMBER", "This user is not a member of this space")
	ErrLastOwner     = errcode.New("SPACE_LAST_OWNER", "The last owner of a space may not leave it or be removed")
	ErrMembersLimit  = errcode.New("SPACE_MEMBERS_LIMIT", fmt.Sprintf("This space has %d members, the most it may have", MaxSpaceMembers))
	ErrSpacesLimit   = errcode.New("USER_SPACES_LIMIT", fmt.Sprintf("This user is in %d spaces, the most one may be in", MaxUserSpaces))
)

// guard is what a commit to a space writes besides its events and head,
// and what each of those writes failing means.
type guard struct {
	writes []types.TransactWriteItem
	// refusals[i] answers writes[i]'s condition failing; nil: ask why
	// (the caller's role check: not a member, or a role that may not).
	refusals []error
	// explain, where set for i, works out writes[i]'s answer by reading.
	explain map[int]func(context.Context) error
	// payload, if set, replaces the change's event's payload: what only
	// the commit knows (the role a removed member had).
	payload []byte
	// newStream: the head must not exist (the space is created), and a
	// head that does is ErrSpaceExists, never a commit at the real head.
	newStream bool
}

// spaceGuard builds the guard of a commit of evs to stream by caller.
func (l *Log) spaceGuard(ctx context.Context, stream, caller string, evs []syncevent.Event) (*guard, error) {
	g := &guard{}
	op := evs[0].Type
	if op == syncevent.DeletedType {
		return l.deletionGuard(ctx, stream, caller, evs)
	}
	if op != TypeSpaceCreated && op != TypeMemberAdded && op != TypeMemberRemoved {
		g.check(l.roleCheck(stream, caller, RoleOwner, RoleWriter), nil)
		return g, nil
	}
	if len(evs) != 1 {
		return nil, fmt.Errorf("eventlog: a membership change is one event, got %d", len(evs))
	}
	var p MembershipPayload
	if err := json.Unmarshal(evs[0].Payload, &p); err != nil {
		return nil, fmt.Errorf("eventlog: membership payload: %w", err)
	}
	switch op {
	case TypeSpaceCreated:
		g.newStream = true
		g.check(l.putNewItem(stream, metaID, map[string]types.AttributeValue{
			attrName: str(p.Name), attrMembers: num(1), attrOwners: num(1),
		}), ErrSpaceExists)
		g.check(l.putItem(stream, memberPrefix+caller, map[string]types.AttributeValue{attrRole: str(RoleOwner)}), nil)
		l.joined(g, stream, caller, RoleOwner, p.Name)
	case TypeMemberAdded:
		if p.Member == caller {
			return nil, ErrAlreadyMember
		}
		g.check(l.roleCheck(stream, caller, RoleOwner), nil)
		g.check(l.putNewItem(stream, memberPrefix+p.Member, map[string]types.AttributeValue{attrRole: str(p.Role)}), ErrAlreadyMember)
		g.check(l.countMembers(stream, 1, p.Role == RoleOwner), ErrMembersLimit)
		name, err := l.spaceName(ctx, stream)
		if err != nil {
			return nil, err
		}
		l.joined(g, stream, p.Member, p.Role, name)
	case TypeMemberRemoved:
		if p.Member != caller {
			g.check(l.roleCheck(stream, caller, RoleOwner), nil)
		}
		had, found, err := l.Role(ctx, stream, p.Member)
		if err != nil {
			return nil, err
		}
		gone := ErrNoSuchMember
		if p.Member == caller {
			gone = ErrNotMember // leaving a space one is not in
		}
		if !found {
			had = noRole // a condition no member item meets
		}
		g.check(l.deleteMember(stream, p.Member, had), nil)
		// The member item as read is what the delete is conditioned on:
		// gone, or changed (added back, another role) since; then read it
		// again and make the removal anew, at what is there now.
		g.explain = map[int]func(context.Context) error{len(g.writes) - 1: func(ctx context.Context) error {
			_, now, err := l.Role(ctx, stream, p.Member)
			switch {
			case err != nil:
				return err
			case now || found:
				return fmt.Errorf("%w: the member changed while being removed", idempotency.ErrTransactionConflict)
			default:
				return gone
			}
		}}
		p.Role = had
		if g.payload, err = json.Marshal(p); err != nil {
			return nil, err
		}
		g.check(l.countMembers(stream, -1, had == RoleOwner), ErrLastOwner)
		l.left(g, stream, p.Member)
	default:
		return nil, fmt.Errorf("eventlog: no such membership change %q", op)
	}
	return g, nil
}

// count is the number of g's writes; 0 for none.
func (g *guard) count() int {
	if g == nil {
		return 0
	}
	return len(g.writes)
}

// firstFailed is the lowest of failed that is one of g's writes.
func (g *guard) firstFailed(failed []int) (int, bool) {
	first, ok := 0, false
	for _, ix := range failed {
		if ix < g.count() && (!ok || ix < first) {
			first, ok = ix, true
		}
	}
	return first, ok
}

func (g *guard) check(w types.TransactWriteItem, refusal error) {
	g.writes = append(g.writes, w)
	g.refusals = append(g.refusals, refusal)
}

// joined adds member's listing item and counts the space among theirs.
func (l *Log) joined(g *guard, stream, member, role, name string) {
	g.check(l.putItem(member, stream, map[string]types.AttributeValue{attrRole: str(role), attrName: str(name)}), nil)
	g.check(types.TransactWriteItem{Update: &types.Update{
		TableName:                aws.String(l.table),
		Key:                      key(member, userSpacesID),
		UpdateExpression:         aws.String("ADD #n :one"),
		ConditionExpression:      aws.String("attribute_not_exists(#n) OR #n < :max"),
		ExpressionAttributeNames: map[string]string{"#n": attrSpaceCount},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": num(1), ":max": num(MaxUserSpaces),
		},
	}}, ErrSpacesLimit)
}

// left removes member's listing item and uncounts the space.
func (l *Log) left(g *guard, stream, member string) {
	g.check(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(l.table), Key: key(member, stream)}}, nil)
	g.check(types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(l.table),
		Key:                       key(member, userSpacesID),
		UpdateExpression:          aws.String("ADD #n :minus"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSpaceCount},
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": &types.AttributeValueMemberN{Value: "-1"}},
	}}, nil)
}

// roleCheck is the condition that caller is a member of stream with one of
// roles.
func (l *Log) roleCheck(stream, caller string, roles ...string) types.TransactWriteItem {
	names := map[string]string{"#r": attrRole}
	values := map[string]types.AttributeValue{}
	in := make([]string, len(roles))
	for i, r := range roles {
		in[i] = ":r" + strconv.Itoa(i)
		values[in[i]] = str(r)
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(l.table),
		Key:                       key(stream, memberPrefix+caller),
		ConditionExpression:       aws.String("#r IN (" + strings.Join(in, ", ") + ")"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// countMembers adds delta to the space's members (and owners, if owner),
// within the limits: at most MaxSpaceMembers, never the last owner gone.
func (l *Log) countMembers(stream string, delta int, owner bool) types.TransactWriteItem {
	update, cond := "ADD #m :d", "#m < :max"
	names := map[string]string{"#m": attrMembers}
	values := map[string]types.AttributeValue{":d": num(0), ":max": num(MaxSpaceMembers)}
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
			values[":one"] = num(1)
		}
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(l.table), Key: key(stream, metaID), UpdateExpression: aws.String(update),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}}
}

// noRole is no role: a member item never holds it.
const noRole = "none"

// deleteMember deletes member's item if it still has role, the role read
// (noRole when it was not there: a condition no item meets, so that the commit
// still fails, and still tells a replay, its key recorded, from a member
// who is not there, even if one is added meanwhile).
func (l *Log) deleteMember(stream, member, role string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(l.table), Key: key(stream, memberPrefix+member),
		ConditionExpression:       aws.String("#r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": attrRole},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": str(role)},
	}}
}

func (l *Log) putNewItem(pk, sk string, attrs map[string]types.AttributeValue) types.TransactWriteItem {
	w := l.putItem(pk, sk, attrs)
	w.Put.ConditionExpression = aws.String("attribute_not_exists(#id)")
	w.Put.ExpressionAttributeNames = map[string]string{"#id": attrEventID}
	return w
}

func (l *Log) putItem(pk, sk string, attrs map[string]types.AttributeValue) types.TransactWriteItem {
	item := key(pk, sk)
	for k, v := range attrs {
		item[k] = v
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(l.table), Item: item}}
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrUserID: str(pk), attrEventID: str(sk)}
}

// Role is user's role in the space of stream, read with strong
// consistency; found is false when they are not a member.
func (l *Log) Role(ctx context.Context, stream, user string) (role string, found bool, _ error) {
	return MemberRole(ctx, l.client, l.table, stream, user)
}

// MemberRole is Role on the events table called table: for a reader that
// has no Log (make run's channel stand-in asks who may subscribe).
func MemberRole(ctx context.Context, client *dynamodb.Client, table, stream, user string) (role string, found bool, _ error) {
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: key(stream, memberPrefix+user), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", false, dynamodbstore.Classify(fmt.Errorf("read member: %w", err))
	}
	r, ok := out.Item[attrRole].(*types.AttributeValueMemberS)
	if !ok {
		return "", false, nil
	}
	return r.Value, true, nil
}

func (l *Log) spaceName(ctx context.Context, stream string) (string, error) {
	item, err := l.getItem(ctx, stream, metaID, "space")
	if err != nil {
		return "", err
	}
	name, _ := item[attrName].(*types.AttributeValueMemberS)
	if name == nil {
		return "", nil // no such space: the caller's role check fails the commit
	}
	return name.Value, nil
}

// refusal is why write i of g failed: its own answer, or, for the
// caller's role check, whether they are a member at all.
func (l *Log) refusal(ctx context.Context, g *guard, i int, stream, caller string) error {
	if explain := g.explain[i]; explain != nil {
		return explain(ctx)
	}
	if err := g.refusals[i]; err != nil {
		return err
	}
	_, found, err := l.Role(ctx, stream, caller)
	switch {
	case err != nil:
		return err
	case found:
		return ErrRoleForbids
	default:
		return ErrNotMember
	}
}

// SpaceListing is one of a user's spaces.
type SpaceListing struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// Spaces lists user's spaces, by id, with strong consistency.
func (l *Log) Spaces(ctx context.Context, user string) ([]SpaceListing, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(l.table),
		KeyConditionExpression:    aws.String("#u = :u AND begins_with(#id, :p)"),
		ExpressionAttributeNames:  map[string]string{"#u": attrUserID, "#id": attrEventID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": str(user), ":p": str(spacePrefix)},
		ConsistentRead:            aws.Bool(true),
	}
	var out []SpaceListing
	for {
		page, err := l.client.Query(ctx, in)
		if err != nil {
			return nil, dynamodbstore.Classify(fmt.Errorf("query spaces: %w", err))
		}
		for _, item := range page.Items {
			id, _ := item[attrEventID].(*types.AttributeValueMemberS)
			role, _ := item[attrRole].(*types.AttributeValueMemberS)
			name, _ := item[attrName].(*types.AttributeValueMemberS)
			if id == nil || role == nil || name == nil {
				return nil, fmt.Errorf("%w: a space listing lacks an attribute", errBadItem)
			}
			out = append(out, SpaceListing{ID: strings.TrimPrefix(id.Value, spacePrefix), Name: name.Value, Role: role.Value})
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
