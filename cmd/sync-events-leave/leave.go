package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/edge"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Drain places a space's accepted events not yet placed (package
// sequencer's Drain of the space's stream).
type Drain func(ctx context.Context, spaceID string) error

// leaveAll takes sub out of each of their spaces, their events there
// deleted first, and writes a line per space to out. Each space is
// drained first, so that an event of theirs accepted and not yet placed
// (a busy space's) is listed, and deleted with the others, rather than
// placed by the removal after the deletes. It reports whether every
// space was left; err is a failure that stopped it.
func leaveAll(ctx context.Context, h http.Handler, drain Drain, sub string, out io.Writer) (bool, error) {
	as := member{h: h, sub: sub, drain: drain}
	var listing struct {
		Spaces []struct{ ID, Role string }
	}
	if err := as.read(ctx, api.SpacesPath, &listing); err != nil {
		return false, err
	}
	all := true
	for _, sp := range listing.Spaces {
		r, err := as.leave(ctx, sp.ID)
		if err != nil {
			return false, fmt.Errorf("space %s: %w", sp.ID, err)
		}
		fmt.Fprintf(out, "space %s: %d events deleted, %s\n", sp.ID, r.deleted, r.outcome())
		all = all && r.left && r.kept == 0
	}
	if len(listing.Spaces) == 0 {
		fmt.Fprintln(out, "in no space")
	}
	return all, nil
}

// member acts as sub, through the handler.
type member struct {
	h     http.Handler // the API's (*api.Handler)
	sub   string
	drain Drain
}

// spaceResult is what leaving one space came to.
type spaceResult struct {
	deleted, kept int    // events deleted; events their role may not delete
	left          bool   // the membership is removed
	refusal       string // why not, when it is not
}

func (r spaceResult) outcome() string {
	s := "left"
	if !r.left {
		s = "not left: " + r.refusal
	}
	if r.kept > 0 {
		s += fmt.Sprintf("; %d events kept, which their role no longer lets them delete (an owner can)", r.kept)
	}
	return s
}

// walks bounds the reads of a space for the member's events: a read ends
// before an event not visible yet (one being committed), so the space is
// read again until a read finds nothing new of theirs.
const walks = 5

func (m member) leave(ctx context.Context, space string) (spaceResult, error) {
	var r spaceResult
	base := strings.ReplaceAll(api.SpacePath, "{spaceId}", space)
	if err := m.drain(ctx, space); err != nil {
		return r, fmt.Errorf("place the space's accepted events: %w", err)
	}
	tried := map[string]bool{}
	for range walks {
		ids, err := m.ownEvents(ctx, base+"/events")
		if err != nil {
			return r, err
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return tried[id] })
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			tried[id] = true
			if err := m.deleteOwn(ctx, base, id, &r); err != nil {
				return r, err
			}
		}
	}
	status, code, err := m.mutate(ctx, http.MethodDelete, base+"/members/"+url.PathEscape(m.sub))
	switch {
	case err != nil:
		return r, err
	case status == http.StatusOK:
		r.left = true
	case status == http.StatusConflict || status == http.StatusForbidden || status == http.StatusNotFound:
		r.refusal = code // SPACE_LAST_OWNER; or no longer a member
	default:
		return r, fmt.Errorf("leave: %d %s", status, code)
	}
	return r, nil
}

// deleteOwn deletes one of the member's events, counting it in r.
func (m member) deleteOwn(ctx context.Context, base, id string, r *spaceResult) error {
	status, code, err := m.mutate(ctx, http.MethodDelete, base+"/events/"+id)
	switch {
	case err != nil:
		return err
	case status == http.StatusOK:
		r.deleted++
	case code == "SPACE_ROLE_FORBIDS":
		r.kept++
	case code == "EVENT_ALREADY_DELETED" || code == "EVENT_NOT_FOUND": // meanwhile, by someone else or retention
	default:
		return fmt.Errorf("delete event %s: %d %s", id, status, code)
	}
	return nil
}

// ownEvents lists the ids of the events in the stream at path that sub
// wrote and may delete: not deleted yet, and not the service's own.
func (m member) ownEvents(ctx context.Context, path string) ([]string, error) {
	var ids []string
	cursor := ""
	for {
		var page struct {
			Events []struct {
				ID, Type, Author string
				Deleted          bool
			}
			Cursor  string
			HasMore bool
		}
		q := "?limit=" + strconv.Itoa(api.MaxPageSize)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := m.read(ctx, path+q, &page); err != nil {
			return nil, err
		}
		for _, ev := range page.Events {
			if ev.Author == m.sub && !ev.Deleted && !syncevent.Reserved(ev.Type) {
				ids = append(ids, ev.ID)
			}
		}
		if !page.HasMore {
			return ids, nil
		}
		cursor = page.Cursor
	}
}

// read GETs path into v; anything but a 200, after retries, is an error.
func (m member) read(ctx context.Context, path string, v any) error {
	resp, err := m.send(ctx, http.MethodGet, path, "")
	if err != nil {
		return err
	}
	if resp.Code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, resp.Code, errorCode(resp))
	}
	return json.Unmarshal(resp.Body.Bytes(), v)
}

// mutate sends a mutation under a fresh key (the same key on every retry)
// and returns its status and error code.
func (m member) mutate(ctx context.Context, method, path string) (int, string, error) {
	resp, err := m.send(ctx, method, path, uuid.NewString())
	if err != nil {
		return 0, "", err
	}
	return resp.Code, errorCode(resp), nil
}

// maxAttempts bounds the sends of one request answered 429 or 503.
const maxAttempts = 10

// send hands the request to the handler as the edge would, with sub as
// the caller, again after Retry-After while it is answered 429 or 503.
func (m member) send(ctx context.Context, method, path, key string) (*httptest.ResponseRecorder, error) {
	for attempt := 1; ; attempt++ {
		r, err := http.NewRequestWithContext(edge.WithCaller(ctx, m.sub), method, "https://sync-events.local"+path, http.NoBody)
		if err != nil {
			return nil, err
		}
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		resp := httptest.NewRecorder()
		m.h.ServeHTTP(resp, r)
		if (resp.Code != http.StatusTooManyRequests && resp.Code != http.StatusServiceUnavailable) || attempt == maxAttempts {
			return resp, nil
		}
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header().Get("Retry-After")); err == nil {
			wait = time.Duration(s) * time.Second
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return resp, ctx.Err()
		}
	}
}

func errorCode(resp *httptest.ResponseRecorder) string {
	var e struct{ Error string }
	_ = json.Unmarshal(resp.Body.Bytes(), &e)
	return e.Error
}
