package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
)

// Store is the ledger table called Table, reached with a DynamoDB client.
// It implements idempotency.Store for writes of any table.
type Store struct {
	client *dynamodb.Client
	table  string
}

var _ idempotency.Store[types.TransactWriteItem] = (*Store)(nil)

// New returns the Store of the ledger table called table.
func New(client *dynamodb.Client, table string) *Store {
	return &Store{client: client, table: table}
}

// ledgerCondition lets the record's Put through if no record exists or the
// one there has expired but TTL has not deleted it yet ("key" is a
// reserved word).
const ledgerCondition = "attribute_not_exists(#k) OR #exp < :now"

// Commit writes rec and writes in one TransactWriteItems, the record
// first: on a backend that reports only the first failed condition, a
// known key must be recognised as such before any business condition.
// Before anything is sent, the transaction is held to DynamoDB's limits
// (100 actions, 4 MB, 400 KB an item): past them the error wraps
// idempotency.ErrTooLarge; a user id or key longer than DynamoDB's key
// limits is refused with errcode.ValidationFailed. A failed business condition is a
// *ConditionFailedError whose indexes are into writes.
func (s *Store) Commit(ctx context.Context, rec idempotency.Record, writes []types.TransactWriteItem, now time.Time) error {
	if err := checkKeys(rec); err != nil {
		return err
	}
	put := &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                encodeRecord(rec),
		ConditionExpression:                 aws.String(ledgerCondition),
		ExpressionAttributeNames:            map[string]string{"#k": SortKey, "#exp": TTLAttribute},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": epoch(now)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if rec.Lease != "" {
		// The record replaces the item of the lease this execution holds.
		put.ConditionExpression = aws.String(ledgerCondition + " OR #o = :lease")
		put.ExpressionAttributeNames["#o"] = leaseOwnerAttribute
		put.ExpressionAttributeValues[":lease"] = str(rec.Lease)
	}
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, types.TransactWriteItem{Put: put})
	items = append(items, writes...)
	if err := checkTransaction(items); err != nil {
		return err
	}
	var sent outcomeProbe
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}, sent.option)
	if err == nil {
		return nil
	}
	if err = classifyCommit(err); sent.unknown && !wasCancelled(err) {
		return fmt.Errorf("%w: %w", idempotency.ErrOutcomeUnknown, err)
	}
	var failed *ConditionFailedError
	if errors.As(err, &failed) {
		return s.readRefused(ctx, writes, failed)
	}
	var exists *idempotency.KeyExistsError
	if errors.As(err, &exists) && exists.Existing == nil {
		return s.readHolder(ctx, rec, err)
	}
	return err
}

// readHolder says who holds rec's key, where the failed condition came
// back without the item (kumo returns none): its record, or an execution
// in progress. Where the item is gone by then (TTL), err as it was: the
// flow reads again and commits again.
func (s *Store) readHolder(ctx context.Context, rec idempotency.Record, err error) error {
	held, readErr := s.read(ctx, rec.UserID, rec.Key)
	switch {
	case readErr != nil:
		return readErr // the transaction was cancelled: nothing was stored
	case len(held) == 0:
		return err
	}
	return holder(held)
}

// readRefused completes failed with a strongly consistent read of each
// item that a refused write asked for (ALL_OLD) and the backend did not
// return: DynamoDB returns none when no item stood, and some backends
// (kumo) never do. A Put names its key only inside its item, whose key
// attributes the store does not know, so a refused Put is not read.
func (s *Store) readRefused(ctx context.Context, writes []types.TransactWriteItem, failed *ConditionFailedError) error {
	for j, ix := range failed.Indexes {
		table, key, asks := refusedKey(writes[ix])
		if !asks || len(failed.Items[j]) > 0 {
			continue
		}
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			// The transaction was cancelled: nothing was stored.
			return Classify(fmt.Errorf("read the item of refused write %d: %w", ix, err))
		}
		failed.Items[j] = out.Item
	}
	return failed
}

// refusedKey is the table and key of a write that asks for the item its
// failed condition saw (ReturnValuesOnConditionCheckFailure ALL_OLD) and
// names a key: an Update, a Delete or a ConditionCheck.
func refusedKey(w types.TransactWriteItem) (*string, map[string]types.AttributeValue, bool) {
	const allOld = types.ReturnValuesOnConditionCheckFailureAllOld
	switch {
	case w.Update != nil:
		return w.Update.TableName, w.Update.Key, w.Update.ReturnValuesOnConditionCheckFailure == allOld
	case w.Delete != nil:
		return w.Delete.TableName, w.Delete.Key, w.Delete.ReturnValuesOnConditionCheckFailure == allOld
	case w.ConditionCheck != nil:
		return w.ConditionCheck.TableName, w.ConditionCheck.Key, w.ConditionCheck.ReturnValuesOnConditionCheckFailure == allOld
	}
	return nil, nil, false
}

// ConditionFailedError reports the business writes whose conditions
// failed, so that the transaction wrote nothing. It matches
// *idempotency.WriteConditionError with errors.As, each refusal's Item a
// map[string]types.AttributeValue.
type ConditionFailedError struct {
	// Indexes are into the writes handed to Commit. DynamoDB reports every
	// write whose condition failed; some other implementations only the
	// first.
	Indexes []int
	// Items holds, for each of Indexes, the item as it stood, where the
	// write asked for it (ReturnValuesOnConditionCheckFailure ALL_OLD):
	// as DynamoDB returned it, or, where the backend returned none, as a
	// strongly consistent read found it (an Update, Delete or
	// ConditionCheck; a Put's item is not read). Nil where no item stood
	// or none was asked for.
	Items []map[string]types.AttributeValue
}

func (e *ConditionFailedError) Error() string {
	return fmt.Sprintf("conditions of writes %v failed", e.Indexes)
}

// As lets errors.As find the *idempotency.WriteConditionError it is.
func (e *ConditionFailedError) As(target any) bool {
	t, ok := target.(**idempotency.WriteConditionError)
	if ok {
		*t = &idempotency.WriteConditionError{Refusals: e.refusals()}
	}
	return ok
}

// refusals are e's refusals as package idempotency carries them: Item is
// untyped nil where no item stood, so that a nil check reads as one.
func (e *ConditionFailedError) refusals() []idempotency.Refusal {
	out := make([]idempotency.Refusal, len(e.Indexes))
	for i, ix := range e.Indexes {
		out[i].Index = ix
		if i < len(e.Items) && len(e.Items[i]) > 0 {
			out[i].Found, out[i].Item = true, e.Items[i]
		}
	}
	return out
}

// classifyCommit maps a failed TransactWriteItems to the errors package
// idempotency defines.
func classifyCommit(err error) error {
	var cancelled *types.TransactionCanceledException
	if !errors.As(err, &cancelled) {
		return Classify(err)
	}
	reasons := cancelled.CancellationReasons
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		if held := holder(reasons[0].Item); held != nil {
			return held
		}
		return &idempotency.KeyExistsError{}
	}
	// The record is item 0, so business write i is item i+1.
	var failed ConditionFailedError
	for i, r := range reasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			failed.Indexes = append(failed.Indexes, i-1)
			failed.Items = append(failed.Items, r.Item)
		}
	}
	if failed.Indexes != nil {
		return &failed
	}
	for _, r := range reasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return fmt.Errorf("%w: %w", idempotency.ErrTransactionConflict, err)
		}
	}
	return Classify(err)
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
// moment ago by a concurrent request. A key whose mutation is still
// running its steps has no record yet: found is false.
func (s *Store) Get(ctx context.Context, userID, key string) (idempotency.Record, bool, error) {
	item, err := s.read(ctx, userID, key)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	if _, leased := item[leaseOwnerAttribute]; len(item) == 0 || leased {
		return idempotency.Record{}, false, nil // none, or one still running its steps
	}
	rec, err := decodeRecord(item)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	return rec, true, nil
}

// All reads every record of the table with strong consistency (keys still
// running their steps have none yet): for tests and operators, never a
// request's path.
func (s *Store) All(ctx context.Context) ([]idempotency.Record, error) {
	var out []idempotency.Record
	in := &dynamodb.ScanInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := s.client.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", s.table, err)
		}
		for _, item := range page.Items {
			if _, leased := item[leaseOwnerAttribute]; leased {
				continue // a key still running its steps has no record yet
			}
			rec, err := decodeRecord(item)
			if err != nil {
				return nil, fmt.Errorf("scan %s: %w", s.table, err)
			}
			out = append(out, rec)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func str(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }

func epoch(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

// SetEffect records st as the state of the record's effect i (the i-th
// declared, named st.Name), if that effect is still pending; otherwise it
// answers idempotency.ErrEffectSettled: an effect delivered or failed is
// never set back, so that two deliveries at once (a stream's and the
// process's) cannot undo each other. Package outbox calls it.
func (s *Store) SetEffect(ctx context.Context, userID, key string, i int, st idempotency.EffectState) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       recordKey(userID, key),
		UpdateExpression:          aws.String("SET #e = :e"),
		ConditionExpression:       aws.String("#e.#s = :pending"),
		ExpressionAttributeNames:  map[string]string{"#e": effectAttribute(i), "#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": encodeEffect(st), ":pending": str(string(idempotency.EffectPending))},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return idempotency.ErrEffectSettled
	}
	return Classify(err)
}
