package poke

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// AppSync publishes pokes to an AppSync Events API over HTTP: one POST to
// Endpoint per poke, {"channel": …, "events": ["<the poke's message>"]},
// signed with SigV4 for the service "appsync" when Credentials is set (the
// template gives the function appsync:EventPublish on the users
// namespace; the local stand-in takes them unsigned). See
// https://docs.aws.amazon.com/appsync/latest/eventapi/publish-http.html.
type AppSync struct {
	Endpoint    string // https://<the API's HTTP DNS name>/event
	Region      string
	Credentials aws.CredentialsProvider
	Client      *http.Client
}

// publishConcurrency bounds the POSTs of one batch in flight: a batch of
// 100 records for 100 users is 100 POSTs, about 7 round trips.
const publishConcurrency = 16

// Publish sends each poke; the error counts the failed ones and gives the
// first one's cause. No error holds an answer's body or a channel: an
// Event API's error may name the channel, which names the user, and the
// error is logged.
func (a *AppSync) Publish(ctx context.Context, pokes []Poke) error {
	errs := make([]error, len(pokes))
	sem := make(chan struct{}, publishConcurrency)
	var wg sync.WaitGroup
	for i, p := range pokes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = a.publish(ctx, p)
		}()
	}
	wg.Wait()
	failed, first := 0, error(nil)
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d pokes not sent; the first: %w", failed, len(pokes), first)
	}
	return nil
}

// publishBody is the HTTP publish request; events are JSON strings.
type publishBody struct {
	Channel string   `json:"channel"`
	Events  []string `json:"events"`
}

// publishAnswer is the endpoint's answer: each event's fate.
type publishAnswer struct {
	Successful []json.RawMessage `json:"successful"`
	Failed     []json.RawMessage `json:"failed"`
}

func (a *AppSync) publish(ctx context.Context, p Poke) error {
	body, err := json.Marshal(publishBody{Channel: p.Channel, Events: []string{p.Message()}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := a.sign(ctx, req, body); err != nil {
		return err
	}
	client := a.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("publish answered %d", resp.StatusCode)
	}
	var ans publishAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return errors.New("publish answered 200 with no JSON answer")
	}
	if len(ans.Failed) > 0 || len(ans.Successful) != 1 {
		return fmt.Errorf("publish answered 200: %d sent, %d failed", len(ans.Successful), len(ans.Failed))
	}
	return nil
}

func (a *AppSync) sign(ctx context.Context, req *http.Request, body []byte) error {
	if a.Credentials == nil {
		return nil
	}
	creds, err := a.Credentials.Retrieve(ctx)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	return v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "appsync", a.Region, time.Now())
}
