package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/idempotency"
)

// Handler plans one record's mutation, as an [idempotency.Executor] does:
// the writes to commit with the record's key, given the commit's time. It
// must do nothing outside those writes: it may run for a record whose key
// is already recorded (where the replay cache does not know it), and its
// writes are then not made. The Response is stored with the key and never
// answered to anyone; a consumer may leave it zero.
//
// An error reports the record failed, unless its key was recorded before
// (a commit whose answer was lost): then the record is Replayed, done. A
// panic is not recovered: it ends the invocation, and Lambda delivers the
// whole batch again.
type Handler[R, W any] func(ctx context.Context, record R, now time.Time) (idempotency.Execution[W], error)

// Order says whether a failure ends the batch.
type Order int

const (
	// OrderBySource is InOrder for a FIFO queue (its ARN ends in ".fifo")
	// and for streams, AnyOrder for a standard queue.
	OrderBySource Order = iota
	// InOrder stops at the first record that fails: it and every record
	// after it are reported failed without being tried, so that Lambda
	// delivers them again in their order.
	InOrder
	// AnyOrder tries every record and reports only those that failed.
	AnyOrder
)

// DefaultCaller is the caller of every record when Options.Caller is nil:
// the ledger's partition its records are kept in.
const DefaultCaller = "batch"

// Options tune a batch of records of type R; the zero value is the
// defaults each field names.
type Options[R any] struct {
	// Key is a record's idempotency key; nil is the message id for SQS and
	// the event id for Kinesis and DynamoDB streams (see the package doc
	// for when that suffices). An error or an empty key reports the record
	// failed, its handler not run.
	Key func(R) (string, error)
	// Caller is whom a record's key belongs to (idempotency.Request's
	// UserID, the ledger's partition key); nil is DefaultCaller for every
	// record. Consumers that share a ledger table and may see the same key
	// (two queues fed by one SNS topic, keyed by an id of the producer's)
	// need callers of their own, or the second is answered from the
	// first's record. An error or an empty caller reports the record
	// failed.
	Caller func(R) (string, error)
	// Payload is what a record sent again under its key must repeat: the
	// record keeps its SHA-256, and a key seen with another payload is
	// KeyReused, a failure. Nil is the SQS body, the Kinesis data, or the
	// DynamoDB change (event name, keys, new and old images), each in its
	// RFC 8785 canonical form where it is JSON. A Payload of one's own
	// leaves out what a producer's retry may change (a timestamp of its
	// sending, say).
	Payload func(R) []byte
	// Order says whether the first failure ends the batch; the zero value
	// is OrderBySource.
	Order Order
}

// Summary is what a batch came to, for a log line or a metric. Its counts
// hold nothing of the records; its LogValue is those counts alone.
type Summary struct {
	// Records is the number of records in the batch.
	Records int
	// Outcomes counts the records the flow answered, by outcome: Executed
	// and Replayed are done; KeyReused, WriteRejected and
	// ConflictExhausted failed.
	Outcomes map[idempotency.Outcome]int
	// FromCache counts the answers of the replay cache, with no DynamoDB
	// call: duplicates within the batch, and keys this environment
	// committed or read before.
	FromCache int
	// Errors counts records tried that failed without an outcome: no key
	// or caller, the handler's error on a key with no record, or the
	// store's failure.
	Errors int
	// Skipped counts records not tried because one before them failed, in
	// order.
	Skipped int
	// Failed is the number of records reported failed: those tried that
	// failed, and those skipped.
	Failed int
	// Failures are the records tried that failed, in the batch's order.
	Failures []Failure
}

// Failure is a record that was tried and failed, and why.
type Failure struct {
	// Index is the record's, into the event's Records.
	Index int
	// ItemIdentifier is what the batch response names it by: the message
	// id, or the stream record's sequence number. Under the default key of
	// SQS it is the record's whole idempotency key.
	ItemIdentifier string
	// Outcome is the flow's, where it gave one: KeyReused, WriteRejected
	// or ConflictExhausted.
	Outcome idempotency.Outcome
	// Err says why: the key's, the caller's, the handler's or the store's
	// error (the handler's errors are as it wrote them: log them only if
	// they hold no payload), the key's reuse, or for WriteRejected an
	// *idempotency.WriteConditionError with the refused writes.
	Err error
}

// LogValue is the summary's counts, with no failure's identifier or error.
func (s Summary) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Int("records", s.Records)}
	for _, o := range idempotency.Outcomes {
		if n := s.Outcomes[o]; n > 0 {
			attrs = append(attrs, slog.Int(string(o), n))
		}
	}
	return slog.GroupValue(append(attrs,
		slog.Int("from_cache", s.FromCache), slog.Int("errors", s.Errors),
		slog.Int("skipped", s.Skipped), slog.Int("failed", s.Failed))...)
}

var (
	errKeyReused = errors.New("batch: the record's key is recorded with another payload")
	errNoKey     = errors.New("batch: the record has no idempotency key")
	errNoCaller  = errors.New("batch: the record has no caller")
)

// SQS runs each message of event through flow under its key, and answers
// the messages that failed in BatchItemFailures by their message id.
func SQS[W any](ctx context.Context, flow *idempotency.Flow[W], event events.SQSEvent, handle Handler[events.SQSMessage, W], opts Options[events.SQSMessage]) (events.SQSEventResponse, Summary) {
	fifo := len(event.Records) > 0 && strings.HasSuffix(event.Records[0].EventSourceARN, ".fifo")
	src := source[events.SQSMessage]{
		route:   "sqs",
		ordered: fifo,
		id:      func(m events.SQSMessage) string { return m.MessageId },
		payload: func(m events.SQSMessage) []byte { return canonical([]byte(m.Body)) },
	}
	failed, sum := run(ctx, flow, event.Records, handle, opts, src)
	resp := events.SQSEventResponse{BatchItemFailures: make([]events.SQSBatchItemFailure, len(failed))}
	for i, id := range failed {
		resp.BatchItemFailures[i].ItemIdentifier = id
	}
	return resp, sum
}

// Kinesis runs each record of event through flow under its key, and
// answers the records that failed in BatchItemFailures by their sequence
// number. The default key is the event id (the shard's id and the
// sequence number): a sequence number is unique within its shard only.
func Kinesis[W any](ctx context.Context, flow *idempotency.Flow[W], event events.KinesisEvent, handle Handler[events.KinesisEventRecord, W], opts Options[events.KinesisEventRecord]) (events.KinesisEventResponse, Summary) {
	src := source[events.KinesisEventRecord]{
		route:   "kinesis",
		ordered: true,
		id:      func(r events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber },
		key:     func(r events.KinesisEventRecord) string { return r.EventID },
		payload: func(r events.KinesisEventRecord) []byte { return canonical(r.Kinesis.Data) },
	}
	failed, sum := run(ctx, flow, event.Records, handle, opts, src)
	resp := events.KinesisEventResponse{BatchItemFailures: make([]events.KinesisBatchItemFailure, len(failed))}
	for i, id := range failed {
		resp.BatchItemFailures[i].ItemIdentifier = id
	}
	return resp, sum
}

// DynamoDB runs each record of a DynamoDB stream's event through flow
// under its key, and answers the records that failed in BatchItemFailures
// by their sequence number. The default key is the event id.
func DynamoDB[W any](ctx context.Context, flow *idempotency.Flow[W], event events.DynamoDBEvent, handle Handler[events.DynamoDBEventRecord, W], opts Options[events.DynamoDBEventRecord]) (events.DynamoDBEventResponse, Summary) {
	src := source[events.DynamoDBEventRecord]{
		route:   "dynamodb",
		ordered: true,
		id:      func(r events.DynamoDBEventRecord) string { return r.Change.SequenceNumber },
		payload: changePayload,
	}
	failed, sum := run(ctx, flow, event.Records, handle, opts, src)
	resp := events.DynamoDBEventResponse{BatchItemFailures: make([]events.DynamoDBBatchItemFailure, len(failed))}
	for i, id := range failed {
		resp.BatchItemFailures[i].ItemIdentifier = id
	}
	return resp, sum
}

// source is what differs between event sources.
type source[R any] struct {
	route   string
	ordered bool           // OrderBySource is InOrder
	id      func(R) string // the item identifier
	key     func(R) string // the default key; nil is id
	payload func(R) []byte // the default payload
}

// run is the loop every source shares; it returns the item identifiers to
// report.
func run[R, W any](ctx context.Context, flow *idempotency.Flow[W], records []R, handle Handler[R, W], opts Options[R], src source[R]) ([]string, Summary) {
	inOrder := opts.Order == InOrder || opts.Order == OrderBySource && src.ordered
	sum := Summary{Records: len(records), Outcomes: map[idempotency.Outcome]int{}}
	var failed []string
	for i, rec := range records {
		id := src.id(rec)
		if inOrder && len(sum.Failures) > 0 {
			sum.Skipped++
			failed = append(failed, id)
			continue
		}
		res, err := one(ctx, flow, rec, handle, opts, src)
		if res.Outcome != "" {
			sum.Outcomes[res.Outcome]++
		}
		if res.FromCache {
			sum.FromCache++
		}
		switch {
		case err != nil && res.Outcome == "":
			sum.Errors++
		case err == nil && res.Outcome == idempotency.KeyReused:
			err = errKeyReused
		case err == nil && res.Outcome == idempotency.WriteRejected:
			err = &idempotency.WriteConditionError{Refusals: res.Refusals}
		}
		if err != nil {
			sum.Failures = append(sum.Failures, Failure{Index: i, ItemIdentifier: id, Outcome: res.Outcome, Err: err})
			failed = append(failed, id)
		}
	}
	sum.Failed = len(failed)
	return failed, sum
}

// one runs a record through the flow.
func one[R, W any](ctx context.Context, flow *idempotency.Flow[W], rec R, handle Handler[R, W], opts Options[R], src source[R]) (idempotency.Result, error) {
	req := idempotency.Request{UserID: DefaultCaller, Method: "BATCH", Route: src.route}
	var err error
	switch {
	case opts.Key != nil:
		req.Key, err = opts.Key(rec)
	case src.key != nil:
		req.Key = src.key(rec)
	default:
		req.Key = src.id(rec)
	}
	if err != nil {
		return idempotency.Result{}, fmt.Errorf("batch: key: %w", err)
	}
	if req.Key == "" {
		return idempotency.Result{}, errNoKey
	}
	if opts.Caller != nil {
		if req.UserID, err = opts.Caller(rec); err != nil {
			return idempotency.Result{}, fmt.Errorf("batch: caller: %w", err)
		}
		if req.UserID == "" {
			return idempotency.Result{}, errNoCaller
		}
	}
	if opts.Payload != nil {
		req.CanonicalBody = opts.Payload(rec)
	} else {
		req.CanonicalBody = src.payload(rec)
	}
	return flow.Do(ctx, req, func(ctx context.Context, now time.Time) (idempotency.Execution[W], error) {
		return handle(ctx, rec, now)
	})
}

// canonical is b's RFC 8785 form if it is I-JSON, b itself otherwise
// (which is then no JSON, so no canonical form is equal to it).
func canonical(b []byte) []byte {
	if c, err := idempotency.Canonicalize(b); err == nil {
		return c
	}
	return b
}

// changePayload is a stream record's change as JSON: what was done to
// which item, without the record's own sequence number, size or time.
func changePayload(r events.DynamoDBEventRecord) []byte {
	b, err := json.Marshal(struct {
		EventName string                                   `json:"eventName"`
		Keys      map[string]events.DynamoDBAttributeValue `json:"keys,omitempty"`
		NewImage  map[string]events.DynamoDBAttributeValue `json:"newImage,omitempty"`
		OldImage  map[string]events.DynamoDBAttributeValue `json:"oldImage,omitempty"`
	}{r.EventName, r.Change.Keys, r.Change.NewImage, r.Change.OldImage})
	if err != nil {
		return nil // an attribute value of no type: a record Lambda never sends
	}
	return canonical(b)
}
