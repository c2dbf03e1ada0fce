package apitest

import (
	"encoding/json"
	"fmt"
)

// ListedEvent is an event as a GET page shows it.
type ListedEvent struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	OccurredAt string          `json:"occurredAt"`
	ReceivedAt string          `json:"receivedAt"`
	Payload    json.RawMessage `json:"payload"`
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
	for {
		p := hs.Pull(user, cursor, limit)
		for _, ev := range p.Events {
			ids = append(ids, ev.ID)
		}
		cursor = p.Cursor
		cursors = append(cursors, cursor)
		if !p.HasMore {
			return ids, cursors
		}
	}
}
