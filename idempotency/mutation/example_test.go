package mutation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// memoryStore is an idempotency.Store in memory whose writes are
// functions on a map: enough to run the examples without a database. In
// production the store is dynamodbstore.Store.
type memoryStore struct {
	mu      sync.Mutex
	records map[[2]string]idempotency.Record
	notes   map[string]string
}

type write func(notes map[string]string)

func newMemoryStore() *memoryStore {
	return &memoryStore{records: map[[2]string]idempotency.Record{}, notes: map[string]string{}}
}

func (s *memoryStore) Commit(_ context.Context, rec idempotency.Record, writes []write, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[[2]string{rec.UserID, rec.Key}]; ok && !old.ExpiresAt.Before(now) {
		return &idempotency.KeyExistsError{Existing: &old}
	}
	s.records[[2]string{rec.UserID, rec.Key}] = rec
	for _, w := range writes {
		w(s.notes)
	}
	return nil
}

func (s *memoryStore) Get(_ context.Context, userID, key string) (idempotency.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[[2]string{userID, key}]
	return rec, ok, nil
}

// createNote is a mutation: it reads the request, refuses it if it is
// wrong (nothing is recorded then), and otherwise plans the answer and the
// write that commit together.
func createNote(_ context.Context, r *mutation.Request) (mutation.Plan[write], error) {
	var in struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal(r.Body, &in); err != nil || in.ID == "" {
		return mutation.Plan[write]{}, errcode.Invalid("id and title are required", errcode.Field{Field: "body"})
	}
	user := r.User
	return mutation.Plan[write]{
		Status: http.StatusCreated,
		Body:   map[string]string{"id": in.ID, "title": in.Title},
		Writes: []write{func(notes map[string]string) { notes[user+"/"+in.ID] = in.Title }},
	}, nil
}

// An HTTP API (payload 2.0) Lambda handler: POST runs exactly once per
// Idempotency-Key; a retry gets the stored answer, byte for byte.
func ExampleRunner_HTTPAPI() {
	store := newMemoryStore()
	flow := idempotency.NewFlow(store, idempotency.Options{})
	handler := mutation.New(flow, mutation.Options{}).HTTPAPI(createNote, nil)
	// In a Lambda: lambda.Start(handler).

	req := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /notes",
		Headers: map[string]string{
			"content-type":    "application/json",
			"idempotency-key": "8e03978e-40d5-43e8-bc93-6894a57f9324",
		},
		Body: `{"id":"n-1","title":"Groceries"}`,
	}
	req.RequestContext.HTTP.Method = "POST"
	// What API Gateway's JWT authorizer verified.
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
	}
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Println(resp.StatusCode, resp.Headers["Idempotent-Replayed"], resp.Body)
	}
	delete(req.Headers, "idempotency-key")
	resp, _ := handler(context.Background(), req)
	fmt.Println(resp.StatusCode, resp.Body)
	fmt.Println(len(store.notes), "note stored")
	// Output:
	// 201  {"id":"n-1","title":"Groceries"}
	// 201 true {"id":"n-1","title":"Groceries"}
	// 400 {"error":"VALIDATION_FAILED","message":"Idempotency-Key header is required"}
	// 1 note stored
}

// A net/http server: the mux routes, the runner runs the mutation, and the
// middleware in front of it (here a stand-in) puts the verified claims in
// the request's context.
func ExampleRunner_HTTP() {
	runner := mutation.New(idempotency.NewFlow(newMemoryStore(), idempotency.Options{}), mutation.Options{})
	mux := http.NewServeMux()
	mux.Handle("POST /notes", runner.HTTP(createNote, nil))
	authenticated := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A real server verifies the bearer token here.
		mux.ServeHTTP(w, r.WithContext(mutation.ContextWithClaims(r.Context(), map[string]string{"sub": "alice"})))
	})

	for _, body := range []string{`{"id":"n-1","title":"Groceries"}`, `{"id":"n-1","title":"Errands"}`} {
		r := httptest.NewRequest("POST", "/notes", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		w := httptest.NewRecorder()
		authenticated.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Body.String())
	}
	// Output:
	// 201 {"id":"n-1","title":"Groceries"}
	// 409 {"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency key already used with a different payload"}
}

// A REST API (payload 1.0) behind a Cognito user pool authorizer, whose
// verified claims API Gateway passes in the request context.
func ExampleRunner_REST() {
	handler := mutation.New(idempotency.NewFlow(newMemoryStore(), idempotency.Options{}), mutation.Options{}).REST(createNote, nil)
	req := events.APIGatewayProxyRequest{
		Resource: "/notes", HTTPMethod: "POST",
		Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		Body:    `{"id":"n-1","title":"Groceries"}`,
	}
	req.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": "alice"}}
	resp, _ := handler(context.Background(), req)
	fmt.Println(resp.StatusCode, resp.Body)
	// Output:
	// 201 {"id":"n-1","title":"Groceries"}
}

// Options change the envelope: here the key comes from another header and
// is kept apart from other services' by a prefix, and a retry need only
// repeat the note's id and title, not the client's own timestamp.
func ExampleOptions() {
	runner := mutation.New(idempotency.NewFlow(newMemoryStore(), idempotency.Options{}), mutation.Options{
		Key: func(r *mutation.Request) (string, error) {
			id := r.Header.Get("X-Request-Id")
			if id == "" {
				return "", errcode.Invalid("X-Request-Id is required", errcode.Field{Field: "X-Request-Id"})
			}
			return "notes#" + id, nil
		},
		Payload: func(r *mutation.Request) ([]byte, error) {
			var in struct {
				ID    string `json:"id"`
				Title string `json:"title"`
			}
			err := json.Unmarshal(r.Body, &in)
			return []byte(fmt.Sprintf(`{"id":%q,"title":%q}`, in.ID, in.Title)), err
		},
	})
	send := func(body string) {
		r := &mutation.Request{
			Method: "POST", Route: "/notes", Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req-17"}},
			Body: []byte(body), Claims: map[string]string{"sub": "alice"},
		}
		resp, rep := runner.Run(context.Background(), r, createNote)
		fmt.Println(resp.StatusCode, rep.Outcome)
	}
	send(`{"id":"n-1","title":"Groceries","sentAt":"10:00"}`)
	send(`{"id":"n-1","title":"Groceries","sentAt":"10:05"}`)
	// Output:
	// 201 executed
	// 201 replayed
}

// A read, which does not go through the envelope, answers its failures by
// the same table of statuses as the Runner of the same options: one shape
// for every answer of the API.
func ExampleOptions_Answers() {
	opts := mutation.Options{Statuses: map[errcode.Code]int{"NOTE_ARCHIVED": http.StatusGone}}
	resp := opts.Answers().Read(errcode.New("NOTE_ARCHIVED", "The note is archived"))
	fmt.Println(resp.StatusCode, string(resp.Body))
	// Output:
	// 410 {"error":"NOTE_ARCHIVED","message":"The note is archived"}
}
