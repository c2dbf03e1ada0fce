package notes

import (
	"context"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// patchBody is a PATCH: the version the client last saw, and the fields
// it changes.
type patchBody struct {
	Version *int64  `json:"version"`
	Title   *string `json:"title"`
	Body    *string `json:"body"`
}

// patchNote is PATCH /notes/{id}: an UpdateItem conditioned on the
// version the client sent. A stale version is NOTE_VERSION_CONFLICT, a
// missing note NOTE_NOT_FOUND, told apart by the refusal (the write asks
// for the note as it stood, ALL_OLD); either way nothing is written or
// recorded, so the same key with a corrected body runs afresh.
func (s *Service) patchNote(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
	id, err := pathID(r.PathParams)
	if err != nil {
		return dynamodbstore.Plan{}, err
	}
	var in patchBody
	if err := decode(r.Body, &in); err != nil {
		return dynamodbstore.Plan{}, err
	}
	if err := checkPatch(in); err != nil {
		return dynamodbstore.Plan{}, err
	}
	return dynamodbstore.Plan{
		Body:   note{ID: id, Title: in.Title, Body: in.Body, Version: *in.Version + 1},
		Writes: []dynamodbstore.Write{s.updateNote(r.User, id, in)},
		Refused: func(_ context.Context, refused []idempotency.Refusal) error {
			if refused[0].Found {
				return errStaleVersion
			}
			return errNotFound
		},
	}, nil
}

func checkPatch(in patchBody) error {
	var check fieldCheck
	if in.Version == nil || *in.Version < 1 || *in.Version > maxVersion {
		check.add("version", "is required: the note's version, 1 or more, as last read")
	}
	if in.Title == nil && in.Body == nil {
		check.add("title", "a PATCH changes the title, the body or both")
	}
	check.title(in.Title, false)
	check.body(in.Body)
	return check.err()
}

// updateNote sets the fields the PATCH sends and moves the version on, if
// the note is still at the version the client saw. ALL_OLD asks for the
// note as it stood when that fails: the refusal's Found.
func (s *Service) updateNote(user, id string, in patchBody) dynamodbstore.Write {
	set := []string{"#version = :next"}
	names := map[string]string{"#id": IDAttr, "#version": VersionAttr}
	values := map[string]types.AttributeValue{
		":seen": num(strconv.FormatInt(*in.Version, 10)),
		":next": num(strconv.FormatInt(*in.Version+1, 10)),
	}
	if in.Title != nil {
		set = append(set, "#title = :title")
		names["#title"], values[":title"] = TitleAttr, str(*in.Title)
	}
	if in.Body != nil {
		set = append(set, "#body = :body")
		names["#body"], values[":body"] = BodyAttr, str(*in.Body)
	}
	return dynamodbstore.Write{Update: &types.Update{
		TableName: aws.String(s.notes), Key: key(user, id),
		UpdateExpression:                    aws.String("SET " + strings.Join(set, ", ")),
		ConditionExpression:                 aws.String("attribute_exists(#id) AND #version = :seen"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}
