package apitest

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/functions/sync-events/api"
)

// ListedEvent is an event as a GET page shows it.
type ListedEvent struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	OccurredAt string          `json:"occurredAt"`
	ReceivedAt string          `json:"receivedAt"`
	Payload    json.RawMessage `json:"payload"`
	// Author is who wrote an event of a space; Deleted marks a tombstone.
	Author  string `json:"author"`
	Deleted bool   `json:"deleted"`
}

// Page is a GET page as a syncing device reads it.
type Page struct {
	Events  []ListedEvent `json:"events"`
	Cursor  string        `json:"cursor"`
	HasMore bool          `json:"hasMore"`
}

// Pull reads one page after cursor ("" for the start).
func (hs *Harness) Pull(user, cursor string, limit int) Page {
	hs.T.Helper()
	q := map[string]string{"limit": fmt.Sprint(limit)}
	if cursor != "" {
		q["cursor"] = cursor
	}
	resp := hs.Get(user, q)
	if resp.StatusCode != 200 {
		hs.T.Errorf("pull: %d %.300s", resp.StatusCode, resp.Body)
		return Page{Cursor: cursor}
	}
	var p Page
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		hs.T.Fatal(err)
	}
	return p
}

// Drain pulls from cursor until no more pages follow now, and returns the
// ids read and the cursors handed out on the way.
func (hs *Harness) Drain(user, cursor string, limit int) (ids, cursors []string) {
	hs.T.Helper()
	evs, cursors, last := hs.Walk(api.EventsPath, user, cursor, limit)
	if last.StatusCode != 200 {
		hs.T.Errorf("pull: %d %.300s", last.StatusCode, last.Body)
	}
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	return ids, cursors
}

// Walk pages the stream at path (a user's or a space's GET) as user from
// cursor ("" for the start), limit events a page, until no more pages
// follow now or a page is refused: the events read, the cursors handed
// out, and the last answer (the refusal, if one ended it). A page that
// says more follow but moves nowhere, a stall, fails the test.
func (hs *Harness) Walk(path, user, cursor string, limit int) (evs []ListedEvent, cursors []string, last events.APIGatewayV2HTTPResponse) {
	hs.T.Helper()
	for range 10000 {
		q := fmt.Sprintf("%s?limit=%d", path, limit)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		last = hs.Call("GET", q, user, "", "")
		if last.StatusCode != 200 {
			return evs, cursors, last
		}
		var p Page
		if err := json.Unmarshal([]byte(last.Body), &p); err != nil {
			hs.T.Fatal(err)
		}
		if p.HasMore && p.Cursor == cursor {
			hs.T.Fatalf("a stall at cursor %q", cursor)
		}
		evs, cursor = append(evs, p.Events...), p.Cursor
		cursors = append(cursors, cursor)
		if !p.HasMore {
			return evs, cursors, last
		}
	}
	hs.T.Fatal("more than 10,000 pages")
	return nil, nil, last
}
