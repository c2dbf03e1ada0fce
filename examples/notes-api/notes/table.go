package notes

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The notes table's attributes. The partition key is the caller, so each
// user's notes are a partition of their own and a request reaches only
// its caller's.
const (
	UserAttr    = "user_id" // partition key (S): the token's sub
	IDAttr      = "id"      // sort key (S): the note's UUID, lowercase
	TitleAttr   = "title"
	BodyAttr    = "body"
	VersionAttr = "version" // N: 1 when created, one more at every PATCH
)

// TableInput is the request that creates a notes table called name,
// billed on demand: the table the template's NotesTable is.
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(UserAttr), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(IDAttr), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(UserAttr), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(IDAttr), AttributeType: types.ScalarAttributeTypeS},
		},
	}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// key is the item key of the caller's note id.
func key(user, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{UserAttr: str(user), IDAttr: str(id)}
}
