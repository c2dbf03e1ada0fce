package ddb_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
)

// TestWithCallStatsCountsOnlyTheCopy: the copy counts each call under
// CountCalls, and the client it was made from stays as it was, even when
// a second copy is made from it (a shared APIOptions array would give the
// first copy's middleware to the second, or to the original).
func TestWithCallStatsCountsOnlyTheCopy(t *testing.T) {
	b := ddbtest.Start(t)
	counted := ddb.WithCallStats(b.Client)
	again := ddb.WithCallStats(b.Client)
	describe := func(c *dynamodb.Client) ddb.CallStats {
		ctx, stats := ddb.CountCalls(context.Background())
		if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.Tables.Events)}); err != nil {
			t.Fatal(err)
		}
		return stats()
	}
	for _, tc := range []struct {
		name   string
		client *dynamodb.Client
		calls  int
	}{
		{"the copy", counted, 1},
		{"a second copy", again, 1},
		{"the original", b.Client, 0},
	} {
		if got := describe(tc.client); got.Calls != tc.calls || got.Attempts != tc.calls {
			t.Errorf("%s: %+v, want %d call and attempt", tc.name, got, tc.calls)
		}
	}
}
