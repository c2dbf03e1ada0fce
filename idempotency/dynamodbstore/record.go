package dynamodbstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
)

// createdAtLayout is created_at as the ledger stores it: ISO 8601 UTC with
// milliseconds, as the sync API's first implementation wrote it.
const createdAtLayout = "2006-01-02T15:04:05.000Z"

// recordItem is a record as the ledger table holds it.
type recordItem struct {
	UserID       string `dynamodbav:"user_id"`
	Key          string `dynamodbav:"key"`
	PayloadHash  string `dynamodbav:"payload_hash"`
	StatusCode   int    `dynamodbav:"status_code"`
	ResponseBody string `dynamodbav:"response_body"`
	CreatedAt    string `dynamodbav:"created_at"`
	Method       string `dynamodbav:"method"`
	Route        string `dynamodbav:"route"`
	ExpiresAt    int64  `dynamodbav:"expires_at"`
	// HashScheme is absent on the records the flow writes (RFC 8785).
	HashScheme string `dynamodbav:"hash_scheme,omitempty"`
}

// effectPrefix begins the name of each effect's attribute: "effect:" and
// the effect's index among the mutation's effects. Each is an attribute
// of its own, not an entry of a map or a list, and named by its index,
// not its name: settling one replaces a whole top-level attribute whose
// name has no dot, which every DynamoDB-compatible backend reads alike
// (kumo applies no SET to a nested path, and splits a name on its dots).
const effectPrefix = "effect:"

func effectAttribute(i int) string { return effectPrefix + strconv.Itoa(i) }

// effectItem is one effect as the record holds it, and how its delivery
// stands.
type effectItem struct {
	Name     string `dynamodbav:"name"`
	Kind     string `dynamodbav:"kind"`
	Payload  []byte `dynamodbav:"payload"`
	Status   string `dynamodbav:"status"`
	Attempts int    `dynamodbav:"attempts"`
	Reason   string `dynamodbav:"reason,omitempty"`
}

func encodeEffect(e idempotency.EffectState) types.AttributeValue {
	v, err := attributevalue.Marshal(effectItem{Name: e.Name, Kind: e.Kind, Payload: e.Payload, Status: string(e.Status), Attempts: e.Attempts, Reason: e.Reason})
	if err != nil {
		panic(err) // strings, bytes and integers always marshal
	}
	return v
}

// decodeEffects are the record's effects in the order they were
// declared, and false if item holds effects this package did not write.
func decodeEffects(item map[string]types.AttributeValue) ([]idempotency.EffectState, bool) {
	var out []idempotency.EffectState
	for i := 0; ; i++ {
		v, ok := item[effectAttribute(i)]
		if !ok {
			break
		}
		var e effectItem
		if err := attributevalue.Unmarshal(v, &e); err != nil || e.Name == "" {
			return nil, false
		}
		out = append(out, idempotency.EffectState{
			Effect: idempotency.Effect{Name: e.Name, Kind: e.Kind, Payload: e.Payload},
			Status: idempotency.EffectStatus(e.Status), Attempts: e.Attempts, Reason: e.Reason,
		})
	}
	held := 0
	for attr := range item {
		if strings.HasPrefix(attr, effectPrefix) {
			held++
		}
	}
	return out, held == len(out) // none out of the sequence
}

func encodeRecord(rec idempotency.Record) map[string]types.AttributeValue {
	r := recordItem{
		UserID: rec.UserID, Key: rec.Key, PayloadHash: rec.PayloadHash,
		StatusCode: rec.StatusCode, ResponseBody: string(rec.ResponseBody),
		CreatedAt: rec.CreatedAt.UTC().Format(createdAtLayout),
		Method:    rec.Method, Route: rec.Route, ExpiresAt: rec.ExpiresAt.Unix(),
		HashScheme: rec.HashScheme,
	}
	item, err := attributevalue.MarshalMap(r)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	for i, e := range rec.Effects {
		item[effectAttribute(i)] = encodeEffect(e)
	}
	return item
}

// errBadRecord reports a ledger item this package did not write.
var errBadRecord = errors.New("malformed idempotency record")

// decodeRecord reads a record, refusing an item that lacks any of its
// attributes or holds one of another type: such an item was not written
// here, and answering a retry from it would be a guess.
func decodeRecord(item map[string]types.AttributeValue) (idempotency.Record, error) {
	for name, number := range recordAttributes {
		switch item[name].(type) {
		case *types.AttributeValueMemberS:
			if !number {
				continue
			}
		case *types.AttributeValueMemberN:
			if number {
				continue
			}
		}
		return idempotency.Record{}, fmt.Errorf("%w: %s is missing or of another type", errBadRecord, name)
	}
	if v, ok := item[hashSchemeAttribute]; ok {
		if _, isString := v.(*types.AttributeValueMemberS); !isString {
			return idempotency.Record{}, fmt.Errorf("%w: %s is of another type", errBadRecord, hashSchemeAttribute)
		}
	}
	var r recordItem
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return idempotency.Record{}, fmt.Errorf("%w: %w", errBadRecord, err)
	}
	created, err := time.Parse(createdAtLayout, r.CreatedAt)
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("%w: created_at: %w", errBadRecord, err)
	}
	rec := idempotency.Record{
		UserID: r.UserID, Key: r.Key, PayloadHash: r.PayloadHash,
		StatusCode: r.StatusCode, ResponseBody: []byte(r.ResponseBody),
		Method: r.Method, Route: r.Route, CreatedAt: created, ExpiresAt: time.Unix(r.ExpiresAt, 0).UTC(),
		HashScheme: r.HashScheme,
	}
	var ok bool
	if rec.Effects, ok = decodeEffects(item); !ok {
		return idempotency.Record{}, fmt.Errorf("%w: its effects", errBadRecord)
	}
	return rec, nil
}

// hashSchemeAttribute is the one attribute a record may lack: present
// only where the digest is not RFC 8785's (idempotency.Record.HashScheme).
const hashSchemeAttribute = "hash_scheme"

// recordAttributes are the attributes every record has: true for a number,
// false for a string. attributevalue would read a number into a string
// field; a record this package wrote never has one there.
var recordAttributes = map[string]bool{
	"user_id": false, "key": false, "payload_hash": false, "status_code": true, "response_body": false,
	"created_at": false, "method": false, "route": false, "expires_at": true,
}
