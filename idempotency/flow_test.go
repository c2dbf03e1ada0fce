package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
)

// fixture is a ledger on a real backend and an executor that writes one
// marker item per execution into the events table, conditioned on being new.
type fixture struct {
	b      *ddbtest.Backend
	ledger *idempotency.Flow[types.TransactWriteItem]
	store  *dynamodbstore.Store
	runs   atomic.Int64
}

func newFixture(t *testing.T) *fixture {
	b := ddbtest.Start(t)
	store := b.Ledger()
	return &fixture{b: b, store: store, ledger: idempotency.NewFlow(store, idempotency.Options{Retention: time.Hour})}
}

// executor answers 201 with body and writes the marker item id.
func (f *fixture) executor(id, body string) idempotency.Executor[types.TransactWriteItem] {
	return func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
		f.runs.Add(1)
		return idempotency.Execution[types.TransactWriteItem]{
			Response: idempotency.Response{StatusCode: 201, Body: []byte(body)},
			Writes: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String(f.b.Tables.Events),
				Item: map[string]types.AttributeValue{
					"user_id": &types.AttributeValueMemberS{Value: "u"}, "event_id": &types.AttributeValueMemberS{Value: id},
					"received_key": &types.AttributeValueMemberS{Value: id},
				},
				ConditionExpression: aws.String("attribute_not_exists(event_id)"),
			}}},
		}, nil
	}
}

func (f *fixture) markers(t *testing.T) int {
	out, err := f.b.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.b.Tables.Events)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

func request(user, key, body string) idempotency.Request {
	c, err := idempotency.Canonicalize([]byte(body))
	if err != nil {
		panic(err)
	}
	return idempotency.Request{UserID: user, Key: key, Method: "POST", Route: "/r", CanonicalBody: c}
}

func TestFreshThenReplay(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := uuid.NewString()
	first, err := f.ledger.Do(ctx, request("alice", key, `{"a":1,"b":2}`), f.executor("e1", `{"id":"e1"}`))
	if err != nil || first.Outcome != idempotency.Executed || first.StatusCode != 201 {
		t.Fatalf("first = %+v, %v", first, err)
	}
	again, err := f.ledger.Do(ctx, request("alice", key, ` { "b" : 2, "a" : 1 } `), f.executor("e2", `{"id":"e2"}`))
	if err != nil || again.Outcome != idempotency.Replayed || !again.Replayed() {
		t.Fatalf("again = %+v, %v", again, err)
	}
	if again.StatusCode != 201 || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("replay answered %d %s, want 201 %s", again.StatusCode, again.Body, first.Body)
	}
	if n := f.markers(t); n != 1 {
		t.Fatalf("%d business writes committed, want 1", n)
	}
	rec, found, err := f.store.Get(ctx, "alice", key)
	if err != nil || !found {
		t.Fatalf("record: %v %v", found, err)
	}
	if want, _ := idempotency.PayloadHash([]byte(`{"a":1,"b":2}`)); rec.PayloadHash != want || rec.StatusCode != 201 || rec.Method != "POST" || rec.Route != "/r" {
		t.Fatalf("record = %+v", rec)
	}
	if d := rec.ExpiresAt.Sub(rec.CreatedAt); d < time.Hour-time.Second || d > time.Hour {
		t.Fatalf("record expires %v after creation, want the retention of 1h", d)
	}
}

func TestKnownKeyWithOtherRequestIs409(t *testing.T) {
	tests := []struct {
		name   string
		change func(*idempotency.Request)
	}{
		{"other body", func(r *idempotency.Request) { r.CanonicalBody = []byte(`{"a":2}`) }},
		{"other method", func(r *idempotency.Request) { r.Method = "PUT" }},
		{"other route", func(r *idempotency.Request) { r.Route = "/other" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			key := uuid.NewString()
			if _, err := f.ledger.Do(context.Background(), request("alice", key, `{"a":1}`), f.executor("e1", `{}`)); err != nil {
				t.Fatal(err)
			}
			req := request("alice", key, `{"a":1}`)
			tt.change(&req)
			res, err := f.ledger.Do(context.Background(), req, f.executor("e2", `{}`))
			if err != nil || res.Outcome != idempotency.KeyReused || res.Body != nil {
				t.Fatalf("got %+v %s, %v", res, res.Body, err)
			}
			if n := f.markers(t); n != 1 {
				t.Fatalf("%d business writes, want 1", n)
			}
		})
	}
}

func TestExpiredRecordIsReplacedBeforeTTLDeletesIt(t *testing.T) {
	f := newFixture(t)
	key := uuid.NewString()
	if _, err := f.ledger.Do(context.Background(), request("alice", key, `{"a":1}`), f.executor("e1", `{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	later := idempotency.NewFlow(f.store, idempotency.Options{Retention: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	res, err := later.Do(context.Background(), request("alice", key, `{"a":2}`), f.executor("e2", `{"v":2}`))
	if err != nil || res.Outcome != idempotency.Executed || string(res.Body) != `{"v":2}` {
		t.Fatalf("after expiry got %+v %s, %v; want a fresh execution", res, res.Body, err)
	}
}

func TestFailedBusinessConditionRecordsNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.ledger.Do(ctx, request("alice", uuid.NewString(), `{"a":1}`), f.executor("same", `{}`)); err != nil {
		t.Fatal(err)
	}
	key := uuid.NewString()
	res, err := f.ledger.Do(ctx, request("alice", key, `{"a":2}`), f.executor("same", `{}`))
	if err != nil || res.Outcome != idempotency.WriteRejected || len(res.Refusals) != 1 || res.Refusals[0].Index != 0 || res.Body != nil {
		t.Fatalf("got %+v, %v", res, err)
	}
	if _, found, err := f.store.Get(ctx, "alice", key); err != nil || found {
		t.Fatalf("a ledger record was left for the rejected request (found=%v, err=%v)", found, err)
	}
}

func TestTransactionConflictIsRetriedThenResolved(t *testing.T) {
	f := newFixture(t)
	key := uuid.NewString()
	fault := f.b.Transport.Inject(ddbtest.Fault{
		Op: "TransactWriteItems", Kind: ddbtest.ServiceError, Status: http.StatusBadRequest, Times: 2,
		Code: "TransactionCanceledException", Reasons: []string{"TransactionConflict", "None"},
	})
	res, err := f.ledger.Do(context.Background(), request("alice", key, `{"a":1}`), f.executor("e1", `{}`))
	if err != nil || res.Outcome != idempotency.Executed {
		t.Fatalf("got %+v, %v", res, err)
	}
	if fault.Fired() != 2 || f.runs.Load() != 1 {
		t.Fatalf("conflicts injected %d, executor ran %d times; want 2 and 1", fault.Fired(), f.runs.Load())
	}
}

func TestEndlessConflictIsBusyAndRecordsNothing(t *testing.T) {
	f := newFixture(t)
	key := uuid.NewString()
	f.b.Transport.Inject(ddbtest.Fault{
		Op: "TransactWriteItems", Kind: ddbtest.ServiceError, Status: http.StatusBadRequest, Times: 1000,
		Code: "TransactionCanceledException", Reasons: []string{"TransactionConflict", "None"},
	})
	_, err := f.ledger.Do(context.Background(), request("alice", key, `{"a":1}`), f.executor("e1", `{}`))
	if !errors.Is(err, idempotency.ErrBusy) {
		t.Fatalf("err = %v, want ErrBusy", err)
	}
	f.b.Transport.Reset()
	if _, found, _ := f.store.Get(context.Background(), "alice", key); found || f.markers(t) != 0 {
		t.Fatal("something was written")
	}
}

func TestOverTransactionLimitsSendsNothing(t *testing.T) {
	f := newFixture(t)
	tooMany := func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
		writes := make([]types.TransactWriteItem, dynamodbstore.MaxTransactionActions)
		for i := range writes {
			writes[i] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String(f.b.Tables.Events), Item: map[string]types.AttributeValue{
				"user_id": &types.AttributeValueMemberS{Value: "u"}, "event_id": &types.AttributeValueMemberS{Value: fmt.Sprint(i)},
			}}}
		}
		return idempotency.Execution[types.TransactWriteItem]{Response: idempotency.Response{StatusCode: 201}, Writes: writes}, nil
	}
	bigItem := func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
		return idempotency.Execution[types.TransactWriteItem]{Response: idempotency.Response{StatusCode: 201}, Writes: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(f.b.Tables.Events), Item: map[string]types.AttributeValue{
				"user_id": &types.AttributeValueMemberS{Value: "u"}, "event_id": &types.AttributeValueMemberS{Value: "x"},
				"blob": &types.AttributeValueMemberS{Value: strings.Repeat("x", dynamodbstore.MaxItemBytes)},
			}}}}}, nil
	}
	for name, exec := range map[string]idempotency.Executor[types.TransactWriteItem]{"101 actions": tooMany, "item over 400 KB": bigItem} {
		t.Run(name, func(t *testing.T) {
			f.b.Transport.Reset()
			_, err := f.ledger.Do(context.Background(), request("alice", uuid.NewString(), `{}`), exec)
			if !errors.Is(err, idempotency.ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if n := f.b.Transport.Total(); n != 0 {
				t.Fatalf("%d calls sent, want 0", n)
			}
		})
	}
}
