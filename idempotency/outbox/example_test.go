package outbox_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/idempotency/outbox"
)

// A sign-up that sends a welcome e-mail: the e-mail is an effect of the
// mutation, committed with its record and sent after the commit under a
// key the mail service dedupes on. Deployed, the ledger table's stream
// calls Outbox.Stream; here, as in a local server, the flow hands each
// commit to Outbox.Committed.
func Example() {
	ctx := context.Background()
	srv := dynamotest.NewServer()
	defer srv.Close()
	client := dynamotest.NewClient(srv.URL, nil)
	if err := dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput("ledger"), nil); err != nil {
		log.Fatal(err)
	}

	sent := map[string]bool{} // the mail service's own dedupe, by key
	box := outbox.New(dynamodbstore.New(client, "ledger"), map[string]outbox.Deliverer{
		"email": func(_ context.Context, d outbox.Delivery) error {
			if !sent[d.Key] {
				sent[d.Key] = true
				fmt.Printf("mail %s (attempt %d)\n", d.Payload, d.Attempt)
			}
			return nil
		},
	}, outbox.Options{})
	flow := dynamodbstore.NewFlow(client, "ledger", idempotency.Options{Committed: box.Committed})

	signUp := func(key string) {
		body := []byte(`{"email":"ada@example.com"}`)
		req := idempotency.Request{UserID: "ada", Key: key, Method: "POST", Route: "/signups", CanonicalBody: body}
		res, err := flow.Do(ctx, req, func(context.Context, time.Time) (dynamodbstore.Execution, error) {
			return dynamodbstore.Execution{
				Response: idempotency.Response{StatusCode: 201, Body: []byte(`{}`)},
				Effects:  []idempotency.Effect{{Name: "welcome", Kind: "email", Payload: []byte(`{"to":"ada@example.com"}`)}},
			}, nil
		})
		if err != nil {
			log.Fatal(err)
		}
		box.Wait() // a test's or a local server's: delivery runs in the background
		fmt.Println(res.Outcome, res.StatusCode)
	}
	signUp("8e03978e-40d5-43e8-bc93-6894a57f9324")
	signUp("8e03978e-40d5-43e8-bc93-6894a57f9324") // a retry: replayed, no second e-mail

	rec, _, _ := dynamodbstore.New(client, "ledger").Get(ctx, "ada", "8e03978e-40d5-43e8-bc93-6894a57f9324")
	fmt.Println(rec.Effects[0].Name, rec.Effects[0].Status)
	// Output:
	// mail {"to":"ada@example.com"} (attempt 1)
	// executed 201
	// replayed 201
	// welcome delivered
}
