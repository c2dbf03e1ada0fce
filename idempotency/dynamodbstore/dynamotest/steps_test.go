package dynamotest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// A payments service, as a team writes it: POST /payments charges a card
// with a payment provider, then stores the payment and answers with the
// provider's charge id. The charge is a step: its result is recorded
// before the mutation goes on, and a retry resumes after it.

// provider is the payment provider: it dedupes charges on the
// idempotency key it is sent, as Stripe does, and counts the calls.
type provider struct {
	mu      sync.Mutex
	charges map[string]string // key → charge id
	calls   int
	hold    chan struct{} // if set, each charge waits for it
}

func (p *provider) charge(key string) string {
	if p.hold != nil {
		<-p.hold
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.charges == nil {
		p.charges = map[string]string{}
	}
	if id, ok := p.charges[key]; ok {
		return id
	}
	id := fmt.Sprintf("ch_%d", len(p.charges)+1)
	p.charges[key] = id
	return id
}

type payments struct {
	b        *dynamotest.Backend
	ledger   string
	table    string
	provider *provider
	clock    *clock
	crashAt  atomic.Value // string: where the next request stops
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// stopped is the process stopping mid-request.
type stopped struct{ at string }

func newPayments(t *testing.T) *payments {
	b := dynamotest.Start(t)
	p := &payments{b: b, ledger: b.LedgerTable(t), table: b.CreateTable(t, tasksTable("payments"), nil), provider: &provider{}, clock: &clock{now: time.Now().UTC()}}
	p.crashAt.Store("")
	return p
}

func (p *payments) stop(at string) {
	if p.crashAt.Load() == at {
		p.crashAt.Store("")
		panic(stopped{at})
	}
}

// env is one execution environment.
func (p *payments) env() func(key, id string) (resp events.APIGatewayV2HTTPResponse, crashed bool) {
	runner := dynamodbstore.NewRunner(p.b.Client, p.ledger,
		idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20), Now: p.clock.Now, Lease: 10 * time.Second}, mutation.Options{})
	pay := func(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
		var in struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r.Body, &in); err != nil || in.ID == "" {
			return dynamodbstore.Plan{}, errcode.Invalid("id is required", errcode.Field{Field: "id"})
		}
		return dynamodbstore.Plan{Execute: func(ctx context.Context, _ time.Time) (dynamodbstore.Execution, error) {
			charge, err := idempotency.Step(ctx, "card.charge", func(_ context.Context, key string) ([]byte, error) {
				p.stop("before the call")
				id := p.provider.charge(key)
				p.stop("after the call")
				return []byte(id), nil
			})
			if err != nil {
				return dynamodbstore.Execution{}, err
			}
			p.stop("after the step")
			return dynamodbstore.Execution{
				Response: idempotency.Response{StatusCode: http.StatusCreated, Body: []byte(`{"id":"` + in.ID + `","charge":"` + string(charge) + `"}`)},
				Writes: []dynamodbstore.Write{{Put: &types.Put{TableName: aws.String(p.table), Item: map[string]types.AttributeValue{
					"id": &types.AttributeValueMemberS{Value: in.ID}, "charge": &types.AttributeValueMemberS{Value: string(charge)},
				}, ConditionExpression: aws.String("attribute_not_exists(id)")}}},
			}, nil
		}}, nil
	}
	h := runner.HTTPAPI(pay, nil)
	return func(key, id string) (resp events.APIGatewayV2HTTPResponse, crashed bool) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopped); !ok {
					panic(r)
				}
				crashed = true
			}
		}()
		e := events.APIGatewayV2HTTPRequest{RouteKey: "POST /payments", RawPath: "/payments", Body: `{"id":"` + id + `"}`,
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": key}}
		e.RequestContext.HTTP.Method = http.MethodPost
		e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
		}
		resp, err := h(context.Background(), e)
		if err != nil {
			panic(err)
		}
		return resp, false
	}
}

func (p *payments) stored(t *testing.T) int32 {
	out, err := p.b.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(p.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

// The crash matrix of a step: the process stops before the charge's call,
// after it (before its result is recorded), after it is recorded (before
// the commit), or the commit's answer is lost. A retry from a fresh
// environment while the stopped one's lease holds is 409 in progress; once
// it passes, the retry resumes after the last recorded step. One charge
// downstream, one payment stored, and every answer the same.
func TestAStepRunsOnceThroughCrashes(t *testing.T) {
	cases := []struct {
		at        string
		calls     int  // the provider's calls in all
		leaseHeld bool // the stopped process left its lease
	}{
		{"before the call", 1, true},
		{"after the call", 2, true}, // the call is made again, with the same key
		{"after the step", 1, true},
		{"answer lost", 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.at, func(t *testing.T) {
			p := newPayments(t)
			key, id := uuid.NewString(), uuid.NewString()
			if tc.at == "answer lost" {
				p.b.Transport.LoseAnswers("TransactWriteItems", 3)
				if got, _ := p.env()(key, id); got.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("the lost answer: %d %s", got.StatusCode, got.Body)
				}
				p.b.Transport.Reset()
			} else {
				p.crashAt.Store(tc.at)
				if _, crashed := p.env()(key, id); !crashed {
					t.Fatal("the process did not stop")
				}
			}
			if tc.leaseHeld {
				got, _ := p.env()(key, id)
				if got.StatusCode != http.StatusConflict || got.Headers["Retry-After"] == "" ||
					got.Body != `{"error":"IDEMPOTENCY_KEY_IN_PROGRESS","message":"A request with this Idempotency-Key is still being processed; retry after the time in Retry-After"}` {
					t.Fatalf("a retry while the lease holds: %d %v %s", got.StatusCode, got.Headers, got.Body)
				}
				p.clock.Add(11 * time.Second) // the lease passes
			}
			first, crashed := p.env()(key, id)
			if crashed || first.StatusCode != http.StatusCreated || first.Body != `{"id":"`+id+`","charge":"ch_1"}` {
				t.Fatalf("the retry: %d %s", first.StatusCode, first.Body)
			}
			again, _ := p.env()(key, id)
			if again.Body != first.Body || again.Headers[mutation.ReplayedHeader] != "true" {
				t.Fatalf("a later retry: %d %v %s", again.StatusCode, again.Headers, again.Body)
			}
			if len(p.provider.charges) != 1 || p.provider.calls != tc.calls {
				t.Errorf("%d charges in %d calls, want 1 in %d", len(p.provider.charges), p.provider.calls, tc.calls)
			}
			if n := p.stored(t); n != 1 {
				t.Errorf("%d payments stored, want 1", n)
			}
		})
	}
}

// Sixteen duplicates over four environments while the charge is under
// way: one runs it, the fifteen others get 409 in progress at once, and
// once it is stored every one of them gets its answer replayed.
func TestDuplicatesDuringAStepAreInProgress(t *testing.T) {
	p := newPayments(t)
	p.provider.hold = make(chan struct{})
	envs := []func(string, string) (events.APIGatewayV2HTTPResponse, bool){p.env(), p.env(), p.env(), p.env()}
	key, id := uuid.NewString(), uuid.NewString()
	answers := make(chan events.APIGatewayV2HTTPResponse, 16)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := envs[i%4](key, id)
			answers <- resp
		}()
	}
	inProgress := 0
	for inProgress < 15 {
		a := <-answers
		if a.StatusCode != http.StatusConflict || a.Headers["Retry-After"] == "" {
			t.Fatalf("a duplicate during the step: %d %s", a.StatusCode, a.Body)
		}
		inProgress++
	}
	close(p.provider.hold)
	wg.Wait()
	first := <-answers
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("the one that ran: %d %s", first.StatusCode, first.Body)
	}
	for i := range 16 {
		if got, _ := envs[i%4](key, id); got.Body != first.Body || got.Headers[mutation.ReplayedHeader] != "true" {
			t.Errorf("retry %d: %d %s", i, got.StatusCode, got.Body)
		}
	}
	if p.provider.calls != 1 || p.stored(t) != 1 {
		t.Errorf("%d calls to the provider, %d payments, want 1 and 1", p.provider.calls, p.stored(t))
	}
}

// What a step costs: the lease (one PutItem), the step's record (one
// UpdateItem), and the commit; a mutation without steps keeps its one
// call.
func TestAStepsCalls(t *testing.T) {
	p := newPayments(t)
	p.b.Transport.Reset()
	if got, _ := p.env()(uuid.NewString(), uuid.NewString()); got.StatusCode != http.StatusCreated {
		t.Fatal(got.Body)
	}
	if calls := p.b.Transport.Calls(); !sameCalls(calls, map[string]int{"PutItem": 1, "UpdateItem": 1, "TransactWriteItems": 1}) {
		t.Errorf("calls %v", calls)
	}
}

// A mutation whose writes are refused after its step records nothing and
// releases its lease: the client's retry is not kept waiting, and resumes
// with the step's recorded result instead of calling again.
func TestARefusedCommitReleasesTheLease(t *testing.T) {
	p := newPayments(t)
	id := uuid.NewString()
	if got, _ := p.env()(uuid.NewString(), id); got.StatusCode != http.StatusCreated {
		t.Fatal(got.Body)
	}
	key := uuid.NewString() // another payment under the same id: its Put is refused
	for attempt := range 2 {
		got, _ := p.env()(key, id)
		if got.StatusCode != http.StatusConflict || got.Body != `{"error":"CONFLICT","message":"The mutation conflicts with what is stored; nothing was stored"}` {
			t.Fatalf("attempt %d: %d %s", attempt+1, got.StatusCode, got.Body)
		}
	}
	if p.provider.calls != 2 {
		t.Errorf("%d calls to the provider, want 2: the retry resumed with the recorded charge", p.provider.calls)
	}
}
