package ddb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableNames names the service's two tables.
type TableNames struct {
	Ledger string
	Events string
}

// DeleteTables removes both tables; tests use it to clean up after
// themselves. A table already gone counts as removed: the SDK retries a
// DeleteTable whose answer was lost (a loaded server, a reset
// connection), and the retry then finds nothing to delete.
func DeleteTables(ctx context.Context, client *dynamodb.Client, names TableNames) error {
	var errs []error
	for _, name := range []string{names.Ledger, names.Events} {
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var gone *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &gone) {
			errs = append(errs, fmt.Errorf("delete table %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
