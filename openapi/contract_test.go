package openapi_test

import (
	"slices"
	"testing"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/syncevent"
	"github.com/sync-events/sync-events/openapi"
)

func TestDocumentIsValidOpenAPI(t *testing.T) {
	if _, err := openapi.Load(); err != nil {
		t.Fatal(err)
	}
}

// TestErrorCodesAreTheCodeTable: the document's ErrorCode enum is exactly
// the codes api.Statuses answers with, so that adding one without the other
// fails.
func TestErrorCodesAreTheCodeTable(t *testing.T) {
	c, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var inCode []string
	for code := range api.Statuses {
		inCode = append(inCode, code)
	}
	slices.Sort(inCode)
	inDoc := slices.Sorted(slices.Values(c.ErrorCodes()))
	if !slices.Equal(inCode, inDoc) {
		t.Fatalf("api.Statuses has %v, the document's ErrorCode enum %v", inCode, inDoc)
	}
}

// TestEveryRouteIsDocumented: what the handler routes (api.Routes) is what
// the document describes.
func TestEveryRouteIsDocumented(t *testing.T) {
	c, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Operations(), slices.Sorted(slices.Values(api.Routes())); !slices.Equal(got, want) {
		t.Fatalf("the document has %v, the handler answers %v", got, want)
	}
}

// TestCursorPatternIsTheCodes: the document's cursor pattern is the one
// syncevent.ParseCursor is tested to accept exactly.
func TestCursorPatternIsTheCodes(t *testing.T) {
	c, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.QueryPattern("/api/v1/sync/events", "get", "cursor"); got != syncevent.CursorPattern {
		t.Fatalf("the document's cursor pattern is %q, the code's %q", got, syncevent.CursorPattern)
	}
}
