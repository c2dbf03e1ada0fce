package dynamodbstore_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
)

func importedRecord(key string) idempotency.Record {
	at := time.Date(2026, 12, 1, 9, 30, 0, 250e6, time.UTC)
	return idempotency.Record{
		UserID: "alice", Key: key, PayloadHash: strings.Repeat("ab", 32), HashScheme: idempotency.HashSchemeD1JS,
		StatusCode: 201, ResponseBody: []byte(`{"event":{"id":"x"}}`), Method: "POST", Route: "/api/v1/sync/events",
		CreatedAt: at, ExpiresAt: at.Add(idempotency.DefaultRetention).Truncate(time.Second), // stored in seconds
	}
}

// TestInsertWritesOnceAndNeverOverwrites: Insert writes a record that
// reads back as given, its hash scheme too; a second Insert of the key,
// with another answer, leaves the first as it was and says so.
func TestInsertWritesOnceAndNeverOverwrites(t *testing.T) {
	b := dynamotest.Start(t)
	store := dynamodbstore.New(b.Client, b.LedgerTable(t))
	ctx := context.Background()
	rec := importedRecord(uuid.NewString())
	if written, err := store.Insert(ctx, rec); err != nil || !written {
		t.Fatalf("first Insert = %v, %v", written, err)
	}
	other := rec
	other.StatusCode, other.ResponseBody, other.HashScheme = 200, []byte(`{"other":true}`), ""
	if written, err := store.Insert(ctx, other); err != nil || written {
		t.Fatalf("second Insert = %v, %v; want false, nil", written, err)
	}
	got, found, err := store.Get(ctx, rec.UserID, rec.Key)
	if err != nil || !found || !reflect.DeepEqual(got, rec) {
		t.Fatalf("Get = %+v, %v, %v; want %+v", got, found, err, rec)
	}
}

// TestInsertRefusesWhatDynamoDBCannotStore: keys and items over
// DynamoDB's limits are refused before anything is sent.
func TestInsertRefusesWhatDynamoDBCannotStore(t *testing.T) {
	b := dynamotest.Start(t)
	store := dynamodbstore.New(b.Client, b.LedgerTable(t))
	big := importedRecord(uuid.NewString())
	big.ResponseBody = []byte(`"` + strings.Repeat("x", dynamodbstore.MaxItemBytes) + `"`)
	longUser := importedRecord(uuid.NewString())
	longUser.UserID = strings.Repeat("u", dynamodbstore.MaxPartitionKeyBytes+1)
	b.Transport.Reset()
	if _, err := store.Insert(context.Background(), big); !errors.Is(err, idempotency.ErrTooLarge) {
		t.Fatalf("a record over 400 KB: %v, want ErrTooLarge", err)
	}
	if _, err := store.Insert(context.Background(), longUser); errcode.CodeOf(err) != errcode.ValidationFailed {
		t.Fatalf("a user id over the key limit: %v, want %s", err, errcode.ValidationFailed)
	}
	if n := b.Transport.Total(); n != 0 {
		t.Fatalf("%d calls sent, want none", n)
	}
}

// TestInsertThrottledIsRetryable: a throttled Insert, once the SDK's own
// retries are spent, is IsThrottle and errcode.ServiceUnavailable, and
// wrote nothing.
func TestInsertThrottledIsRetryable(t *testing.T) {
	b := dynamotest.Start(t)
	store := dynamodbstore.New(b.Client, b.LedgerTable(t))
	rec := importedRecord(uuid.NewString())
	b.Transport.Throttle("PutItem", 10)
	_, err := store.Insert(context.Background(), rec)
	if !dynamodbstore.IsThrottle(err) || errcode.CodeOf(err) != errcode.ServiceUnavailable {
		t.Fatalf("throttled Insert: %v", err)
	}
	b.Transport.Reset()
	if _, found, err := store.Get(context.Background(), rec.UserID, rec.Key); err != nil || found {
		t.Fatalf("after a throttled Insert: found %v, %v", found, err)
	}
}

// TestAHashSchemeOfAnotherTypeIsNotARecord: an item whose hash_scheme is
// not a string was not written by this package, and is refused.
func TestAHashSchemeOfAnotherTypeIsNotARecord(t *testing.T) {
	b := dynamotest.Start(t)
	table := b.LedgerTable(t)
	store := dynamodbstore.New(b.Client, table)
	rec := importedRecord(uuid.NewString())
	if _, err := store.Insert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	_, err := b.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"user_id": &types.AttributeValueMemberS{Value: rec.UserID}, "key": &types.AttributeValueMemberS{Value: rec.Key},
		},
		UpdateExpression:          aws.String("SET hash_scheme = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Get(context.Background(), rec.UserID, rec.Key); err == nil {
		t.Fatal("a record with a numeric hash_scheme was read")
	}
}
