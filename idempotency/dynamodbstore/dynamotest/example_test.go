package dynamotest_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
)

// A transport that lets DynamoDB apply a call and loses its answer: the
// caller sees an error, and the write is there. In a test, Start does this
// wiring (b.Client, b.Transport); outside one (a dev server, a tool),
// NewServer, NewTransport and NewClient do.
func ExampleTransport_LoseAnswers() {
	srv := dynamotest.NewServer()
	defer srv.Close()
	transport := dynamotest.NewTransport(http.DefaultTransport)
	client := dynamotest.NewClient(srv.URL, &http.Client{Transport: transport})
	ctx := context.Background()
	if err := dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput("ledger"), nil); err != nil {
		fmt.Println(err)
		return
	}

	transport.LoseAnswers("DeleteTable", 3) // the SDK's three attempts
	_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("ledger")})
	fmt.Println("error:", err != nil, "calls:", transport.Calls()["DeleteTable"])

	transport.Reset()
	_, err = client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("ledger")})
	fmt.Println("table gone:", err != nil)
	// Output:
	// error: true calls: 3
	// table gone: true
}
