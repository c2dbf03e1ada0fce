package ddb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute is a key attribute and its scalar type.
type Attribute struct {
	Name string
	Type types.ScalarAttributeType
}

// LocalIndex is a local secondary index projecting all attributes.
type LocalIndex struct {
	Name    string
	SortKey Attribute
}

// Table is the shape of a table: everything but its name.
type Table struct {
	PartitionKey Attribute
	SortKey      Attribute
	LocalIndexes []LocalIndex
	// TTLAttribute is the epoch-seconds attribute DynamoDB expires items by;
	// empty if items never expire.
	TTLAttribute string
}

// Attribute names of the ledger, as the seed's idempotency_ledger names them.
const (
	attrUserID       = "user_id"
	attrKey          = "key"
	attrPayloadHash  = "payload_hash"
	attrStatusCode   = "status_code"
	attrResponseBody = "response_body"
	attrCreatedAt    = "created_at"
	attrMethod       = "method"
	attrRoute        = "route"
	attrExpiresAt    = "expires_at"
)

// Attribute names of the events table.
const (
	attrEventID     = "event_id"
	attrReceivedKey = "received_key"
	attrType        = "type"
	attrOccurredAt  = "occurred_at"
	attrReceivedAt  = "received_at"
	attrPayload     = "payload"
	// attrHeadSeq is the head item's sequence number.
	attrHeadSeq = "seq"
)

// ByReceivedIndex orders one user's events by position: the events stored
// before sequence numbers by receive time, then id; then every later one by
// its sequence number (see syncevent.Position.SortKey).
const ByReceivedIndex = "by_received"

// LedgerTable is the idempotency ledger: one record per (user, key).
var LedgerTable = Table{
	PartitionKey: Attribute{attrUserID, types.ScalarAttributeTypeS},
	SortKey:      Attribute{attrKey, types.ScalarAttributeTypeS},
	TTLAttribute: attrExpiresAt,
}

// EventsTable holds the events, one item per (user, event id), so that the
// "event id is new" condition is a condition on the item itself.
var EventsTable = Table{
	PartitionKey: Attribute{attrUserID, types.ScalarAttributeTypeS},
	SortKey:      Attribute{attrEventID, types.ScalarAttributeTypeS},
	LocalIndexes: []LocalIndex{{Name: ByReceivedIndex, SortKey: Attribute{attrReceivedKey, types.ScalarAttributeTypeS}}},
}

// CreateTableInput is the request that creates t under name, billed on demand.
func (t Table) CreateTableInput(name string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(t.PartitionKey.Name), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(t.SortKey.Name), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(t.PartitionKey.Name), AttributeType: t.PartitionKey.Type},
			{AttributeName: aws.String(t.SortKey.Name), AttributeType: t.SortKey.Type},
		},
	}
	for _, ix := range t.LocalIndexes {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(ix.SortKey.Name), AttributeType: ix.SortKey.Type})
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName: aws.String(ix.Name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(t.PartitionKey.Name), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(ix.SortKey.Name), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	return in
}

// TableNames names the two tables.
type TableNames struct {
	Ledger string
	Events string
}

// EnsureTables creates the tables that do not exist yet, waits for them to be
// active and turns on TTL where the table has one. It is for local and test
// backends; in AWS the template creates the tables.
func EnsureTables(ctx context.Context, client *dynamodb.Client, names TableNames) error {
	for _, t := range []struct {
		name string
		def  Table
	}{{names.Ledger, LedgerTable}, {names.Events, EventsTable}} {
		if err := ensureTable(ctx, client, t.name, t.def); err != nil {
			return fmt.Errorf("table %s: %w", t.name, err)
		}
	}
	return nil
}

func ensureTable(ctx context.Context, client *dynamodb.Client, name string, def Table) error {
	// DescribeTable, not ListTables: not every local backend has the latter.
	_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &notFound):
		return fmt.Errorf("describe: %w", err)
	}
	if _, err := client.CreateTable(ctx, def.CreateTableInput(name)); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) { // created meanwhile by someone else
			return fmt.Errorf("create: %w", err)
		}
	}
	if err := waitActive(ctx, client, name); err != nil {
		return err
	}
	if def.TTLAttribute == "" {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(def.TTLAttribute), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("enable TTL: %w", err)
	}
	return nil
}

// DeleteTables removes both tables; tests use it to clean up after themselves.
func DeleteTables(ctx context.Context, client *dynamodb.Client, names TableNames) error {
	var errs []error
	for _, name := range []string{names.Ledger, names.Events} {
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			errs = append(errs, fmt.Errorf("delete table %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// waitActive polls until the table is ACTIVE, with a backoff that suits a
// local backend (ACTIVE at once) as well as DynamoDB (seconds).
func waitActive(ctx context.Context, client *dynamodb.Client, name string) error {
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("wait for table: %w", err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}
