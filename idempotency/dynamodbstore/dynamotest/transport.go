package dynamotest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Transport is an http.RoundTripper for a DynamoDB client: it counts the
// calls by operation and injects faults into them, the way a network or
// DynamoDB itself fails. It is safe for concurrent use.
type Transport struct {
	base   http.RoundTripper
	mu     sync.Mutex
	calls  map[string]int
	ok     map[string]int // calls answered 200
	faults []*Fault
	rng    *rand.Rand
	// observe, if set, is told of every call (see Observe).
	observe func(op string, body []byte)
}

// FaultKind is where and how a call fails.
type FaultKind int

const (
	// Refused fails the call before it is sent: nothing reaches DynamoDB.
	Refused FaultKind = iota
	// LostAnswer sends the call, lets DynamoDB act on it, then resets the
	// connection before the answer arrives.
	LostAnswer
	// ServiceError answers with a DynamoDB error (Code, Status) instead of
	// sending the call.
	ServiceError
	// StalledAnswer sends the call, lets DynamoDB act on it, then holds the
	// answer back until the caller gives up (its context ends).
	StalledAnswer
	// ShortPage cuts a Query's answer to its first item and says where it
	// stopped, as DynamoDB does when a page reaches 1 MB. KeyNames are the
	// attributes of that position (the table's and the index's keys).
	ShortPage
	// Delayed holds the call back for a random time up to Delay, then sends
	// it: a call built now commits later, as SDK retries, throttling and a
	// slow network make it in AWS. The wait ends early if the caller gives
	// up, and then nothing is sent.
	Delayed
	// NoOldItems sends the call and takes the items out of the
	// cancellation reasons of a failed transaction, as a backend that
	// ignores ReturnValuesOnConditionCheckFailure does (kumo): the code
	// must then read what the failed condition did not return.
	NoOldItems
)

// Fault is one failure to inject Times times into calls of Op, after
// letting After of them through.
type Fault struct {
	Op   string // e.g. "TransactWriteItems"; "" matches every call
	Kind FaultKind
	// After is how many matching calls pass untouched before the fault
	// fires: 0 faults the next call, 2 the third.
	After  int
	Code   string // for ServiceError, e.g. "ThrottlingException"
	Status int    // for ServiceError: 400 for throttling, 500 for internal errors
	// Reasons, for a ServiceError of code TransactionCanceledException, are
	// the cancellation reason codes, one per action.
	Reasons []string
	// KeyNames, for ShortPage, name the attributes of LastEvaluatedKey.
	KeyNames []string
	// Delay, for Delayed, is the longest hold.
	Delay  time.Duration
	Times  int
	passed int
	fired  int
}

// Fired is how many times the fault has been injected.
func (f *Fault) Fired() int { return f.fired }

// NewTransport wraps base.
func NewTransport(base http.RoundTripper) *Transport {
	return &Transport{base: base, calls: map[string]int{}, ok: map[string]int{}, rng: rand.New(rand.NewPCG(1, 2))}
}

// LoseAnswers lets the next n calls of op reach DynamoDB and be applied,
// then drops each answer as a reset connection does. The SDK retries a
// call whose answer it lost (three attempts by default): n = 3 loses every
// attempt of one call, and the caller gets an error after a commit that
// was applied.
func (t *Transport) LoseAnswers(op string, n int) *Fault {
	return t.Inject(Fault{Op: op, Kind: LostAnswer, Times: n})
}

// Throttle answers the next n calls of op with DynamoDB's
// ThrottlingException (HTTP 400), applying nothing. n = 3 throttles every
// attempt of one call.
func (t *Transport) Throttle(op string, n int) *Fault {
	return t.Inject(Fault{Op: op, Kind: ServiceError, Code: "ThrottlingException", Status: http.StatusBadRequest, Times: n})
}

// Inject adds a fault and returns it, to read Fired later. Faults fire in
// the order they were added: a call gets the first one that matches it.
func (t *Transport) Inject(f Fault) *Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults = append(t.faults, &f)
	return &f
}

// Reset forgets the counts and the faults.
func (t *Transport) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls, t.ok, t.faults = map[string]int{}, map[string]int{}, nil
}

// Observe has fn told the operation and the request body of every call
// from now on, faulted or not; nil stops it. It is for a test that needs
// what the calls touched (tables, indexes, the actions of a transaction),
// not only how many there were. Reset does not stop it.
func (t *Transport) Observe(fn func(op string, body []byte)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe = fn
}

// Calls returns the number of calls of each operation so far.
func (t *Transport) Calls() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.calls))
	for k, v := range t.calls {
		out[k] = v
	}
	return out
}

// Succeeded is the number of calls of op that DynamoDB answered 200,
// whether or not the answer then reached the caller (a LostAnswer's
// does not). It counts answers, not effects: the SDK retries a
// TransactWriteItems with the same ClientRequestToken, and DynamoDB
// answers such a retry 200 without applying it again (kumo ignores the
// token and fails the retry's condition instead).
func (t *Transport) Succeeded(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ok[op]
}

// Total is the number of calls of every operation so far.
func (t *Transport) Total() int {
	n := 0
	for _, v := range t.Calls() {
		n += v
	}
	return n
}

// RoundTrip counts the call, then injects the first matching fault or sends it.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	t.mu.Lock()
	observe := t.observe
	t.mu.Unlock()
	if observe != nil && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		observe(op, body)
	}
	t.mu.Lock()
	t.calls[op]++
	var fault *Fault
	for _, f := range t.faults {
		if (f.Op != "" && f.Op != op) || f.fired >= f.Times {
			continue
		}
		if f.passed < f.After {
			f.passed++
			continue
		}
		f.fired++
		fault = f
		break
	}
	t.mu.Unlock()
	base := counted{t, op}
	if fault == nil {
		return base.RoundTrip(req)
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	switch fault.Kind {
	case Delayed:
		t.mu.Lock()
		hold := time.Duration(t.rng.Int64N(int64(fault.Delay) + 1))
		t.mu.Unlock()
		select {
		case <-time.After(hold):
			return base.RoundTrip(req)
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	case ShortPage:
		return shortPage(base, req, fault.KeyNames)
	case NoOldItems:
		return withoutOldItems(base, req)
	case Refused:
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	case LostAnswer, StalledAnswer:
		resp, err := base.RoundTrip(req.WithContext(context.WithoutCancel(req.Context())))
		if err == nil {
			io.Copy(io.Discard, resp.Body) //nolint:errcheck // the answer is thrown away on purpose
			resp.Body.Close()
		}
		if fault.Kind == StalledAnswer {
			<-req.Context().Done()
			return nil, req.Context().Err()
		}
		return nil, reset
	default:
		if req.Body != nil {
			req.Body.Close()
		}
		body := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected %s"%s}`, fault.Code, fault.Code, reasonsJSON(fault.Reasons))
		return &http.Response{
			StatusCode: fault.Status,
			Header:     http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body:       io.NopCloser(bytes.NewReader([]byte(body))),
			Request:    req,
		}, nil
	}
}

func reasonsJSON(codes []string) string {
	if len(codes) == 0 {
		return ""
	}
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf(`{"Code":%q}`, c)
	}
	return `,"CancellationReasons":[` + strings.Join(parts, ",") + `]`
}

// withoutOldItems forwards a call and, if it failed with cancellation
// reasons, removes the item each reason carries.
func withoutOldItems(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := base.RoundTrip(req)
	if err != nil || resp.StatusCode == http.StatusOK {
		return resp, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var answer map[string]json.RawMessage
	var reasons []map[string]json.RawMessage
	if json.Unmarshal(body, &answer) == nil && json.Unmarshal(answer["CancellationReasons"], &reasons) == nil && len(reasons) > 0 {
		for _, r := range reasons {
			delete(r, "Item")
		}
		answer["CancellationReasons"], _ = json.Marshal(reasons)
		body, _ = json.Marshal(answer)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("X-Amz-Crc32") // the body may have changed
	resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return resp, nil
}

// shortPage forwards a Query and keeps only the first item of its answer,
// with a LastEvaluatedKey that points at it.
func shortPage(base http.RoundTripper, req *http.Request, keyNames []string) (*http.Response, error) {
	resp, err := base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	defer resp.Body.Close()
	var page map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, err
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(page["Items"], &items); err != nil {
		return nil, err
	}
	if len(items) > 1 {
		last := map[string]json.RawMessage{}
		for _, name := range keyNames {
			last[name] = items[0][name]
		}
		page["Items"], _ = json.Marshal(items[:1])
		page["Count"], page["ScannedCount"] = json.RawMessage("1"), json.RawMessage("1")
		page["LastEvaluatedKey"], _ = json.Marshal(last)
	}
	body, _ := json.Marshal(page)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("X-Amz-Crc32") // the body changed
	resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return resp, nil
}

// counted sends a call on and counts it for op if DynamoDB answered 200,
// before any fault drops the answer.
type counted struct {
	t  *Transport
	op string
}

func (c counted) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.t.base.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK {
		c.t.mu.Lock()
		c.t.ok[c.op]++
		c.t.mu.Unlock()
	}
	return resp, err
}
