package ddb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sync-events/sync-events/internal/idempotency"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Ledger is the ledger table: it implements idempotency.Store.
type Ledger struct {
	client *dynamodb.Client
	table  string
}

var _ idempotency.Store[types.TransactWriteItem] = (*Ledger)(nil)

// NewLedger returns the Ledger of the ledger table named table.
func NewLedger(client *dynamodb.Client, table string) *Ledger {
	return &Ledger{client: client, table: table}
}

// ledgerCondition lets the Put through if no record exists or the one there
// has expired but TTL has not deleted it yet ("key" is a reserved word).
const ledgerCondition = "attribute_not_exists(#k) OR #exp < :now"

// Commit puts the ledger record first and the business writes after it, in
// one transaction. The order matters on backends that report only
// the first failed condition: a known key must be recognised as such.
func (l *Ledger) Commit(ctx context.Context, rec idempotency.Record, writes []types.TransactWriteItem, now time.Time) error {
	err := l.commit(ctx, rec, writes, now)
	var failed *writesFailed
	if errors.As(err, &failed) {
		return &idempotency.WriteConditionError{Indexes: failed.indexes}
	}
	return err
}

// writesFailed reports the business writes whose conditions failed, by
// index into the writes, with the item the backend returned for each (nil
// where it returned none).
type writesFailed struct {
	indexes []int
	items   []map[string]types.AttributeValue
}

func (e *writesFailed) Error() string {
	return fmt.Sprintf("conditions of writes %v failed", e.indexes)
}

// commit is Commit, reporting failed business conditions as *writesFailed.
func (l *Ledger) commit(ctx context.Context, rec idempotency.Record, writes []types.TransactWriteItem, now time.Time) error {
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, types.TransactWriteItem{Put: &types.Put{
		TableName:                           aws.String(l.table),
		Item:                                recordItem(rec),
		ConditionExpression:                 aws.String(ledgerCondition),
		ExpressionAttributeNames:            map[string]string{"#k": attrKey, "#exp": attrExpiresAt},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": epoch(now)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	items = append(items, writes...)
	if err := checkTransactionLimits(items); err != nil {
		return err
	}
	_, err := l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	err = classifyCommitError(err)
	if errors.Is(err, ErrThrottled) {
		noteThrottle(ctx)
	}
	return err
}

// classifyCommitError maps a cancelled transaction to the idempotency errors.
func classifyCommitError(err error) error {
	// Not a modelled error of TransactWriteItems, so it is known by its code.
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ItemCollectionSizeLimitExceededException" {
		return fmt.Errorf("%w: %w", ErrItemCollectionFull, err)
	}
	var cancelled *types.TransactionCanceledException
	if !errors.As(err, &cancelled) {
		return err
	}
	reasons := cancelled.CancellationReasons
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		return &idempotency.KeyExistsError{Existing: existingRecord(reasons[0].Item)}
	}
	// The ledger record is item 0, so business write i is item i+1.
	var failed writesFailed
	for i, r := range reasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			failed.indexes = append(failed.indexes, i-1)
			failed.items = append(failed.items, r.Item)
		}
	}
	if failed.indexes != nil {
		return &failed
	}
	for _, r := range reasons {
		code := aws.ToString(r.Code)
		switch {
		case code == "TransactionConflict":
			return fmt.Errorf("%w: %w", idempotency.ErrTransactionConflict, err)
		case throttleCodes[code]:
			return fmt.Errorf("%w: %w", ErrThrottled, err)
		case code == "ItemCollectionSizeLimitExceeded":
			return fmt.Errorf("%w: %w", ErrItemCollectionFull, err)
		}
	}
	return err
}

// existingRecord decodes the item DynamoDB returned with a failed condition,
// or nil if the backend returned none (or one not worth trusting).
func existingRecord(item map[string]types.AttributeValue) *idempotency.Record {
	if len(item) == 0 {
		return nil
	}
	rec, err := decodeRecord(item)
	if err != nil {
		return nil
	}
	return &rec
}

// Get reads a record with strong consistency: it may have been written a
// moment ago by a concurrent request.
func (l *Ledger) Get(ctx context.Context, userID, key string) (idempotency.Record, bool, error) {
	out, err := l.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{attrUserID: str(userID), attrKey: str(key)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return idempotency.Record{}, false, err
	}
	if len(out.Item) == 0 {
		return idempotency.Record{}, false, nil
	}
	rec, err := decodeRecord(out.Item)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	return rec, true, nil
}

func recordItem(rec idempotency.Record) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrUserID:       str(rec.UserID),
		attrKey:          str(rec.Key),
		attrPayloadHash:  str(rec.PayloadHash),
		attrStatusCode:   &types.AttributeValueMemberN{Value: strconv.Itoa(rec.StatusCode)},
		attrResponseBody: str(string(rec.ResponseBody)),
		attrCreatedAt:    str(rec.CreatedAt.UTC().Format(syncevent.TimestampLayout)),
		attrMethod:       str(rec.Method),
		attrRoute:        str(rec.Route),
		attrExpiresAt:    epoch(rec.ExpiresAt),
	}
}

// errBadRecord reports a ledger item this code did not write.
var errBadRecord = errors.New("malformed idempotency record")

func decodeRecord(item map[string]types.AttributeValue) (idempotency.Record, error) {
	var rec idempotency.Record
	var body, created string
	var status, expires int64
	fields := []struct {
		name string
		dst  any
	}{
		{attrUserID, &rec.UserID}, {attrKey, &rec.Key}, {attrPayloadHash, &rec.PayloadHash},
		{attrStatusCode, &status}, {attrResponseBody, &body}, {attrCreatedAt, &created},
		{attrMethod, &rec.Method}, {attrRoute, &rec.Route}, {attrExpiresAt, &expires},
	}
	for _, f := range fields {
		if err := readAttr(item, f.name, f.dst); err != nil {
			return idempotency.Record{}, err
		}
	}
	t, err := time.Parse(syncevent.TimestampLayout, created)
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("%w: %s: %w", errBadRecord, attrCreatedAt, err)
	}
	rec.StatusCode, rec.ResponseBody, rec.CreatedAt, rec.ExpiresAt = int(status), []byte(body), t, time.Unix(expires, 0).UTC()
	return rec, nil
}

// readAttr reads a string attribute into *string or a number into *int64.
func readAttr(item map[string]types.AttributeValue, name string, dst any) error {
	switch d := dst.(type) {
	case *string:
		v, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return fmt.Errorf("%w: %s is not a string", errBadRecord, name)
		}
		*d = v.Value
	case *int64:
		v, ok := item[name].(*types.AttributeValueMemberN)
		if !ok {
			return fmt.Errorf("%w: %s is not a number", errBadRecord, name)
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", errBadRecord, name, err)
		}
		*d = n
	}
	return nil
}

func str(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }

func num(n uint64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}

func epoch(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}
