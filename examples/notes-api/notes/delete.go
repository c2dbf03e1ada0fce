package notes

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// deleted is DELETE's answer.
type deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// deleteNote is DELETE /notes/{id}: a Delete on the condition that the
// note exists, so that deleting a missing note is a 404 and records
// nothing. Its body is empty or {}.
func (s *Service) deleteNote(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
	id, err := pathID(r.PathParams)
	if err != nil {
		return dynamodbstore.Plan{}, err
	}
	if len(r.Body) > 0 { // the envelope lets a DELETE come with none
		if err := decode(r.Body, &struct{}{}); err != nil {
			return dynamodbstore.Plan{}, errcode.Invalid("A DELETE takes no body, or {}", errcode.Field{Field: "body"})
		}
	}
	del := dynamodbstore.Write{Delete: &types.Delete{
		TableName: aws.String(s.notes), Key: key(r.User, id),
		ConditionExpression:      aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": IDAttr},
	}}
	return dynamodbstore.Plan{
		Body:    deleted{ID: id, Deleted: true},
		Writes:  []dynamodbstore.Write{del},
		Refused: func(context.Context, []idempotency.Refusal) error { return errNotFound },
	}, nil
}
