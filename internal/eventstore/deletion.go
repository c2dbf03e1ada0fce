// Deletion. Positions have no gaps and a page passes none, so an event
// item is never removed: a deletion turns it into a tombstone at its
// position (its payload erased to {}, deleted set) and, in the same
// transaction, writes a notice at the stream's next position (an event of
// type syncevent.DeletedType whose payload names the deleted id), so that
// a puller already past the event learns of it too. In a user's own
// stream the user may delete; in a space, an owner any event, a writer
// their own.

package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// deletionPayload is the payload of a deletion's notice.
type deletionPayload struct {
	ID string `json:"id"`
}

// The answers to a deletion that cannot be made.
var (
	ErrEventNotFound  = errcode.New("EVENT_NOT_FOUND", "No event with this id is stored here")
	ErrAlreadyDeleted = errcode.New("EVENT_ALREADY_DELETED", "This event is deleted already")
	ErrNotDeletable   = errcode.New("EVENT_NOT_DELETABLE", "This is an event the service wrote (a membership change or a deletion's notice): it cannot be deleted")
)

func isReserved(v types.AttributeValue) bool {
	t, ok := v.(*types.AttributeValueMemberS)
	return ok && syncevent.Reserved(t.Value)
}

// Delete is the change that makes stream's event id a tombstone at its
// position and writes a notice of it at the stream's next position
// (syncevent.DeletedType), so that a puller already past the event learns
// of it too. In a space the caller must be an owner, or a writer deleting
// their own event (ErrNotMember, ErrRoleForbids). Commit refuses it with
// ErrEventNotFound, ErrAlreadyDeleted, or ErrNotDeletable (an event the
// service wrote).
func Delete(stream, id string) Change { return Change{stream: stream, op: deleteEvent{id: id}} }

type deleteEvent struct{ id string }

func (d deleteEvent) plan(ctx context.Context, t Table, stream, caller string, at time.Time) (*guard, []syncevent.Event, error) {
	if d.id == "" {
		return nil, nil, errors.New("eventstore: a deletion names the event it deletes")
	}
	g, err := deletionGuard(ctx, t, stream, caller, d.id)
	if err != nil {
		return nil, nil, err
	}
	ev, err := serviceEvent(stream, syncevent.DeletedType, at, deletionPayload{ID: d.id})
	return g, ev, err
}

// deletionGuard is the guard of the deletion of stream's event id by
// caller: in a space, the caller's role (an owner, or a writer deleting
// their own event); the event made a tombstone, if it is one not deleted
// yet.
func deletionGuard(ctx context.Context, t Table, stream, caller, id string) (*guard, error) {
	g := newGuard(t, stream, caller)
	ownOnly := false
	if IsSpaceStream(stream) {
		role, _, err := t.Role(ctx, stream, caller)
		if err != nil {
			return nil, err
		}
		if role == RoleOwner {
			checkRole(g, t, stream, caller, RoleOwner)
		} else {
			// Not an owner (or not a member: the check fails, and says why).
			checkRole(g, t, stream, caller, RoleWriter)
			ownOnly = true
		}
	}
	// The payload and the author go; the position, id, type and times
	// stay. The service's own events (membership changes, notices) are no
	// one's to delete: a notice deleted would hide the deletion it tells.
	tomb := &types.Update{
		TableName:        aws.String(t.Name),
		Key:              Key(stream, id),
		UpdateExpression: aws.String("SET #p = :empty, #del = :yes REMOVE #a"),
		ConditionExpression: aws.String("attribute_exists(#rk) AND NOT begins_with(#rk, :pendingp) AND attribute_not_exists(#del) AND NOT (#t IN (" +
			strings.Join(reservedValues(), ", ") + "))"),
		ExpressionAttributeNames: map[string]string{"#p": attrPayload, "#del": attrDeleted, "#rk": attrPosition, "#a": attrAuthor, "#t": attrType},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":empty": S("{}"), ":yes": &types.AttributeValueMemberBOOL{Value: true},
			// A pending event (accepted, not yet sequenced) is placed
			// first, so that its tombstone is listed before the notice.
			":pendingp": S(PendingPrefix),
		},
	}
	for i, t := range syncevent.ReservedTypes {
		tomb.ExpressionAttributeValues[fmt.Sprintf(":rt%d", i)] = S(t)
	}
	if ownOnly {
		tomb.ConditionExpression = aws.String(*tomb.ConditionExpression + " AND #a = :me")
		tomb.ExpressionAttributeValues[":me"] = S(caller)
	}
	g.check(types.TransactWriteItem{Update: tomb}, nil)
	if g.explain == nil {
		g.explain = map[int]func(context.Context) error{}
	}
	g.explain[len(g.writes)-1] = func(ctx context.Context) error { return whyNotDeleted(ctx, t, stream, id) }
	return g, nil
}

// reservedValues are the placeholders of syncevent.ReservedTypes.
func reservedValues() []string {
	out := make([]string, len(syncevent.ReservedTypes))
	for i := range out {
		out[i] = fmt.Sprintf(":rt%d", i)
	}
	return out
}

// whyNotDeleted reads the event a deletion could not make a tombstone of.
func whyNotDeleted(ctx context.Context, t Table, stream, id string) error {
	item, err := t.get(ctx, stream, id, "event")
	switch {
	case err != nil:
		return err
	case item[attrPosition] == nil:
		return ErrEventNotFound
	case isPending(item):
		return errMemberPending // sequence the stream, then delete
	case item[attrDeleted] != nil:
		return ErrAlreadyDeleted
	case isReserved(item[attrType]):
		return ErrNotDeletable
	default:
		return ErrRoleForbids // a writer, another's event
	}
}
