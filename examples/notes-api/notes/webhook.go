package notes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/sync-events/sync-events/idempotency/outbox"
)

// The effect a POST /notes declares when Config.Webhook is set: the new
// note, POSTed to the webhook after the commit (package outbox).
const (
	// WebhookKind is the kind of the effect, the deliverer Webhook.
	WebhookKind = "webhook"
	// NoteCreated names the effect; it is sent as the Webhook-Event header.
	NoteCreated = "note-created"
)

// WebhookTimeout bounds one attempt at a webhook, its answer read.
const WebhookTimeout = 5 * time.Second

// Webhook is the deliverer of the notes API's webhook effects: it POSTs
// the effect's payload (the note, as JSON) to target with the effect's
// derived key as the Idempotency-Key header, for the receiver to dedupe
// a repeated delivery on. A 2xx answer is delivered; anything else,
// redirects included, is a failed attempt. A failure's text never holds
// target, which may carry a secret.
func Webhook(target string) outbox.Deliverer {
	client := &http.Client{
		Timeout: WebhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return func(ctx context.Context, d outbox.Delivery) error {
		if target == "" {
			return errors.New("no webhook URL is configured")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(d.Payload))
		if err != nil {
			return errors.New("the webhook URL is not valid")
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", d.Key)
		req.Header.Set("Webhook-Event", d.Name)
		resp, err := client.Do(req)
		if err != nil {
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err // without the URL
			}
			return fmt.Errorf("webhook not reached: %w", err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("webhook answered %d", resp.StatusCode)
		}
		return nil
	}
}
