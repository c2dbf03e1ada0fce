package eventstore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the events table.
const (
	// attrStream is the partition key: a user's id, or a space's stream.
	attrStream = "user_id"
	// attrID is the sort key: an event's id, or the id of a head, a
	// floor, a space's meta or member item.
	attrID = "event_id"
	// attrPosition is an event's position (syncevent.Position.SortKey),
	// the index's sort key: only events have it.
	attrPosition = "received_key"
	// attrSeq is a head's (and a floor's) sequence number.
	attrSeq = "seq"
	// An event's other attributes.
	attrType       = "type"
	attrOccurredAt = "occurred_at"
	attrReceivedAt = "received_at"
	attrPayload    = "payload"
	attrAuthor     = "author"
	attrDeleted    = "deleted"
)

// ByReceivedIndex orders one user's events by position: the events stored
// before sequence numbers by receive time, then id; then every later one by
// its sequence number (see syncevent.Position.SortKey).
const ByReceivedIndex = "by_received"

// PendingIndex is the events table's sparse global index of accepted
// events not yet placed, attrPendingShard then attrPosition (their
// pending keys, in the order accepted), keys only: a sweep (package
// sequencer) finds the streams that a lost stream record left pending.
// Only pending items carry attrPendingShard; placing one removes it.
const (
	PendingIndex     = "pending"
	attrPendingShard = "pending_shard"
)

// HeadID is the event_id of each stream's head item. Event ids are
// UUIDs, so it is never one; it has no received_key, so the index never
// lists it.
const HeadID = "head"

// floorID is the event_id of a stream's floor item (trim.go);
// it has no received_key either.
const floorID = "floor"

// TableInput is the request that creates an events table called name,
// billed on demand: one item per (user, event id), so that "the event id
// is new" is a condition on the item itself, and a local index by
// position, so that a user's events are read in commit order with strong
// consistency, and a sparse global index of pending events
// (PendingIndex). Its stream holds new images: a head's tells that the
// user's events moved (changes.go).
func TableInput(name string) *dynamodb.CreateTableInput {
	key := func(name string, t types.KeyType) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: t}
	}
	attr := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{key(attrStream, types.KeyTypeHash), key(attrID, types.KeyTypeRange)},
		AttributeDefinitions: []types.AttributeDefinition{attr(attrStream), attr(attrID), attr(attrPosition), attr(attrPendingShard)},
		// The stream carries each head's new image to the poke function
		// (only heads pass its filter); see HeadChange.
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName:  aws.String(ByReceivedIndex),
			KeySchema:  []types.KeySchemaElement{key(attrStream, types.KeyTypeHash), key(attrPosition, types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String(PendingIndex),
			KeySchema:  []types.KeySchemaElement{key(attrPendingShard, types.KeyTypeHash), key(attrPosition, types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	}
}
