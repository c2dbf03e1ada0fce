package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The ledger table's key attributes and its time-to-live attribute.
const (
	PartitionKey = "user_id"
	SortKey      = "key"
	TTLAttribute = "expires_at"
)

// CloudFormation is the ledger table as a CloudFormation (or SAM)
// resource: the same keys and TTL as [TableInput] and [TTLInput], billed on
// demand, with point-in-time recovery and deletion protection. Paste it
// under Resources and give the function's role dynamodb:PutItem and
// dynamodb:GetItem on it (TransactWriteItems is authorised per action).
const CloudFormation = `IdempotencyTable:
  Type: AWS::DynamoDB::Table
  Metadata:
    checkov:
      skip:
        - id: CKV_AWS_119
          comment: Encrypted at rest with the AWS-managed key (SSEEnabled); records hold answers already sent, and a customer key adds cost and a key policy to run.
  DeletionPolicy: Retain
  UpdateReplacePolicy: Retain
  Properties:
    BillingMode: PAY_PER_REQUEST
    AttributeDefinitions:
      - {AttributeName: user_id, AttributeType: S}
      - {AttributeName: key, AttributeType: S}
    KeySchema:
      - {AttributeName: user_id, KeyType: HASH}
      - {AttributeName: key, KeyType: RANGE}
    TimeToLiveSpecification:
      AttributeName: expires_at
      Enabled: true
    PointInTimeRecoverySpecification:
      PointInTimeRecoveryEnabled: true
    DeletionProtectionEnabled: true
    SSESpecification:
      SSEEnabled: true
`

// TableInput is the request that creates a ledger table called name,
// billed on demand.
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(PartitionKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(SortKey), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(PartitionKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(SortKey), AttributeType: types.ScalarAttributeTypeS},
		},
	}
}

// TTLInput is the request that turns on time to live for the ledger table
// called name, so that DynamoDB deletes records some time after they
// expire (the store treats them as gone from the moment they do).
func TTLInput(name string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true)},
	}
}

// CreateTable makes the table in (unless a table of that name exists),
// waits until it is active and, if ttl is set, turns on time to live: for
// tests and local backends, where no template runs. CreateTable(ctx,
// client, TableInput(name), TTLInput(name)) makes a ledger table.
func CreateTable(ctx context.Context, client *dynamodb.Client, in *dynamodb.CreateTableInput, ttl *dynamodb.UpdateTimeToLiveInput) error {
	name := aws.ToString(in.TableName)
	// DescribeTable, not ListTables: not every local backend has the latter.
	_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	var notFound *types.ResourceNotFoundException
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &notFound):
		return fmt.Errorf("describe table %s: %w", name, err)
	}
	if _, err := client.CreateTable(ctx, in); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) { // created meanwhile by someone else
			return fmt.Errorf("create table %s: %w", name, err)
		}
	}
	if err := waitActive(ctx, client, name); err != nil {
		return err
	}
	if ttl == nil {
		return nil
	}
	if _, err := client.UpdateTimeToLive(ctx, ttl); err != nil {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}

// waitActive polls until the table is ACTIVE, with a backoff that suits a
// local backend (ACTIVE at once) as well as DynamoDB (seconds).
func waitActive(ctx context.Context, client *dynamodb.Client, name string) error {
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("wait for table %s: %w", name, err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table %s: %w", name, ctx.Err())
		case <-time.After(delay):
		}
	}
}
