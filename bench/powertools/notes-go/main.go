// Command notes-go drives the notes API's PATCH /notes/{id} (package
// notes of examples/notes-api, built as its main.go builds it) through its
// Lambda handler, for bench/powertools' compare.mjs: N fresh PATCHes, N
// replays in the same environment, N replays in a new one, and two faults.
// Its DynamoDB client goes through compare.mjs's counting proxy, which
// counts the calls by operation and injects the faults; this program asks
// it for the counts (/__bench/…) and prints one JSON object on stdout, so
// that both sides are counted by the same code.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// replayCacheBytes is main.go's: the environment as deployed.
const replayCacheBytes = 16 << 20

const user = "bench-user"

// phase is what one run of requests cost: DynamoDB calls by operation,
// and the handler's wall time per request in milliseconds.
type phase struct {
	Requests int            `json:"requests"`
	Calls    map[string]int `json:"calls"`
	Millis   []float64      `json:"millis"`
}

// fault is what one fault did: the answers the client got, in order, the
// DynamoDB calls of each request, and what DynamoDB holds afterwards.
type fault struct {
	Answers []string         `json:"answers"`
	Note    string           `json:"note"`
	Record  string           `json:"record"`
	Calls   []map[string]int `json:"calls"`
}

type result struct {
	Fresh      phase `json:"fresh"`
	WarmReplay phase `json:"warm_replay"`
	ColdReplay phase `json:"cold_replay"`
	// LostCommit: every answer of the commit lost in one invocation (it
	// reaches the server and commits), then the client retries.
	LostCommit fault `json:"lost_commit"`
	// LostOnce: one answer of the commit lost; the SDK retries it.
	LostOnce fault `json:"lost_once"`
}

func main() {
	endpoint := flag.String("endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "the counting proxy's URL")
	n := flag.Int("n", 200, "fresh PATCHes, and replays of each kind")
	flag.Parse()
	if err := run(context.Background(), *endpoint, *n); err != nil {
		fmt.Fprintln(os.Stderr, "notes-go:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, endpoint string, n int) error {
	if endpoint == "" {
		return fmt.Errorf("-endpoint or DYNAMODB_ENDPOINT is required")
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	if err != nil {
		return err
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	suffix := uuid.NewString()[:8]
	notesTable, ledger := "notes-go-"+suffix, "ledger-go-"+suffix
	if err := dynamodbstore.CreateTable(ctx, client, notes.TableInput(notesTable), nil); err != nil {
		return err
	}
	if err := dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput(ledger), dynamodbstore.TTLInput(ledger)); err != nil {
		return err
	}
	defer func() {
		for _, t := range []string{notesTable, ledger} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(t)})
		}
	}()
	ids := make([]string, n+2)
	for i := range ids {
		ids[i] = uuid.NewString()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(notesTable), Item: map[string]types.AttributeValue{
			notes.UserAttr: s(user), notes.IDAttr: s(ids[i]), notes.TitleAttr: s("seed"), notes.BodyAttr: s(""), notes.VersionAttr: &types.AttributeValueMemberN{Value: "1"},
		}}); err != nil {
			return err
		}
	}
	p := proxy(endpoint)
	newEnv := func() *notes.Service {
		return notes.New(notes.Config{Client: client, NotesTable: notesTable, LedgerTable: ledger, CacheBytes: replayCacheBytes})
	}
	env := newEnv()
	reqs := make([]events.APIGatewayV2HTTPRequest, n)
	for i := range reqs {
		reqs[i] = patch(ids[i], uuid.NewString(), 1, fmt.Sprintf("title %d", i))
	}
	var out result
	drive := func(svc *notes.Service, replay bool) (phase, error) {
		if _, err := p.reset(); err != nil {
			return phase{}, err
		}
		ph := phase{Requests: n}
		for i, e := range reqs {
			start := time.Now()
			resp, _ := svc.Handle(ctx, e)
			ph.Millis = append(ph.Millis, float64(time.Since(start).Microseconds())/1000)
			want := fmt.Sprintf(`{"id":"%s","title":"title %d","version":2}`, ids[i], i)
			if resp.StatusCode != 200 || resp.Body != want || (resp.Headers["Idempotent-Replayed"] == "true") != replay {
				return phase{}, fmt.Errorf("request %d (replay %v): %d %s %v", i, replay, resp.StatusCode, resp.Body, resp.Headers)
			}
		}
		ph.Calls, err = p.reset()
		return ph, err
	}
	if out.Fresh, err = drive(env, false); err != nil {
		return err
	}
	if out.WarmReplay, err = drive(env, true); err != nil {
		return err
	}
	if out.ColdReplay, err = drive(newEnv(), true); err != nil {
		return err
	}

	store := dynamodbstore.New(client, ledger)
	state := func(id, key string) (string, string, error) {
		got, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(notesTable), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{notes.UserAttr: s(user), notes.IDAttr: s(id)}})
		if err != nil {
			return "", "", err
		}
		note := "version " + got.Item[notes.VersionAttr].(*types.AttributeValueMemberN).Value
		rec, ok, err := store.Get(ctx, user, key)
		switch {
		case err != nil:
			return "", "", err
		case !ok:
			return note, "none", nil
		}
		return note, "committed with the write, answer " + strconv.Itoa(rec.StatusCode), nil
	}
	faultRun := func(id string, lose int, retries int) (fault, error) {
		e := patch(id, uuid.NewString(), 1, "after a fault")
		var f fault
		if _, err := p.reset(); err != nil {
			return f, err
		}
		if err := p.fault(map[string]any{"op": "TransactWriteItems", "mode": "lose", "times": lose}); err != nil {
			return f, err
		}
		for i := 0; i <= retries; i++ {
			resp, _ := env.Handle(ctx, e)
			if err := p.fault(nil); err != nil { // the network is back for the client's retries
				return f, err
			}
			a := strconv.Itoa(resp.StatusCode)
			if resp.Headers["Idempotent-Replayed"] == "true" {
				a += " (stored answer)"
			}
			f.Answers = append(f.Answers, a)
			calls, err := p.reset()
			if err != nil {
				return f, err
			}
			f.Calls = append(f.Calls, calls)
		}
		f.Note, f.Record, err = state(id, e.Headers["idempotency-key"])
		return f, err
	}
	// Every attempt of the SDK (3) loses its answer: the handler answers
	// 503 and the client retries with its key.
	if out.LostCommit, err = faultRun(ids[n], 100, 1); err != nil {
		return err
	}
	if out.LostOnce, err = faultRun(ids[n+1], 1, 0); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// patch is the API Gateway HTTP API event of PATCH /notes/{id} from user,
// as the notes API's tests build it.
func patch(id, key string, version int, title string) events.APIGatewayV2HTTPRequest {
	body, _ := json.Marshal(map[string]any{"version": version, "title": title})
	e := events.APIGatewayV2HTTPRequest{
		RouteKey: "PATCH /notes/{id}", RawPath: "/notes/" + id, Body: string(body),
		Headers:        map[string]string{"content-type": "application/json", "idempotency-key": key},
		PathParameters: map[string]string{"id": id},
	}
	e.RequestContext.HTTP.Method = "PATCH"
	e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": user}},
	}
	return e
}

// proxy is compare.mjs's control endpoint on the counting proxy.
type proxy string

// reset returns the calls counted since the last reset, and starts again.
func (p proxy) reset() (map[string]int, error) {
	var calls map[string]int
	return calls, p.post("/__bench/reset", nil, &calls)
}

// fault makes the proxy fail the calls spec matches; nil ends the fault.
func (p proxy) fault(spec map[string]any) error { return p.post("/__bench/fault", spec, nil) }

func (p proxy) post(path string, in, out any) error {
	body, _ := json.Marshal(in)
	resp, err := http.Post(string(p)+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("proxy %s: %d %s", path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
