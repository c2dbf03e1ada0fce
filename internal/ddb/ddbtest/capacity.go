package ddbtest

import (
	"context"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Capacity is what DynamoDB says the calls of a client consumed: every
// call asks for ReturnConsumedCapacity INDEXES, and the units each answer
// reports are added up per operation. The production code never asks (it
// would only make its answers longer); tests measure with a client of
// their own, MeasureCapacity's, which sends the same requests otherwise.
type Capacity struct {
	mu     sync.Mutex
	ops    map[string]OpCapacity
	tables map[string]OpCapacity // units only: a call may name several tables
}

// OpCapacity is the capacity the calls of one operation consumed.
type OpCapacity struct {
	// Calls is the number of calls made, answered or not.
	Calls int
	// Reported is the number of calls whose answer said what it consumed.
	// DynamoDB reports nothing with an error (a cancelled transaction
	// included), and some backends report nothing at all.
	Reported int
	// ReadUnits and WriteUnits are the units the answers reported: read
	// request units for reads (GetItem, Query, BatchGetItem,
	// TransactGetItems, Scan), write request units for writes.
	ReadUnits, WriteUnits float64
	// GlobalIndexWriteUnits is the part of WriteUnits spent on global
	// secondary indexes, which live on partitions of their own (ByTable's
	// only, where the backend reports it).
	GlobalIndexWriteUnits float64
}

// MeasureCapacity returns a client like client, on the same transport (so
// Transport still counts its calls and injects its faults), whose calls
// ask for their consumed capacity, and the Capacity they add up in.
func MeasureCapacity(client *dynamodb.Client) (*dynamodb.Client, *Capacity) {
	c := &Capacity{ops: map[string]OpCapacity{}, tables: map[string]OpCapacity{}}
	measured := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("ConsumedCapacity", c.handle), middleware.Before)
		})
	})
	return measured, c
}

func (c *Capacity) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	in.Parameters = askForCapacity(in.Parameters)
	out, md, err := next.HandleInitialize(ctx, in)
	op := middleware.GetOperationName(ctx)
	var reported []types.ConsumedCapacity
	if err == nil {
		reported = consumed(out.Result)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.ops[op]
	o.Calls++
	if len(reported) > 0 {
		o.Reported++
	}
	for _, cc := range reported {
		units := deref(cc.CapacityUnits)
		r, w := deref(cc.ReadCapacityUnits), deref(cc.WriteCapacityUnits)
		if r == 0 && w == 0 {
			if isWrite(op) {
				w = units
			} else {
				r = units
			}
		}
		o.ReadUnits += r
		o.WriteUnits += w
		table := c.tables[deref(cc.TableName)]
		table.ReadUnits += r
		table.WriteUnits += w
		if isWrite(op) {
			for _, gsi := range cc.GlobalSecondaryIndexes {
				table.GlobalIndexWriteUnits += deref(gsi.CapacityUnits) + deref(gsi.WriteCapacityUnits)
			}
		}
		c.tables[deref(cc.TableName)] = table
	}
	c.ops[op] = o
	return out, md, err
}

// askForCapacity is a copy of the input that asks for its consumed
// capacity, in all and per index (INDEXES); the caller's own input is
// left as it was.
func askForCapacity(params any) any {
	const total = types.ReturnConsumedCapacityIndexes // the total, and each index's
	switch in := params.(type) {
	case *dynamodb.TransactWriteItemsInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.TransactGetItemsInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.GetItemInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.QueryInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.BatchGetItemInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.PutItemInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.UpdateItemInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.DeleteItemInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	case *dynamodb.ScanInput:
		cp := *in
		cp.ReturnConsumedCapacity = total
		return &cp
	}
	return params
}

// consumed is the capacity an answer reports.
func consumed(result any) []types.ConsumedCapacity {
	one := func(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
		if cc == nil {
			return nil
		}
		return []types.ConsumedCapacity{*cc}
	}
	switch out := result.(type) {
	case *dynamodb.TransactWriteItemsOutput:
		return out.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		return out.ConsumedCapacity
	case *dynamodb.BatchGetItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(out.ConsumedCapacity)
	}
	return nil
}

func isWrite(op string) bool {
	switch op {
	case "TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem":
		return true
	}
	return false
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Reset forgets what was measured so far.
func (c *Capacity) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = map[string]OpCapacity{}
	c.tables = map[string]OpCapacity{}
}

// ByTable is the units measured since the last Reset, per table (their
// Calls and Reported are 0: one call may consume on several tables).
func (c *Capacity) ByTable() map[string]OpCapacity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.tables)
}

// ByOperation is what was measured since the last Reset, per operation.
func (c *Capacity) ByOperation() map[string]OpCapacity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.ops)
}

// Total is what every operation consumed since the last Reset.
func (c *Capacity) Total() OpCapacity {
	var t OpCapacity
	for _, o := range c.ByOperation() {
		t.Calls += o.Calls
		t.Reported += o.Reported
		t.ReadUnits += o.ReadUnits
		t.WriteUnits += o.WriteUnits
	}
	return t
}
