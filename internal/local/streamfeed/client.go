package streamfeed

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// LocalClient is a DynamoDB Streams client of a local backend at
// endpoint, signing with the fixed local credentials every local client
// uses.
func LocalClient(endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// StreamARN is table's latest stream, "" if it has none.
func StreamARN(ctx context.Context, client *dynamodb.Client, table string) (string, error) {
	d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", err
	}
	return aws.ToString(d.Table.LatestStreamArn), nil
}
