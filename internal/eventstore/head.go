package eventstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ReadHead reads stream's head with strong consistency.
func (t Table) ReadHead(ctx context.Context, stream string) (Head, error) {
	item, err := t.get(ctx, stream, HeadID, "the head")
	if err != nil {
		return Head{}, err
	}
	return decodeHead(item)
}

// headFrom is the head a failed condition returned (item), or, from a
// backend that returns no item with a failed transactional condition,
// the head read again.
func (t Table) headFrom(ctx context.Context, stream string, item map[string]types.AttributeValue) (Head, error) {
	if len(item) == 0 {
		return t.ReadHead(ctx, stream)
	}
	return decodeHead(item)
}

// MoveHead is the write that moves stream's head from sequence number
// from to next, conditioned on the head being at from (no head item at
// all for 0), and returning the head item if it is not, so that the
// writer learns the real head without another call. A write that may
// be accepted instead (yieldAt not zero) is also conditioned on the
// head not yielding to the sequencer at yieldAt (Head.YieldUntil).
func (t Table) MoveHead(stream string, from uint64, next Head, yieldAt time.Time) types.TransactWriteItem {
	put := &types.Put{
		TableName:                           aws.String(t.Name),
		Item:                                encodeHead(stream, next),
		ExpressionAttributeNames:            map[string]string{"#id": attrID},
		ConditionExpression:                 aws.String("attribute_not_exists(#id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if from == 0 {
		return types.TransactWriteItem{Put: put}
	}
	put.ExpressionAttributeNames = map[string]string{"#seq": attrSeq}
	put.ConditionExpression = aws.String("#seq = :from")
	put.ExpressionAttributeValues = map[string]types.AttributeValue{":from": N(from)}
	if !yieldAt.IsZero() {
		put.ExpressionAttributeNames["#yield"] = AttrHeadYield
		put.ConditionExpression = aws.String("#seq = :from AND (attribute_not_exists(#yield) OR #yield <= :at)")
		put.ExpressionAttributeValues[":at"] = Millis(yieldAt)
	}
	return types.TransactWriteItem{Put: put}
}
