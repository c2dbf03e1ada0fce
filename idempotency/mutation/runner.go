package mutation

import (
	"cmp"
	"context"
	stdjson "encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

// A Mutation reads an accepted request (its caller, key and valid JSON
// body are in r) into the Plan the flow will run, or refuses it with an
// *errcode.Error; a refused request runs nothing and records nothing. It
// must not write: its writes are the Plan's, committed with the key's
// record.
//
// It runs only for a key this environment's replay cache does not hold,
// and what it says is answered only for a key with no record: a retry of
// a stored mutation gets the stored answer, even where the mutation (or
// its Execute) would now refuse it. A refusal costs one read of the
// ledger to make sure.
type Mutation[W any] func(ctx context.Context, r *Request) (Plan[W], error)

// Plan is what a mutation does once the flow lets it run: the answer, and
// the writes that commit with it and the key's record, all or nothing.
type Plan[W any] struct {
	// Status and Body are the answer once Writes commit: Status 0 is 200,
	// and Body is sent as JSON (a []byte as it is, which must be JSON;
	// anything else as encoding/json marshals it; nil, no body).
	Status int
	Body   any
	// Writes are the business writes, each with the condition that makes
	// it right to apply (a version, an id not yet taken).
	Writes []W
	// Effects are carried out after the commit, at least once each, under
	// keys the downstream dedupes on (see idempotency.Effect and package
	// outbox).
	Effects []idempotency.Effect
	// Execute, if set, decides the answer, the writes and the effects when
	// the flow runs them, in place of Status, Body, Writes and Effects: for
	// an answer that holds the time of the commit, or one decided from a
	// read. See idempotency.Executor.
	Execute idempotency.Executor[W]
	// Refused words the answer when conditions of Writes failed (nothing
	// was written or recorded, so the key stays free): an *errcode.Error,
	// from what each refusal says of its item (a missing item is a 404, an
	// item in another state a 409). Nil answers 409 CONFLICT.
	Refused func(ctx context.Context, refusals []idempotency.Refusal) error
}

// executor is the plan's Execute, or the one its Status, Body and Writes
// make.
func (p Plan[W]) executor() idempotency.Executor[W] {
	if p.Execute != nil {
		return p.Execute
	}
	return func(context.Context, time.Time) (idempotency.Execution[W], error) {
		body, err := jsonBody(p.Body)
		if err != nil {
			return idempotency.Execution[W]{}, fmt.Errorf("encode the answer: %w", err)
		}
		return idempotency.Execution[W]{Response: idempotency.Response{StatusCode: cmp.Or(p.Status, http.StatusOK), Body: body}, Writes: p.Writes, Effects: p.Effects}, nil
	}
}

func jsonBody(v any) ([]byte, error) {
	switch b := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case stdjson.RawMessage:
		return b, nil
	}
	return stdjson.Marshal(v)
}

// Options configure a Runner. The zero value is the defaults each field
// names.
type Options struct {
	// Methods are the methods that need a key, and run exactly once; an
	// adapter hands any other to the handler it was given for them.
	// Nil is POST, PUT, PATCH and DELETE.
	Methods []string
	// User is the caller, from the verified request; nil is Subject (the
	// token's sub claim). Its error, an *errcode.Error, is answered as is.
	User func(r *Request) (string, error)
	// Key is the idempotency key; nil is HeaderKey (the Idempotency-Key
	// header, a UUID). A Key of one's own can read another part of the
	// request, or put a prefix before the key to keep apart the records of
	// services that share a ledger table.
	Key func(r *Request) (string, error)
	// Payload is the JSON a retry must repeat, of which the record keeps
	// the RFC 8785 fingerprint; nil is the whole body. A Payload of one's
	// own can leave out what a client may change between retries (a
	// timestamp of its own sending, say). Its error is answered as is.
	Payload func(r *Request) ([]byte, error)
	// MaxBodyBytes bounds a body as sent (after base64 decoding); 0 is
	// DefaultMaxBodyBytes. A route that takes more (a batch) says so in
	// its requests' Request.MaxBodyBytes.
	MaxBodyBytes int
	// Statuses gives the status of the application's own error codes, and
	// may change those of DefaultStatuses; a status of 0 takes out a code
	// the application never answers, so that Codes lists exactly what its
	// contract must.
	Statuses map[errcode.Code]int
	// OnReplay, if set, may change a stored answer before it goes out
	// again (it already carries Idempotent-Replayed: true).
	OnReplay func(r *Request, resp *Response)
	// Report, if set, is told what each request came to: for a log line
	// or a metric.
	Report func(ctx context.Context, r *Request, rep Report)
}

// DefaultMaxBodyBytes is the body limit when Options set none.
const DefaultMaxBodyBytes = 256 << 10

// ReplayedHeader marks an answer that a retry got from the record.
const ReplayedHeader = "Idempotent-Replayed"

// Runner is the envelope: one per execution environment, over one flow.
type Runner[W any] struct {
	flow    *idempotency.Flow[W]
	o       Options
	answers answers
}

// New returns a Runner of the mutations of flow.
func New[W any](flow *idempotency.Flow[W], o Options) *Runner[W] {
	if o.Methods == nil {
		o.Methods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	}
	if o.User == nil {
		o.User = Subject
	}
	if o.Key == nil {
		o.Key = HeaderKey
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return &Runner[W]{flow: flow, o: o, answers: newAnswers(o.Statuses)}
}

// NeedsKey reports whether requests with method run through the envelope.
func (m *Runner[W]) NeedsKey(method string) bool { return slices.Contains(m.o.Methods, method) }

// Report is what a request came to, for logs and metrics: the flow's
// Summary, and what the envelope adds to it. It holds no body, no user id
// and no whole key.
type Report struct {
	// Summary is the flow's: its Outcome, or Refused (refused before the
	// flow ran), or Failed (the service failed); FromCache (the answer came
	// from the replay cache, with no call); ConflictRetries.
	idempotency.Summary
	// Code is the error code answered, if any.
	Code errcode.Code
	// KeyPrefix is the key's first 8 characters: enough to follow a
	// client's retries in the logs, not enough to replay them.
	KeyPrefix string
	// Err is the failure behind an answer that has a cause beyond the
	// request itself (every 5xx, and a refusal that wraps a failure of the
	// store, such as a full partition), for the logs.
	Err error
}

// Outcomes of a request that the flow does not name.
const (
	Refused idempotency.Outcome = "refused" // refused as sent: nothing ran
	Failed  idempotency.Outcome = "error"   // the service failed
)

// Run puts r through the envelope and mut, and answers. It never fails:
// every failure is an answer the client can act on.
func (m *Runner[W]) Run(ctx context.Context, r *Request, mut Mutation[W]) (Response, Report) {
	resp, rep := m.run(ctx, r, mut)
	if m.o.Report != nil {
		m.o.Report(ctx, r, rep)
	}
	return resp, rep
}

func (m *Runner[W]) run(ctx context.Context, r *Request, mut Mutation[W]) (Response, Report) {
	req, err := m.accept(r)
	if err != nil {
		return m.fail(err, r, Report{})
	}
	// The mutation reads the request inside the flow, so that a key the
	// replay cache holds is answered without running it, and a key with a
	// record is answered from it whatever the mutation says now (a rule
	// tightened since the first attempt, an item already gone).
	var plan Plan[W]
	res, err := m.flow.Do(ctx, req, func(ctx context.Context, now time.Time) (idempotency.Execution[W], error) {
		var err error
		if plan, err = mut(ctx, r); err != nil {
			return idempotency.Execution[W]{}, err
		}
		return plan.executor()(ctx, now)
	})
	rep := Report{Summary: res.Summary}
	switch {
	case err != nil:
		return m.fail(err, r, rep)
	case res.Outcome == idempotency.KeyReused:
		return m.fail(ErrKeyReused, r, rep)
	case res.Outcome == idempotency.WriteRejected:
		return m.fail(m.refused(ctx, plan, res.Refusals), r, rep)
	}
	resp := Response{StatusCode: res.StatusCode, Header: http.Header{"Content-Type": {"application/json"}}, Body: res.Body}
	rep.KeyPrefix = keyPrefix(r.Key)
	if res.Replayed() {
		resp.Header.Set(ReplayedHeader, "true")
		if m.o.OnReplay != nil {
			m.o.OnReplay(r, &resp)
		}
	}
	return resp, rep
}

// accept runs the checks before the flow, in the order a client fixes
// them: who, which key, what kind of body, how large, valid JSON. The
// mutation's own reading of the body comes later, in the flow.
func (m *Runner[W]) accept(r *Request) (idempotency.Request, error) {
	var err error
	if r.User, err = m.o.User(r); err != nil {
		return idempotency.Request{}, err
	}
	if r.Key, err = m.o.Key(r); err != nil {
		return idempotency.Request{}, err
	}
	canonical, err := m.body(r)
	if err != nil {
		return idempotency.Request{}, err
	}
	if m.o.Payload != nil {
		if canonical, err = m.payload(r); err != nil {
			return idempotency.Request{}, err
		}
	}
	return idempotency.Request{UserID: r.User, Key: r.Key, Method: r.Method, Route: boundRoute(r.Route, r.PathParams), CanonicalBody: canonical}, nil
}

// body checks the body's type, size and JSON, and returns its canonical
// form. A DELETE may come with no body at all: RFC 9110 gives a DELETE's
// content no meaning, and clients send none, many with the Content-Type
// they set on every request, which then describes nothing and is not
// looked at. Its canonical form is empty, and a retry must send none
// either.
func (m *Runner[W]) body(r *Request) ([]byte, error) {
	if r.Method == http.MethodDelete && len(r.Body) == 0 {
		return nil, nil
	}
	if err := checkContentType(r.Header); err != nil {
		return nil, err
	}
	var err error
	if r.Body, err = decodeBody(r.Body, r.BodyBase64, cmp.Or(r.MaxBodyBytes, m.o.MaxBodyBytes)); err != nil {
		return nil, err
	}
	r.BodyBase64 = false
	return canonicalJSON(r.Body)
}

// boundRoute is route with each {name} (or {name+}, {name...}) segment
// replaced by its parameter's value, escaped: what the key's record names,
// so that a key sent again for another resource on the same route
// ("/notes/{id}" for another id) is a reused key, not the first
// resource's replay. Without the parameter, the segment stays as it is.
func boundRoute(route string, params map[string]string) string {
	if len(params) == 0 || !strings.Contains(route, "{") {
		return route
	}
	segs := strings.Split(route, "/")
	for i, seg := range segs {
		name, ok := strings.CutPrefix(seg, "{")
		if !ok || !strings.HasSuffix(name, "}") {
			continue
		}
		name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "}"), "..."), "+")
		if v, ok := params[name]; ok {
			segs[i] = url.PathEscape(v)
		}
	}
	return strings.Join(segs, "/")
}

// payload is the canonical form of what Options.Payload picks.
func (m *Runner[W]) payload(r *Request) ([]byte, error) {
	p, err := m.o.Payload(r)
	if err != nil {
		return nil, err
	}
	return canonicalJSON(p)
}

// refused is the answer to failed business conditions.
func (m *Runner[W]) refused(ctx context.Context, plan Plan[W], refusals []idempotency.Refusal) error {
	if plan.Refused == nil {
		return errConflict
	}
	return plan.Refused(ctx, refusals)
}

// fail answers err and reports it: a 5xx as the service's failure;
// anything else as a refusal, unless the flow already named the outcome (a
// reused key, a rejected write). Its cause goes to the logs where it has
// one beyond the request (see Report.Err).
func (m *Runner[W]) fail(err error, r *Request, rep Report) (Response, Report) {
	resp, e := m.answers.answer(err, true)
	rep.Code, rep.KeyPrefix = e.Code, keyPrefix(r.Key)
	switch {
	case resp.StatusCode >= http.StatusInternalServerError:
		if rep.Outcome != idempotency.ConflictExhausted {
			rep.Outcome = Failed
		}
	case rep.Outcome == "":
		rep.Outcome = Refused
	}
	if resp.StatusCode >= http.StatusInternalServerError || e.Err != nil {
		rep.Err = err
	}
	return resp, rep
}

// AnswerRead is Answers.Read by the runner's table.
func (m *Runner[W]) AnswerRead(err error) Response { return Answers{m.answers}.Read(err) }

// AnswerMutation is Answers.Mutation by the runner's table.
func (m *Runner[W]) AnswerMutation(err error) Response { return Answers{m.answers}.Mutation(err) }

// Codes is every error code a Runner with these options answers with,
// sorted: an API's contract lists exactly these.
func (o Options) Codes() []errcode.Code { return newAnswers(o.Statuses).codes() }

// Status is the status code answers with under these options, and false
// for a code they do not have.
func (o Options) Status(code errcode.Code) (int, bool) {
	s, ok := newAnswers(o.Statuses).statuses[code]
	return s, ok
}

func keyPrefix(key string) string {
	if len(key) < 8 {
		return ""
	}
	return key[:8]
}

// The envelope's own refusals.
var (
	// ErrKeyReused is the 409 for a known key with another request.
	ErrKeyReused = errcode.New(errcode.KeyReused, "Idempotency key already used with a different payload")
	// ErrUnauthorized is Subject's refusal of a request with no sub.
	ErrUnauthorized = errcode.New(errcode.Unauthorized, "Authentication required: no user id in the verified token claims")
	errConflict     = errcode.New(errcode.Conflict, "The mutation conflicts with what is stored; nothing was stored")
)
