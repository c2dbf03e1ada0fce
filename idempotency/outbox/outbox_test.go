package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/idempotency/outbox"
)

// downstream is a payment API and a mail service in one: it dedupes on
// the key it is sent, as Stripe does on Idempotency-Key, and counts what
// it was asked and what it did.
type downstream struct {
	mu    sync.Mutex
	done  map[string]string // key → the effect's name
	calls int
	fail  bool
}

func (d *downstream) do(key, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.fail {
		return errors.New("card declined by the test")
	}
	if d.done == nil {
		d.done = map[string]string{}
	}
	d.done[key] = name
	return nil
}

// did is how many times each effect was carried out downstream.
func (d *downstream) did() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for _, name := range d.done {
		out[name]++
	}
	return out
}

// crash is the process stopping at a point of the flow.
type crash struct{ at string }

// point names where a crash may be planted.
type point struct {
	where  string // "before call", "after call", "before record", "after record"
	effect string // which effect's
}

type shop struct {
	b      *dynamotest.Backend
	ledger string
	orders string
	down   *downstream
	plant  *point // where the next delivery crashes, nil for none
}

func newShop(t *testing.T) *shop {
	b := dynamotest.Start(t)
	orders := b.CreateTable(t, &dynamodb.CreateTableInput{
		TableName: aws.String("orders"), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	}, nil)
	return &shop{b: b, ledger: b.LedgerTable(t), orders: orders, down: &downstream{}}
}

// place is POST /orders: the order's item, a charge and a receipt.
func (s *shop) place(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
	id := string(r.Body[len(`{"id":"`) : len(r.Body)-2])
	return dynamodbstore.Plan{
		Status: http.StatusCreated, Body: map[string]string{"id": id},
		Writes: []dynamodbstore.Write{{Put: &types.Put{TableName: aws.String(s.orders), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id},
		}, ConditionExpression: aws.String("attribute_not_exists(id)")}}},
		Effects: []idempotency.Effect{
			{Name: "charge", Kind: "payment", Payload: []byte(`{"amount":1200}`)},
			{Name: "receipt.sent", Kind: "email", Payload: []byte(`{"to":"buyer"}`)},
		},
	}, nil
}

// env is one execution environment; committed, if set, delivers in it.
func (s *shop) env(committed func(context.Context, idempotency.Record)) func(key, id string) events.APIGatewayV2HTTPResponse {
	runner := dynamodbstore.NewRunner(s.b.Client, s.ledger, idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20), Committed: committed}, mutation.Options{})
	h := runner.HTTPAPI(s.place, nil)
	return func(key, id string) events.APIGatewayV2HTTPResponse {
		e := events.APIGatewayV2HTTPRequest{RouteKey: "POST /orders", RawPath: "/orders", Body: `{"id":"` + id + `"}`,
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": key}}
		e.RequestContext.HTTP.Method = http.MethodPost
		e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
		}
		resp, err := h(context.Background(), e)
		if err != nil {
			panic(err)
		}
		return resp
	}
}

// stop panics with crash if p is the planted point.
func (s *shop) stop(p point) {
	if s.plant != nil && *s.plant == p {
		s.plant = nil
		panic(crash{p.where + " of " + p.effect})
	}
}

// outbox is a fresh process's outbox, with the crash points planted in
// its deliverers and in its ledger.
func (s *shop) outbox() *outbox.Outbox {
	deliver := func(_ context.Context, d outbox.Delivery) error {
		s.stop(point{"before call", d.Name})
		err := s.down.do(d.Key, d.Name)
		s.stop(point{"after call", d.Name})
		return err
	}
	return outbox.New(crashingLedger{dynamodbstore.New(s.b.Client, s.ledger), s}, map[string]outbox.Deliverer{"payment": deliver, "email": deliver}, outbox.Options{Backoff: 1})
}

type crashingLedger struct {
	*dynamodbstore.Store
	s *shop
}

func (l crashingLedger) SetEffect(ctx context.Context, userID, key string, i int, st idempotency.EffectState) error {
	l.s.stop(point{"before record", st.Name})
	err := l.Store.SetEffect(ctx, userID, key, i, st)
	l.s.stop(point{"after record", st.Name})
	return err
}

// deliver runs a delivery as a process does that may stop: a crash ends
// it where it stands.
func (s *shop) deliver(t *testing.T, key string) (crashed bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	if err := s.outbox().Deliver(context.Background(), "alice", key); err != nil {
		t.Fatal(err)
	}
	return false
}

func (s *shop) record(t *testing.T, key string) idempotency.Record {
	rec, found, err := dynamodbstore.New(s.b.Client, s.ledger).Get(context.Background(), "alice", key)
	if err != nil || !found {
		t.Fatalf("record: %v %v", found, err)
	}
	return rec
}

// The crash matrix: the process stops at each point of the flow in turn
// (the commit's answer lost; before and after each effect's outside call;
// before and after its outcome is recorded), then the request is retried
// from a fresh environment and the delivery run again, as the stream's
// retry does. Each effect happened once downstream, the order was written
// once, and every answer is the first one.
func TestEveryEffectHappensOnceThroughCrashes(t *testing.T) {
	var points []*point
	points = append(points, nil) // no crash: the answer lost alone
	for _, effect := range []string{"charge", "receipt.sent"} {
		for _, where := range []string{"before call", "after call", "before record", "after record"} {
			points = append(points, &point{where, effect})
		}
	}
	for _, p := range points {
		name := "answer lost"
		if p != nil {
			name = p.where + " of " + p.effect
		}
		t.Run(name, func(t *testing.T) {
			s := newShop(t)
			key, id := uuid.NewString(), uuid.NewString()
			s.b.Transport.LoseAnswers("TransactWriteItems", 3)
			if got := s.env(nil)(key, id); got.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("the lost answer: %d %s", got.StatusCode, got.Body)
			}
			s.b.Transport.Reset()
			s.plant = p
			if crashed := s.deliver(t, key); crashed != (p != nil) {
				t.Fatalf("crashed %v at %v", crashed, p)
			}
			retry := s.env(nil)(key, id) // a fresh environment
			if retry.StatusCode != http.StatusCreated || retry.Body != `{"id":"`+id+`"}` || retry.Headers[mutation.ReplayedHeader] != "true" {
				t.Fatalf("the retry: %d %v %s", retry.StatusCode, retry.Headers, retry.Body)
			}
			if s.deliver(t, key) {
				t.Fatal("crashed with nothing planted")
			}
			if did := s.down.did(); did["charge"] != 1 || did["receipt.sent"] != 1 || len(did) != 2 {
				t.Errorf("downstream did %v, want each effect once", did)
			}
			for _, st := range s.record(t, key).Effects {
				if st.Status != idempotency.EffectDelivered {
					t.Errorf("effect %s is %s (%s)", st.Name, st.Status, st.Reason)
				}
			}
			out, err := s.b.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.orders), ConsistentRead: aws.Bool(true)})
			if err != nil || out.Count != 1 {
				t.Errorf("%d orders, want 1 (%v)", out.Count, err)
			}
		})
	}
}

// In a local server the outbox delivers in the process as each mutation
// commits: the request itself makes one DynamoDB call, and a replay
// delivers nothing again.
func TestEffectsAreDeliveredInTheProcessAfterTheCommit(t *testing.T) {
	s := newShop(t)
	box := s.outbox()
	var path map[string]int
	env := s.env(func(ctx context.Context, rec idempotency.Record) {
		path = s.b.Transport.Calls() // what the request made, before delivery
		box.Committed(ctx, rec)
	})
	key, id := uuid.NewString(), uuid.NewString()
	first := env(key, id)
	box.Wait()
	if fmt.Sprint(path) != "map[TransactWriteItems:1]" {
		t.Errorf("the request's calls: %v, want one TransactWriteItems", path)
	}
	if again := env(key, id); again.Body != first.Body || again.StatusCode != first.StatusCode {
		t.Fatalf("replay %d %s, first %d %s", again.StatusCode, again.Body, first.StatusCode, first.Body)
	}
	box.Wait()
	if did := s.down.did(); did["charge"] != 1 || did["receipt.sent"] != 1 || s.down.calls != 2 {
		t.Errorf("downstream did %v in %d calls, want each effect once in 2", did, s.down.calls)
	}
}

// An effect that keeps failing is marked failed with its reason after its
// attempts; the mutation's answer stays what it was.
func TestAFailingEffectIsMarkedFailedAndTheAnswerStands(t *testing.T) {
	s := newShop(t)
	s.down.fail = true
	key, id := uuid.NewString(), uuid.NewString()
	env := s.env(nil)
	first := env(key, id)
	s.deliver(t, key)
	rec := s.record(t, key)
	for _, st := range rec.Effects {
		if st.Status != idempotency.EffectFailed || st.Attempts != 3 || st.Reason != "card declined by the test" {
			t.Errorf("effect %s: %s after %d attempts (%q)", st.Name, st.Status, st.Attempts, st.Reason)
		}
	}
	if s.down.calls != 6 {
		t.Errorf("%d calls downstream, want 3 for each of 2 effects", s.down.calls)
	}
	s.down.fail = false
	s.deliver(t, key) // a later delivery leaves failed effects alone
	if again := s.env(nil)(key, id); again.StatusCode != first.StatusCode || again.Body != first.Body {
		t.Errorf("the answer after the failures: %d %s, first %d %s", again.StatusCode, again.Body, first.StatusCode, first.Body)
	}
	if len(s.down.did()) != 0 {
		t.Errorf("a failed effect was delivered again: %v", s.down.did())
	}
}

// The stream's handler delivers each inserted record's effects and reports
// a record it could not read, and every record after it, for a retry in
// order.
func TestTheStreamDeliversAndReportsInOrder(t *testing.T) {
	s := newShop(t)
	keys := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	var e events.DynamoDBEvent
	for i, key := range keys {
		if got := s.env(nil)(key, uuid.NewString()); got.StatusCode != http.StatusCreated {
			t.Fatal(got.Body)
		}
		e.Records = append(e.Records, events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
			SequenceNumber: fmt.Sprint(100 + i),
			Keys: map[string]events.DynamoDBAttributeValue{
				"user_id": events.NewStringAttribute("alice"), "key": events.NewStringAttribute(key),
			},
		}})
	}
	resp, err := s.outbox().Stream(context.Background(), e)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v %v", resp, err)
	}
	if did := s.down.did(); did["charge"] != 3 || did["receipt.sent"] != 3 {
		t.Fatalf("downstream did %v", did)
	}
	s.b.Transport.Inject(dynamotest.Fault{Op: "GetItem", Kind: dynamotest.ServiceError, Code: "InternalServerError", Status: 500, Times: 3})
	resp, _ = s.outbox().Stream(context.Background(), e)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if fmt.Sprint(failed) != "[100 101 102]" {
		t.Errorf("reported %v, want the first record and every one after it", failed)
	}
}
