package dynamodbstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
)

// The CloudFormation snippet is the table TableInput and TTLInput make.
func TestCloudFormationIsTheTable(t *testing.T) {
	var doc map[string]struct {
		Type       string `yaml:"Type"`
		Properties struct {
			BillingMode          string `yaml:"BillingMode"`
			AttributeDefinitions []struct {
				AttributeName string `yaml:"AttributeName"`
				AttributeType string `yaml:"AttributeType"`
			} `yaml:"AttributeDefinitions"`
			KeySchema []struct {
				AttributeName string `yaml:"AttributeName"`
				KeyType       string `yaml:"KeyType"`
			} `yaml:"KeySchema"`
			TimeToLiveSpecification struct {
				AttributeName string `yaml:"AttributeName"`
				Enabled       bool   `yaml:"Enabled"`
			} `yaml:"TimeToLiveSpecification"`
		} `yaml:"Properties"`
	}
	if err := yaml.Unmarshal([]byte(dynamodbstore.CloudFormation), &doc); err != nil {
		t.Fatal(err)
	}
	res, ok := doc["IdempotencyTable"]
	if !ok || res.Type != "AWS::DynamoDB::Table" {
		t.Fatalf("no IdempotencyTable table in %v", doc)
	}
	p, in, ttl := res.Properties, dynamodbstore.TableInput("t"), dynamodbstore.TTLInput("t")
	if p.BillingMode != string(in.BillingMode) {
		t.Errorf("billing %s, want %s", p.BillingMode, in.BillingMode)
	}
	var attrs, keys []string
	for _, a := range p.AttributeDefinitions {
		attrs = append(attrs, a.AttributeName+" "+a.AttributeType)
	}
	for _, k := range p.KeySchema {
		keys = append(keys, k.AttributeName+" "+k.KeyType)
	}
	var wantAttrs, wantKeys []string
	for _, a := range in.AttributeDefinitions {
		wantAttrs = append(wantAttrs, *a.AttributeName+" "+string(a.AttributeType))
	}
	for _, k := range in.KeySchema {
		wantKeys = append(wantKeys, *k.AttributeName+" "+string(k.KeyType))
	}
	if !slices.Equal(attrs, wantAttrs) || !slices.Equal(keys, wantKeys) {
		t.Errorf("attributes %v keys %v, want %v %v", attrs, keys, wantAttrs, wantKeys)
	}
	if !p.TimeToLiveSpecification.Enabled || p.TimeToLiveSpecification.AttributeName != *ttl.TimeToLiveSpecification.AttributeName {
		t.Errorf("TTL %+v, want enabled on %s", p.TimeToLiveSpecification, *ttl.TimeToLiveSpecification.AttributeName)
	}
}

// business is a table of the application's: one item per id.
func business(t *testing.T, b *ddbtest.Backend) string {
	t.Helper()
	name := b.Tables.Events + "-business"
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	}
	if err := dynamodbstore.CreateTable(context.Background(), b.Client, in, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = b.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// Put, Update, Delete and ConditionCheck all commit with the record, or
// none of them does, and the error says which condition failed.
func TestCommitsAnyWritesAllOrNothing(t *testing.T) {
	b := ddbtest.Start(t)
	table := business(t, b)
	store := b.Ledger()
	ctx := context.Background()
	get := func(id string) map[string]types.AttributeValue {
		out, err := b.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": s(id)}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	put := func(id, v string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"id": s(id), "v": s(v)}}}
	}
	update := func(id, from, to string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": s(id)},
			UpdateExpression: aws.String("SET v = :to"), ConditionExpression: aws.String("v = :from"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":from": s(from), ":to": s(to)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
	}
	del := func(id string) types.TransactWriteItem {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": s(id)}}}
	}
	exists := func(id string) types.TransactWriteItem {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{"id": s(id)}, ConditionExpression: aws.String("attribute_exists(id)")}}
	}
	record := func() idempotency.Record {
		now := time.Now()
		return idempotency.Record{UserID: "alice", Key: uuid.NewString(), PayloadHash: "h", StatusCode: 200, ResponseBody: []byte(`{}`),
			Method: "PATCH", Route: "/x", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	if err := store.Commit(ctx, record(), []types.TransactWriteItem{put("a", "1"), put("gone", "x"), put("here", "x")}, time.Now()); err != nil {
		t.Fatal(err)
	}

	// A failing write in the middle: nothing of the others, nor the record.
	// Each write names its own item: DynamoDB refuses two on one item.
	failing := record()
	err := store.Commit(ctx, failing, []types.TransactWriteItem{put("b", "1"), update("a", "9", "2"), del("gone"), exists("here")}, time.Now())
	var cf *dynamodbstore.ConditionFailedError
	if !errors.As(err, &cf) || !slices.Equal(cf.Indexes, []int{1}) {
		t.Fatalf("a stale update: %v, want write 1 reported", err)
	}
	if cf.Items[0] != nil && cf.Items[0]["v"].(*types.AttributeValueMemberS).Value != "1" {
		t.Fatalf("the item returned with the failure: %v", cf.Items[0])
	}
	if get("b") != nil || get("gone") == nil || get("a")["v"].(*types.AttributeValueMemberS).Value != "1" {
		t.Fatal("a refused transaction wrote something")
	}
	if _, found, err := store.Get(ctx, "alice", failing.Key); err != nil || found {
		t.Fatalf("a refused transaction recorded its key: %v %v", found, err)
	}

	// The same writes, right this time: all of them, and the record.
	if err := store.Commit(ctx, failing, []types.TransactWriteItem{put("b", "1"), update("a", "1", "2"), del("gone"), exists("here")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if get("b") == nil || get("gone") != nil || get("a")["v"].(*types.AttributeValueMemberS).Value != "2" {
		t.Fatal("a committed transaction left a write out")
	}
	if rec, found, err := store.Get(ctx, "alice", failing.Key); err != nil || !found || rec.Method != "PATCH" {
		t.Fatalf("the record: %+v %v %v", rec, found, err)
	}
	// And once more: the key is known.
	var known *idempotency.KeyExistsError
	if err := store.Commit(ctx, failing, nil, time.Now()); !errors.As(err, &known) {
		t.Fatalf("a known key: %v", err)
	}
}

// Keys DynamoDB cannot store are refused before anything is sent.
func TestKeysDynamoDBCannotStoreAreRefusedFirst(t *testing.T) {
	b := ddbtest.Start(t)
	store := b.Ledger()
	now := time.Now()
	for _, tt := range []struct {
		user, key string
		code      errcode.Code
	}{
		{strings.Repeat("u", dynamodbstore.MaxPartitionKeyBytes+1), "k", errcode.ValidationFailed},
		{"u", strings.Repeat("k", dynamodbstore.MaxSortKeyBytes+1), errcode.ValidationFailed},
	} {
		b.Transport.Reset()
		err := store.Commit(context.Background(), idempotency.Record{UserID: tt.user, Key: tt.key, CreatedAt: now, ExpiresAt: now}, nil, now)
		if errcode.CodeOf(err) != tt.code || b.Transport.Total() != 0 {
			t.Fatalf("%d-byte user, %d-byte key: %v after %d calls, want %s and none", len(tt.user), len(tt.key), err, b.Transport.Total(), tt.code)
		}
	}
	longest := strings.Repeat("u", dynamodbstore.MaxPartitionKeyBytes)
	if err := store.Commit(context.Background(), idempotency.Record{UserID: longest, Key: "k", PayloadHash: "h", Method: "POST", Route: "/", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, nil, now); err != nil {
		t.Fatalf("the longest user id DynamoDB stores: %v", err)
	}
}
