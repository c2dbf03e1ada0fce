package dynamodbstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

// A key whose mutation runs steps has, until its record is committed, an
// item of the ledger in progress: the request's fingerprint (payload_hash,
// method, route), the lease (lease_owner, lease_until in Unix
// milliseconds) and each recorded step's result (step:<the name in hex>:
// a name with a dot would be split by kumo). The record's Put replaces it
// whole.
const (
	leaseOwnerAttribute = "lease_owner"
	leaseUntilAttribute = "lease_until"
	stepPrefix          = "step:"
)

var _ idempotency.LeaseStore = (*Store)(nil)

// Lease takes the key for owner until until: with one conditional Put for
// a fresh key; for a key whose lease has passed, with a read and an update
// that keeps its recorded steps and returns them.
func (s *Store) Lease(ctx context.Context, rec idempotency.Record, owner string, until, now time.Time) (map[string][]byte, error) {
	if err := checkKeys(rec); err != nil {
		return nil, err
	}
	item := encodeRecord(rec)
	delete(item, "status_code")
	delete(item, "response_body")
	item[leaseOwnerAttribute] = str(owner)
	item[leaseUntilAttribute] = millis(until)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String(ledgerCondition),
		ExpressionAttributeNames:            map[string]string{"#k": SortKey, "#exp": TTLAttribute},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": epoch(now)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		return nil, Classify(err)
	}
	held := failed.Item
	if len(held) == 0 {
		if held, err = s.read(ctx, rec.UserID, rec.Key); err != nil {
			return nil, err
		}
	}
	if len(held) == 0 {
		// Deleted (its record expired) between the Put and the read.
		return nil, errcode.Wrap(errcode.ServiceUnavailable, errors.New("the key's item went while its lease was taken"))
	}
	return s.takeOver(ctx, rec, held, owner, until, now)
}

// takeOver takes the lease of held, the key's item, if it is a lease that
// has passed, for the same request; otherwise it says who holds the key.
func (s *Store) takeOver(ctx context.Context, rec idempotency.Record, held map[string]types.AttributeValue, owner string, until, now time.Time) (map[string][]byte, error) {
	err := holder(held)
	var inProgress *idempotency.InProgressError
	if !errors.As(err, &inProgress) || inProgress.Until.After(now) || !rec.SameRequest(inProgress.Existing) {
		return nil, err
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       recordKey(rec.UserID, rec.Key),
		UpdateExpression:          aws.String("SET #o = :me, #u = :until"),
		ConditionExpression:       aws.String("#o = :was AND #u = :wasUntil"),
		ExpressionAttributeNames:  map[string]string{"#o": leaseOwnerAttribute, "#u": leaseUntilAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": str(owner), ":until": millis(until), ":was": held[leaseOwnerAttribute], ":wasUntil": held[leaseUntilAttribute]},
		ReturnValues:              types.ReturnValueAllNew,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		// Another execution took it first.
		if held, err = s.read(ctx, rec.UserID, rec.Key); err != nil {
			return nil, err
		}
		return nil, holder(held)
	}
	if err != nil {
		return nil, Classify(err)
	}
	return steps(out.Attributes), nil
}

// SaveStep records a step's result on the key's item while owner holds
// its lease.
func (s *Store) SaveStep(ctx context.Context, userID, key, owner, name string, result []byte) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       recordKey(userID, key),
		UpdateExpression:          aws.String("SET #s = :r"),
		ConditionExpression:       aws.String("#o = :me"),
		ExpressionAttributeNames:  map[string]string{"#s": stepAttribute(name), "#o": leaseOwnerAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberB{Value: result}, ":me": str(owner)},
	})
	return s.lost(ctx, userID, key, err)
}

// Release ends owner's lease now, keeping the recorded steps.
func (s *Store) Release(ctx context.Context, userID, key, owner string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       recordKey(userID, key),
		UpdateExpression:          aws.String("SET #u = :zero"),
		ConditionExpression:       aws.String("#o = :me"),
		ExpressionAttributeNames:  map[string]string{"#u": leaseUntilAttribute, "#o": leaseOwnerAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": millis(time.UnixMilli(0)), ":me": str(owner)},
	})
	return s.lost(ctx, userID, key, err)
}

// lost is err, a conditional update's, as the flow reads it: where the
// lease is no longer the caller's, who holds the key now.
func (s *Store) lost(ctx context.Context, userID, key string, err error) error {
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		return Classify(err)
	}
	held, err := s.read(ctx, userID, key)
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return fmt.Errorf("the key's item is gone")
	}
	return holder(held)
}

// read is the key's item as it stands, nil if there is none.
func (s *Store) read(ctx context.Context, userID, key string) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: recordKey(userID, key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, Classify(fmt.Errorf("read idempotency record: %w", err))
	}
	return out.Item, nil
}

// holder says who holds a key whose item is held: its record (a
// *KeyExistsError), or an execution in progress (an *InProgressError).
// An absent item (TTL deleted it meanwhile) holds nothing: nil.
func holder(held map[string]types.AttributeValue) error {
	if len(held) == 0 {
		return nil
	}
	if _, leased := held[leaseOwnerAttribute]; !leased {
		return &idempotency.KeyExistsError{Existing: existingRecord(held)}
	}
	e := &idempotency.InProgressError{}
	if v, ok := held["payload_hash"].(*types.AttributeValueMemberS); ok {
		e.Existing.PayloadHash = v.Value
	}
	if v, ok := held["method"].(*types.AttributeValueMemberS); ok {
		e.Existing.Method = v.Value
	}
	if v, ok := held["route"].(*types.AttributeValueMemberS); ok {
		e.Existing.Route = v.Value
	}
	if v, ok := held[leaseUntilAttribute].(*types.AttributeValueMemberN); ok {
		if ms, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
			e.Until = time.UnixMilli(ms).UTC()
		}
	}
	return e
}

// steps are the results recorded on a key's item, by name.
func steps(item map[string]types.AttributeValue) map[string][]byte {
	out := map[string][]byte{}
	for attr, v := range item {
		hexName, ok := strings.CutPrefix(attr, stepPrefix)
		name, err := hex.DecodeString(hexName)
		if b, isBytes := v.(*types.AttributeValueMemberB); ok && err == nil && isBytes {
			out[string(name)] = b.Value
		}
	}
	return out
}

func stepAttribute(name string) string { return stepPrefix + hex.EncodeToString([]byte(name)) }

// recordKey is the ledger item's key of (userID, key).
func recordKey(userID, key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PartitionKey: str(userID), SortKey: str(key)}
}

func millis(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}
