package tally_test

import (
	"slices"
	"testing"

	"github.com/sync-events/sync-events/internal/tally"
)

func TestLabelsAndCounts(t *testing.T) {
	c := tally.Counts{}
	for _, a := range []struct {
		status   int
		code     string
		replayed bool
	}{{201, "", false}, {201, "", true}, {201, "", true}, {409, "EVENT_ALREADY_EXISTS", false}} {
		c[tally.Answer(a.status, a.code, a.replayed)]++
	}
	if want := []string{"201", "201 (replayed)", "409 EVENT_ALREADY_EXISTS"}; !slices.Equal(c.Labels(), want) {
		t.Fatalf("labels %v, want %v", c.Labels(), want)
	}
	if c["201 (replayed)"] != 2 {
		t.Fatalf("counts %v", c)
	}
}
