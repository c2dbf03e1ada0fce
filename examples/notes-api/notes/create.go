package notes

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

type createBody struct {
	ID    string  `json:"id"`
	Title *string `json:"title"`
	Body  *string `json:"body"`
}

// createNote is POST /notes: a Put of version 1, on the condition that
// the caller has no note with that id.
func (s *Service) createNote(_ context.Context, r *mutation.Request) (mutation.Plan[write], error) {
	var in createBody
	if err := decode(r.Body, &in); err != nil {
		return mutation.Plan[write]{}, err
	}
	var check fieldCheck
	id, ok := idempotency.ParseUUID(in.ID)
	if !ok {
		check.add("id", "must be a UUID")
	}
	check.title(in.Title, true)
	check.body(in.Body)
	if err := check.err(); err != nil {
		return mutation.Plan[write]{}, err
	}
	if in.Body == nil {
		in.Body = aws.String("")
	}
	n := note{ID: id, Title: in.Title, Body: in.Body, Version: 1}
	put := s.putNote(r.User, n)
	return mutation.Plan[write]{
		Execute: answer(http.StatusCreated, n, put),
		// The only condition is the id's: the caller has that note.
		Rejected: func(context.Context, []int) error { return errAlreadyExists },
	}, nil
}

func (s *Service) putNote(user string, n note) write {
	item := key(user, n.ID)
	item[TitleAttr], item[BodyAttr], item[VersionAttr] = str(*n.Title), str(*n.Body), num("1")
	return write{Put: &types.Put{
		TableName: aws.String(s.notes), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": IDAttr},
	}}
}

// answer is an executor that answers status with v's JSON and commits
// writes with it. The plan is decided when the request is read: nothing
// in it depends on the time it runs.
func answer(status int, v any, writes ...write) idempotency.Executor[write] {
	return func(context.Context, time.Time) (idempotency.Execution[write], error) {
		body, err := json.Marshal(v)
		if err != nil {
			return idempotency.Execution[write]{}, err
		}
		return idempotency.Execution[write]{Response: idempotency.Response{StatusCode: status, Body: body}, Writes: writes}, nil
	}
}
