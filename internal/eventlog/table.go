package eventlog

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the events table.
const (
	attrUserID      = "user_id"
	attrEventID     = "event_id"
	attrReceivedKey = "received_key"
	// attrHeadSeq is the head item's sequence number.
	attrHeadSeq = "seq"
)

// ByReceivedIndex orders one user's events by position: the events stored
// before sequence numbers by receive time, then id; then every later one by
// its sequence number (see syncevent.Position.SortKey).
const ByReceivedIndex = "by_received"

// headID is the event_id of each user's head item. Event ids are UUIDs, so
// it is never one; it has no received_key, so the index never lists it.
const headID = "head"

// TableInput is the request that creates an events table called name,
// billed on demand: one item per (user, event id), so that "the event id
// is new" is a condition on the item itself, and a local index by
// position, so that a user's events are read in commit order with strong
// consistency. Its stream holds new images: a head's tells that the
// user's events moved.
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
		KeySchema:            []types.KeySchemaElement{key(attrUserID, types.KeyTypeHash), key(attrEventID, types.KeyTypeRange)},
		AttributeDefinitions: []types.AttributeDefinition{attr(attrUserID), attr(attrEventID), attr(attrReceivedKey)},
		// The stream carries each head's new image to the poke function
		// (only heads pass its filter); see HeadChange.
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName:  aws.String(ByReceivedIndex),
			KeySchema:  []types.KeySchemaElement{key(attrUserID, types.KeyTypeHash), key(attrReceivedKey, types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	}
}
