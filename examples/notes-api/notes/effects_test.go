package notes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/outbox"
)

// receiver is a webhook's receiving end: it dedupes on the Idempotency-Key
// header, as a receiver must for an at-least-once sender, and counts the
// requests it got and the events it acted on.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	calls int
	did   map[string]string // Idempotency-Key → the body acted on
	event map[string]string // Idempotency-Key → Webhook-Event
	fail  bool              // answer 500 and act on nothing
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{did: map[string]string{}, event: map[string]string{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		key := req.Header.Get("Idempotency-Key")
		switch {
		case r.fail:
			w.WriteHeader(http.StatusInternalServerError)
		case req.Method != http.MethodPost || key == "" || req.Header.Get("Content-Type") != "application/json":
			w.WriteHeader(http.StatusBadRequest)
		case r.did[key] != "": // a repeated delivery: done already
			w.WriteHeader(http.StatusOK)
		default:
			r.did[key], r.event[key] = string(body), req.Header.Get("Webhook-Event")
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// got is what the receiver did and how many requests it was sent.
func (r *receiver) got() (map[string]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, v := range r.did {
		out[k] = v
	}
	return out, r.calls
}

// withOutbox is the backend's outbox delivering to hook, and an execution
// environment that hands it each commit, as a local server does.
func (b *backend) withOutbox(hook *receiver) (*outbox.Outbox, func() *notes.Service) {
	box := outbox.New(dynamodbstore.New(b.client, b.ledger), map[string]outbox.Deliverer{
		notes.WebhookKind: notes.Webhook(hook.URL),
	}, outbox.Options{Backoff: time.Millisecond})
	env := func() *notes.Service {
		return notes.New(notes.Config{
			Client: b.client, NotesTable: b.notesTable, LedgerTable: b.ledger, CacheBytes: 1 << 20,
			Webhook: true, Committed: box.Committed,
		})
	}
	return box, env
}

// record is the key's ledger record, read as the outbox reads it.
func (b *backend) record(t *testing.T, user, key string) idempotency.Record {
	t.Helper()
	rec, found, err := dynamodbstore.New(b.client, b.ledger).Get(b.ctx, user, key)
	if err != nil || !found {
		t.Fatalf("the record of the key: found %v, %v", found, err)
	}
	return rec
}

// streamEvent is what the ledger table's stream (KEYS_ONLY, filtered to
// INSERT) hands the effects function for the records of keys.
func streamEvent(user string, keys ...string) events.DynamoDBEvent {
	var e events.DynamoDBEvent
	for i, key := range keys {
		e.Records = append(e.Records, events.DynamoDBEventRecord{
			EventName: "INSERT", EventSource: "aws:dynamodb",
			Change: events.DynamoDBStreamRecord{
				StreamViewType: "KEYS_ONLY", SequenceNumber: fmt.Sprint(1000 + i),
				Keys: map[string]events.DynamoDBAttributeValue{
					"user_id": events.NewStringAttribute(user), "key": events.NewStringAttribute(key),
				},
			},
		})
	}
	return e
}

// A note created with the webhook configured: the request makes its one
// TransactWriteItems, the webhook gets the note once under the effect's
// derived key, and the effect is recorded delivered. A retry of the
// request, in the same environment or another, sends nothing new.
func TestNoteCreatedWebhookDeliveredOnce(t *testing.T) {
	b := start(t)
	hook := newReceiver(t)
	box, env := b.withOutbox(hook)
	var path map[string]int
	svc := notes.New(notes.Config{
		Client: b.client, NotesTable: b.notesTable, LedgerTable: b.ledger, CacheBytes: 1 << 20, Webhook: true,
		Committed: func(ctx context.Context, rec idempotency.Record) {
			path, _ = b.calls.snapshot() // the request's calls, before delivery starts
			box.Committed(ctx, rec)
		},
	})
	id, key := uuid.NewString(), uuid.NewString()
	e := request("POST /notes", "", alice, key, createBody(id))

	b.calls.reset()
	first := send(t, svc, e)
	box.Wait()
	if first.status != 201 {
		t.Fatalf("create: %d %s", first.status, first.body)
	}
	if fmt.Sprint(path) != "map[TransactWriteItems:1]" {
		t.Errorf("the request's calls %v, want one TransactWriteItems: the effect adds none", path)
	}
	derived := idempotency.EffectKey(alice, key, notes.NoteCreated)
	did, calls := hook.got()
	hook.mu.Lock()
	event := hook.event[derived]
	hook.mu.Unlock()
	if calls != 1 || len(did) != 1 || did[derived] != first.body || event != notes.NoteCreated {
		t.Fatalf("the webhook got %d requests and did %v (event %q), want the note once under %s", calls, did, event, derived)
	}
	if st := b.record(t, alice, key).Effects; len(st) != 1 || st[0].Status != idempotency.EffectDelivered || st[0].Attempts != 0 {
		t.Errorf("effects on the record %+v, want note.created delivered at the first attempt", st)
	}

	for _, retry := range []*notes.Service{svc, env()} {
		if a := send(t, retry, e); a.status != 201 || a.body != first.body || !a.replayed {
			t.Fatalf("retry: %d %s replayed=%v", a.status, a.body, a.replayed)
		}
	}
	box.Wait()
	if _, calls := hook.got(); calls != 1 {
		t.Errorf("the webhook got %d requests after the retries, want still 1", calls)
	}
}

// Without the webhook configured a note has no effect: its record holds
// none, and nothing is delivered.
func TestNoWebhookNoEffect(t *testing.T) {
	b := start(t)
	id, key := uuid.NewString(), uuid.NewString()
	if a := send(t, b.env(), request("POST /notes", "", alice, key, createBody(id))); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if st := b.record(t, alice, key).Effects; len(st) != 0 {
		t.Errorf("effects %+v, want none", st)
	}
}

// The commit's answer is lost: the client gets the 503 that says the note
// may be stored, and the process, not knowing, delivers nothing. The
// client's retry reaches a fresh environment and gets the 201 replayed;
// the stream's delivery then calls the webhook once, and the stream
// delivering the record again (its retry) calls it no more.
func TestLostCommitAnswerThenStreamDeliversOnce(t *testing.T) {
	b := start(t)
	hook := newReceiver(t)
	box, env := b.withOutbox(hook)
	id, key := uuid.NewString(), uuid.NewString()
	e := request("POST /notes", "", alice, key, createBody(id))

	b.calls.LoseAnswers("TransactWriteItems", 3)
	if a := send(t, env(), e); a.status != 503 || a.body != mayHaveBeenStored {
		t.Fatalf("the lost answer: %d %s, want 503 %s", a.status, a.body, mayHaveBeenStored)
	}
	b.calls.reset()
	retry := send(t, env(), e)
	box.Wait()
	want := fmt.Sprintf(`{"id":%q,"title":"Groceries","body":"milk","version":1}`, id)
	if retry.status != 201 || retry.body != want || !retry.replayed {
		t.Fatalf("the retry: %d %s replayed=%v, want 201 %s replayed", retry.status, retry.body, retry.replayed, want)
	}
	if _, calls := hook.got(); calls != 0 {
		t.Fatalf("the webhook got %d requests before the stream's delivery, want 0", calls)
	}

	for range 2 { // the stream's delivery, then its retry of the same record
		resp, err := box.Stream(context.Background(), streamEvent(alice, key))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("stream: %v %v", resp, err)
		}
	}
	derived := idempotency.EffectKey(alice, key, notes.NoteCreated)
	if did, calls := hook.got(); calls != 1 || did[derived] != want || len(did) != 1 {
		t.Errorf("the webhook got %d requests and did %v, want the note once under %s", calls, did, derived)
	}
	if st := b.record(t, alice, key).Effects; len(st) != 1 || st[0].Status != idempotency.EffectDelivered {
		t.Errorf("effects on the record %+v, want delivered", st)
	}
	if n := countRecords(t, b, key); n != 1 {
		t.Errorf("%d ledger records for the key, want 1", n)
	}
	if got := b.storedNote(t, alice, id); got[notes.VersionAttr] != "1" {
		t.Errorf("note %v, want version 1", got)
	}
}

// A webhook that answers 500: the effect is tried its 3 times and marked
// failed with the reason, the note stays created, and a retry of the
// request gets the first answer and sends nothing.
func TestFailingWebhookMarksTheEffectFailed(t *testing.T) {
	b := start(t)
	hook := newReceiver(t)
	hook.fail = true
	box, env := b.withOutbox(hook)
	id, key := uuid.NewString(), uuid.NewString()
	e := request("POST /notes", "", alice, key, createBody(id))

	first := send(t, env(), e)
	box.Wait()
	if first.status != 201 {
		t.Fatalf("create: %d %s", first.status, first.body)
	}
	st := b.record(t, alice, key).Effects
	if len(st) != 1 || st[0].Status != idempotency.EffectFailed || st[0].Attempts != 3 || st[0].Reason != "webhook answered 500" {
		t.Fatalf("effects on the record %+v, want note.created failed after 3 attempts, webhook answered 500", st)
	}
	if did, calls := hook.got(); calls != 3 || len(did) != 0 {
		t.Errorf("the webhook got %d requests and did %v, want 3 and nothing", calls, did)
	}
	hook.mu.Lock()
	hook.fail = false
	hook.mu.Unlock()
	if a := send(t, env(), e); a.status != first.status || a.body != first.body || !a.replayed {
		t.Errorf("the retry: %d %s replayed=%v, want the first answer", a.status, a.body, a.replayed)
	}
	if resp, err := box.Stream(context.Background(), streamEvent(alice, key)); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	box.Wait()
	if _, calls := hook.got(); calls != 3 {
		t.Errorf("the webhook got %d requests, want still 3: a failed effect is not tried again", calls)
	}
	if got := b.storedNote(t, alice, id); got[notes.VersionAttr] != "1" {
		t.Errorf("note %v, want it stored, version 1", got)
	}
}

// The deliverer alone: a redirect is a failure, not followed; an
// unreachable webhook's failure does not quote the URL, which may hold a
// secret.
func TestWebhookFailuresNameNoURL(t *testing.T) {
	redirect := httptest.NewServer(http.RedirectHandler("https://elsewhere.example/", http.StatusTemporaryRedirect))
	defer redirect.Close()
	d := outbox.Delivery{Key: idempotency.EffectKey(alice, "k", notes.NoteCreated), Effect: idempotency.Effect{Name: notes.NoteCreated, Kind: notes.WebhookKind, Payload: []byte(`{}`)}, Attempt: 1}
	if err := notes.Webhook(redirect.URL+"/hook?token=secret")(context.Background(), d); err == nil || err.Error() != "webhook answered 307" {
		t.Errorf("a redirect: %v, want webhook answered 307", err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	err := notes.Webhook(gone.URL+"/hook?token=secret")(context.Background(), d)
	if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "/hook") {
		t.Errorf("an unreachable webhook: %v, want a failure that does not quote the URL", err)
	}
	if err := notes.Webhook("")(context.Background(), d); err == nil {
		t.Error("no URL: delivered, want a failure")
	}
}

// The redrive of README.md: an event built by hand from a stream's
// records (get-records, through jq) or from a Scan of the ledger's pending
// effects, as JSON, invoked on the effects function: it delivers what is
// pending, once.
func TestRedriveEventsDeliverWhatIsPending(t *testing.T) {
	b := start(t)
	hook := newReceiver(t)
	box, _ := b.withOutbox(hook)
	// An environment that does not deliver: the effects stay pending, as
	// when the stream's mapping gave up on them.
	svc := notes.New(notes.Config{Client: b.client, NotesTable: b.notesTable, LedgerTable: b.ledger, Webhook: true})
	keys := []string{uuid.NewString(), uuid.NewString()}
	for _, key := range keys {
		if a := send(t, svc, request("POST /notes", "", alice, key, createBody(uuid.NewString()))); a.status != 201 {
			t.Fatalf("create: %d %s", a.status, a.body)
		}
	}
	fromStream := fmt.Sprintf(`{"Records":[{"eventName":"INSERT","dynamodb":{"Keys":{"user_id":{"S":%q},"key":{"S":%q}},"SequenceNumber":"4100000000000000000001"}}]}`, alice, keys[0])
	fromScan := fmt.Sprintf(`{"Records":[{"eventName":"INSERT","dynamodb":{"Keys":{"user_id":{"S":%q},"key":{"S":%q}},"SequenceNumber":"0"}},{"eventName":"INSERT","dynamodb":{"Keys":{"user_id":{"S":%q},"key":{"S":%q}},"SequenceNumber":"0"}}]}`, alice, keys[0], alice, keys[1])
	for _, payload := range []string{fromStream, fromScan} {
		var e events.DynamoDBEvent
		if err := json.Unmarshal([]byte(payload), &e); err != nil {
			t.Fatal(err)
		}
		if resp, err := box.Stream(context.Background(), e); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redrive: %v %v", resp, err)
		}
	}
	if did, calls := hook.got(); calls != 2 || len(did) != 2 {
		t.Errorf("the webhook got %d requests and did %d notes, want each note once", calls, len(did))
	}
	for _, key := range keys {
		if st := b.record(t, alice, key).Effects; len(st) != 1 || st[0].Status != idempotency.EffectDelivered {
			t.Errorf("effects %+v, want delivered", st)
		}
	}
}
