package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Deleting an event. Positions have no gaps and a page passes none, so an
// event item is never deleted: a deletion turns it into a tombstone at its
// position (its payload erased to {}, deleted set) and, in the same
// transaction, writes a notice at the stream's next position (an event of
// type syncevent.DeletedType whose payload names the deleted id), so that
// a puller already past the event learns of it too. In a user's own
// stream the user may delete; in a space, an owner any event, a writer
// their own.

// DeletionPayload is the payload of a deletion's notice.
type DeletionPayload struct {
	ID string `json:"id"`
}

const attrDeleted, attrAuthor, attrPayload, attrType = "deleted", "author", "payload", "type"

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

// deletionGuard builds the guard of a deletion's commit: in a space, the
// caller's role (an owner, or a writer deleting their own event); the
// event made a tombstone, if it is one not deleted yet.
func (l *Log) deletionGuard(ctx context.Context, stream, caller string, evs []syncevent.Event) (*guard, error) {
	if len(evs) != 1 {
		return nil, fmt.Errorf("eventlog: a deletion is one event, got %d", len(evs))
	}
	var p DeletionPayload
	if err := json.Unmarshal(evs[0].Payload, &p); err != nil || p.ID == "" {
		return nil, fmt.Errorf("eventlog: deletion payload: %v", err)
	}
	g := &guard{explain: map[int]func(context.Context) error{}}
	ownOnly := false
	if IsSpaceStream(stream) {
		role, _, err := l.Role(ctx, stream, caller)
		if err != nil {
			return nil, err
		}
		if role == RoleOwner {
			g.check(l.roleCheck(stream, caller, RoleOwner), nil)
		} else {
			// Not an owner (or not a member: the check fails, and says why).
			g.check(l.roleCheck(stream, caller, RoleWriter), nil)
			ownOnly = true
		}
	}
	// The payload and the author go; the position, id, type and times
	// stay. The service's own events (membership changes, notices) are no
	// one's to delete: a notice deleted would hide the deletion it tells.
	tomb := &types.Update{
		TableName:        aws.String(l.table),
		Key:              key(stream, p.ID),
		UpdateExpression: aws.String("SET #p = :empty, #del = :yes REMOVE #a"),
		ConditionExpression: aws.String("attribute_exists(#rk) AND attribute_not_exists(#del) AND NOT (#t IN (" +
			strings.Join(reservedValues(), ", ") + "))"),
		ExpressionAttributeNames: map[string]string{"#p": attrPayload, "#del": attrDeleted, "#rk": attrReceivedKey, "#a": attrAuthor, "#t": attrType},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":empty": str("{}"), ":yes": &types.AttributeValueMemberBOOL{Value: true},
		},
	}
	for i, t := range syncevent.ReservedTypes {
		tomb.ExpressionAttributeValues[fmt.Sprintf(":rt%d", i)] = str(t)
	}
	if ownOnly {
		tomb.ConditionExpression = aws.String(*tomb.ConditionExpression + " AND #a = :me")
		tomb.ExpressionAttributeValues[":me"] = str(caller)
	}
	g.check(types.TransactWriteItem{Update: tomb}, nil)
	g.explain[len(g.writes)-1] = func(ctx context.Context) error { return l.whyNotDeleted(ctx, stream, p.ID) }
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
func (l *Log) whyNotDeleted(ctx context.Context, stream, id string) error {
	item, err := l.getItem(ctx, stream, id, "event")
	switch {
	case err != nil:
		return err
	case item[attrReceivedKey] == nil:
		return ErrEventNotFound
	case item[attrDeleted] != nil:
		return ErrAlreadyDeleted
	case isReserved(item[attrType]):
		return ErrNotDeletable
	default:
		return ErrRoleForbids // a writer, another's event
	}
}
