package spaces

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
	"github.com/sync-events/sync-events/internal/eventtable"
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

// StreamPrefix begins every space's stream id, and no user's: the API
// refuses subs that begin so.
const StreamPrefix = "space#"

// Stream is the stream id of space id: its partition in the events table.
func Stream(id string) string { return StreamPrefix + id }

// IsStream reports whether stream is a space's.
func IsStream(stream string) bool { return strings.HasPrefix(stream, StreamPrefix) }

// ID is the id of the space whose stream is stream, and false for a
// user's stream.
func ID(stream string) (string, bool) { return strings.CutPrefix(stream, StreamPrefix) }

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

// Guard is the guard of a commit of evs to stream, a space's, by caller:
// a write's role check, or a membership change's items. A deletion's is
// package deletion's.
func Guard(ctx context.Context, t eventtable.Table, stream, caller string, evs []syncevent.Event) (*eventtable.Guard, error) {
	g := NewGuard(t, stream, caller)
	op := evs[0].Type
	if op != TypeSpaceCreated && op != TypeMemberAdded && op != TypeMemberRemoved {
		g.Check(RoleCheck(t, stream, caller, RoleOwner, RoleWriter), nil)
		return g, nil
	}
	if len(evs) != 1 {
		return nil, fmt.Errorf("spaces: a membership change is one event, got %d", len(evs))
	}
	var p MembershipPayload
	if err := json.Unmarshal(evs[0].Payload, &p); err != nil {
		return nil, fmt.Errorf("spaces: membership payload: %w", err)
	}
	switch op {
	case TypeSpaceCreated:
		g.NewStream = ErrSpaceExists
		g.Check(t.PutNew(stream, metaID, map[string]types.AttributeValue{
			attrName: eventtable.S(p.Name), attrMembers: eventtable.N(1), attrOwners: eventtable.N(1),
		}), ErrSpaceExists)
		g.Check(t.Put(stream, memberPrefix+caller, map[string]types.AttributeValue{attrRole: eventtable.S(RoleOwner)}), nil)
		joined(t, g, stream, caller, RoleOwner, p.Name)
	case TypeMemberAdded:
		if p.Member == caller {
			return nil, ErrAlreadyMember
		}
		g.Check(RoleCheck(t, stream, caller, RoleOwner), nil)
		g.Check(t.PutNew(stream, memberPrefix+p.Member, map[string]types.AttributeValue{attrRole: eventtable.S(p.Role)}), ErrAlreadyMember)
		g.Check(countMembers(t, stream, 1, p.Role == RoleOwner), ErrMembersLimit)
		name, err := spaceName(ctx, t, stream)
		if err != nil {
			return nil, err
		}
		joined(t, g, stream, p.Member, p.Role, name)
	case TypeMemberRemoved:
		if p.Member != caller {
			g.Check(RoleCheck(t, stream, caller, RoleOwner), nil)
		}
		had, found, err := Role(ctx, t, stream, p.Member)
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
		g.Check(deleteMember(t, stream, p.Member, had), nil)
		// The member item as read is what the delete is conditioned on:
		// gone, or changed (added back, another role) since; then read it
		// again and make the removal anew, at what is there now.
		g.Explain = map[int]func(context.Context) error{len(g.Writes) - 1: func(ctx context.Context) error {
			_, now, err := Role(ctx, t, stream, p.Member)
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
		if g.Payload, err = json.Marshal(p); err != nil {
			return nil, err
		}
		g.Check(countMembers(t, stream, -1, had == RoleOwner), ErrLastOwner)
		left(t, g, stream, p.Member)
	default:
		return nil, fmt.Errorf("spaces: no such membership change %q", op)
	}
	return g, nil
}

// joined adds member's listing item and counts the space among theirs.
func joined(t eventtable.Table, g *eventtable.Guard, stream, member, role, name string) {
	g.Check(t.Put(member, stream, map[string]types.AttributeValue{attrRole: eventtable.S(role), attrName: eventtable.S(name)}), nil)
	g.Check(types.TransactWriteItem{Update: &types.Update{
		TableName:                aws.String(t.Name),
		Key:                      eventtable.Key(member, userSpacesID),
		UpdateExpression:         aws.String("ADD #n :one"),
		ConditionExpression:      aws.String("attribute_not_exists(#n) OR #n < :max"),
		ExpressionAttributeNames: map[string]string{"#n": attrSpaceCount},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": eventtable.N(1), ":max": eventtable.N(MaxUserSpaces),
		},
	}}, ErrSpacesLimit)
}

// left removes member's listing item and uncounts the space.
func left(t eventtable.Table, g *eventtable.Guard, stream, member string) {
	g.Check(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(t.Name), Key: eventtable.Key(member, stream)}}, nil)
	g.Check(types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(t.Name),
		Key:                       eventtable.Key(member, userSpacesID),
		UpdateExpression:          aws.String("ADD #n :minus"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSpaceCount},
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": &types.AttributeValueMemberN{Value: "-1"}},
	}}, nil)
}

// RoleCheck is the condition that caller is a member of stream with one
// of roles.
func RoleCheck(t eventtable.Table, stream, caller string, roles ...string) types.TransactWriteItem {
	names := map[string]string{"#r": attrRole}
	values := map[string]types.AttributeValue{}
	in := make([]string, len(roles))
	for i, r := range roles {
		in[i] = ":r" + strconv.Itoa(i)
		values[in[i]] = eventtable.S(r)
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(t.Name),
		Key:                       eventtable.Key(stream, memberPrefix+caller),
		ConditionExpression:       aws.String("#r IN (" + strings.Join(in, ", ") + ")"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// countMembers adds delta to the space's members (and owners, if owner),
// within the limits: at most MaxSpaceMembers, never the last owner gone.
func countMembers(t eventtable.Table, stream string, delta int, owner bool) types.TransactWriteItem {
	update, cond := "ADD #m :d", "#m < :max"
	names := map[string]string{"#m": attrMembers}
	values := map[string]types.AttributeValue{":d": eventtable.N(0), ":max": eventtable.N(MaxSpaceMembers)}
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
			values[":one"] = eventtable.N(1)
		}
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(t.Name), Key: eventtable.Key(stream, metaID), UpdateExpression: aws.String(update),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}}
}

// noRole is no role: a member item never holds it.
const noRole = "none"

// deleteMember deletes member's item if it still has role, the role read
// (noRole when it was not there: a condition no item meets, so that the commit
// still fails, and still tells a replay, its key recorded, from a member
// who is not there, even if one is added meanwhile).
func deleteMember(t eventtable.Table, stream, member, role string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(t.Name), Key: eventtable.Key(stream, memberPrefix+member),
		ConditionExpression:       aws.String("#r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": attrRole},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": eventtable.S(role)},
	}}
}

// Role is user's role in the space of stream, read with strong
// consistency; found is false when they are not a member.
func Role(ctx context.Context, t eventtable.Table, stream, user string) (role string, found bool, _ error) {
	item, err := t.Get(ctx, stream, memberPrefix+user, "member")
	if err != nil {
		return "", false, err
	}
	r, ok := item[attrRole].(*types.AttributeValueMemberS)
	if !ok {
		return "", false, nil
	}
	return r.Value, true, nil
}

func spaceName(ctx context.Context, t eventtable.Table, stream string) (string, error) {
	item, err := t.Get(ctx, stream, metaID, "space")
	if err != nil {
		return "", err
	}
	name, _ := item[attrName].(*types.AttributeValueMemberS)
	if name == nil {
		return "", nil // no such space: the caller's role check fails the commit
	}
	return name.Value, nil
}

// NewGuard is an empty guard of a commit to stream by caller whose role
// checks (RoleCheck, refusal nil) are answered by whether caller is a
// member at all: ErrRoleForbids or ErrNotMember.
func NewGuard(t eventtable.Table, stream, caller string) *eventtable.Guard {
	return &eventtable.Guard{Unexplained: func(ctx context.Context) error { return whyRefused(ctx, t, stream, caller) }}
}

// whyRefused answers the caller's failed role check: whether they are a
// member at all.
func whyRefused(ctx context.Context, t eventtable.Table, stream, caller string) error {
	_, found, err := Role(ctx, t, stream, caller)
	switch {
	case err != nil:
		return err
	case found:
		return ErrRoleForbids
	default:
		return ErrNotMember
	}
}

// Listing is one of a user's spaces.
type Listing struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// List lists user's spaces, by id, with strong consistency.
func List(ctx context.Context, t eventtable.Table, user string) ([]Listing, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(t.Name),
		KeyConditionExpression:    aws.String("#u = :u AND begins_with(#id, :p)"),
		ExpressionAttributeNames:  map[string]string{"#u": eventtable.AttrStream, "#id": eventtable.AttrID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": eventtable.S(user), ":p": eventtable.S(StreamPrefix)},
		ConsistentRead:            aws.Bool(true),
	}
	var out []Listing
	for {
		page, err := t.Client.Query(ctx, in)
		if err != nil {
			return nil, dynamodbstore.Classify(fmt.Errorf("query spaces: %w", err))
		}
		for _, item := range page.Items {
			id, _ := item[eventtable.AttrID].(*types.AttributeValueMemberS)
			role, _ := item[attrRole].(*types.AttributeValueMemberS)
			name, _ := item[attrName].(*types.AttributeValueMemberS)
			if id == nil || role == nil || name == nil {
				return nil, fmt.Errorf("%w: a space listing lacks an attribute", eventtable.ErrBadItem)
			}
			out = append(out, Listing{ID: strings.TrimPrefix(id.Value, StreamPrefix), Name: name.Value, Role: role.Value})
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
