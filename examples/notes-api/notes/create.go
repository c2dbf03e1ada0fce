package notes

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

type createBody struct {
	ID    string  `json:"id"`
	Title *string `json:"title"`
	Body  *string `json:"body"`
}

// createNote is POST /notes: a Put of version 1, on the condition that
// the caller has no note with that id.
func (s *Service) createNote(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
	var in createBody
	if err := decode(r.Body, &in); err != nil {
		return dynamodbstore.Plan{}, err
	}
	var check fieldCheck
	id, ok := idempotency.ParseUUID(in.ID)
	if !ok {
		check.add("id", "must be a UUID")
	}
	check.title(in.Title, true)
	check.body(in.Body)
	if err := check.err(); err != nil {
		return dynamodbstore.Plan{}, err
	}
	if in.Body == nil {
		in.Body = aws.String("")
	}
	n := note{ID: id, Title: in.Title, Body: in.Body, Version: 1}
	var effects []idempotency.Effect
	if s.webhook {
		payload, _ := json.Marshal(n) // strings and an integer always marshal
		effects = []idempotency.Effect{{Name: NoteCreated, Kind: WebhookKind, Payload: payload}}
	}
	return dynamodbstore.Plan{
		Status: http.StatusCreated, Body: n,
		Writes:  []dynamodbstore.Write{s.putNote(r.User, n)},
		Effects: effects, // committed with the note, delivered after
		// The only condition is the id's: the caller has that note.
		Refused: func(context.Context, []idempotency.Refusal) error { return errAlreadyExists },
	}, nil
}

func (s *Service) putNote(user string, n note) dynamodbstore.Write {
	item := key(user, n.ID)
	item[TitleAttr], item[BodyAttr], item[VersionAttr] = str(*n.Title), str(*n.Body), num("1")
	return dynamodbstore.Write{Put: &types.Put{
		TableName: aws.String(s.notes), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": IDAttr},
	}}
}
