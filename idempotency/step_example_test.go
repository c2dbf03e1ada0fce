package idempotency_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
)

// A mutation that charges a card before it answers with the charge's id:
// the charge is a step. Its result is recorded before the mutation goes
// on, so that a retry after a crash resumes with it instead of charging
// again; a charge cut off mid-call is sent again with the same key, which
// the payment provider dedupes on.
func ExampleStep() {
	ctx := context.Background()
	srv := dynamotest.NewServer()
	defer srv.Close()
	client := dynamotest.NewClient(srv.URL, nil)
	if err := dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput("payments-ledger"), nil); err != nil {
		log.Fatal(err)
	}
	flow := dynamodbstore.NewFlow(client, "payments-ledger", idempotency.Options{})

	charges := map[string]string{} // the provider's own dedupe, by key
	charge := func(_ context.Context, key string) ([]byte, error) {
		if _, ok := charges[key]; !ok {
			charges[key] = fmt.Sprintf("ch_%d", len(charges)+1)
		}
		return []byte(charges[key]), nil
	}
	pay := func(key string) {
		req := idempotency.Request{UserID: "ada", Key: key, Method: "POST", Route: "/payments", CanonicalBody: []byte(`{"amount":1200}`)}
		res, err := flow.Do(ctx, req, func(ctx context.Context, _ time.Time) (dynamodbstore.Execution, error) {
			id, err := idempotency.Step(ctx, "charge", charge)
			if err != nil {
				return dynamodbstore.Execution{}, err
			}
			return dynamodbstore.Execution{Response: idempotency.Response{StatusCode: 201, Body: []byte(`{"charge":"` + string(id) + `"}`)}}, nil
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Outcome, string(res.Body))
	}
	pay("8e03978e-40d5-43e8-bc93-6894a57f9324")
	pay("8e03978e-40d5-43e8-bc93-6894a57f9324") // a retry: replayed, not charged again
	pay("0b9a3c55-2d1e-4f6a-8b7c-9d0e1f2a3b4c") // another payment
	fmt.Println(len(charges), "charges")
	// Output:
	// executed {"charge":"ch_1"}
	// replayed {"charge":"ch_1"}
	// executed {"charge":"ch_2"}
	// 2 charges
}
