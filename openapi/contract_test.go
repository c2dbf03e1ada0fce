package openapi_test

import (
	"bytes"
	"encoding/json"
	"os"

	"go.yaml.in/yaml/v3"
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
// the codes the API answers with (api.Codes), so that adding one without
// the other fails.
func TestErrorCodesAreTheCodeTable(t *testing.T) {
	c, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	inCode := api.Codes()
	inDoc := slices.Sorted(slices.Values(c.ErrorCodes()))
	// Two empty lists are equal: neither side may be empty.
	if len(inCode) == 0 || len(inDoc) == 0 {
		t.Fatalf("api.Codes has %d codes, the document's ErrorCode enum %d: both must have some", len(inCode), len(inDoc))
	}
	if !slices.Equal(inCode, inDoc) {
		t.Fatalf("api.Codes has %v, the document's ErrorCode enum %v", inCode, inDoc)
	}
}

// TestEveryRouteIsDocumented: what the handler routes (api.Routes) is what
// the document describes.
func TestEveryRouteIsDocumented(t *testing.T) {
	c, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	got, want := c.Operations(), slices.Sorted(slices.Values(api.Routes()))
	// Two empty lists are equal: neither side may be empty.
	if len(got) == 0 || len(want) == 0 {
		t.Fatalf("the document has %d operations, the handler %d routes: both must have some", len(got), len(want))
	}
	if !slices.Equal(got, want) {
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

// TestRequestExampleIsTheEventsFile: the document's POST example is the body
// of events/post-fresh.json, so the two cannot drift apart.
func TestRequestExampleIsTheEventsFile(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Examples map[string]struct{ Value any }
				}
			} `yaml:"requestBody"`
		}
	}
	if err := yaml.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	example := doc.Paths["/api/v1/sync/events"]["post"].RequestBody.Content["application/json"].Examples["fresh"].Value
	if example == nil {
		t.Fatal("no POST example named fresh")
	}
	raw, err := os.ReadFile("../events/post-fresh.json")
	if err != nil {
		t.Fatal(err)
	}
	var event struct{ Body string }
	if err := json.Unmarshal(raw, &event); err != nil {
		t.Fatal(err)
	}
	var body any
	if err := json.Unmarshal([]byte(event.Body), &body); err != nil {
		t.Fatal(err)
	}
	exampleJSON, _ := json.Marshal(example)
	bodyJSON, _ := json.Marshal(body)
	if !bytes.Equal(exampleJSON, bodyJSON) {
		t.Fatalf("the document's example is %s, events/post-fresh.json sends %s", exampleJSON, bodyJSON)
	}
}
