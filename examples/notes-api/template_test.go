package main

import (
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.yaml.in/yaml/v3"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// resources are the template's resources, each left as YAML: CloudFormation's
// short-form tags (!Ref, !GetAtt) only decode into the types that expect them.
func resources(t *testing.T) map[string]yaml.Node {
	t.Helper()
	raw, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]yaml.Node `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Resources
}

// The template's ledger is the one package dynamodbstore gives, as it
// gives it, with the stream the outbox reads: keys only (outbox.Stream
// reads the record itself).
func TestTemplateLedgerIsDynamodbstores(t *testing.T) {
	var want map[string]any
	if err := yaml.Unmarshal([]byte(dynamodbstore.CloudFormation), &want); err != nil {
		t.Fatal(err)
	}
	node := resources(t)["IdempotencyTable"]
	var got map[string]any
	if err := node.Decode(&got); err != nil {
		t.Fatal(err)
	}
	props, _ := got["Properties"].(map[string]any)
	if stream := props["StreamSpecification"]; !reflect.DeepEqual(stream, map[string]any{"StreamViewType": "KEYS_ONLY"}) {
		t.Errorf("the ledger's stream is %v, want KEYS_ONLY", stream)
	}
	delete(props, "StreamSpecification")
	if !reflect.DeepEqual(any(got), want["IdempotencyTable"]) {
		t.Errorf("IdempotencyTable is\n%v\nwant dynamodbstore.CloudFormation's\n%v", got, want["IdempotencyTable"])
	}
}

type keyed struct {
	AttributeDefinitions []struct {
		AttributeName string `yaml:"AttributeName"`
		AttributeType string `yaml:"AttributeType"`
	} `yaml:"AttributeDefinitions"`
	KeySchema []struct {
		AttributeName string `yaml:"AttributeName"`
		KeyType       string `yaml:"KeyType"`
	} `yaml:"KeySchema"`
}

// The template's notes table has the keys the service writes by.
func TestTemplateNotesTableIsTableInput(t *testing.T) {
	var res struct {
		Properties keyed `yaml:"Properties"`
	}
	node := resources(t)["NotesTable"]
	if err := node.Decode(&res); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(res.Properties), describeInput(notes.TableInput("t")); !slices.Equal(got, want) {
		t.Errorf("NotesTable keys %v, want %v", got, want)
	}
}

func describe(k keyed) []string {
	var out []string
	for _, a := range k.AttributeDefinitions {
		out = append(out, "attr "+a.AttributeName+" "+a.AttributeType)
	}
	for _, e := range k.KeySchema {
		out = append(out, "key "+e.AttributeName+" "+e.KeyType)
	}
	return out
}

func describeInput(in *dynamodb.CreateTableInput) []string {
	var out []string
	for _, a := range in.AttributeDefinitions {
		out = append(out, "attr "+*a.AttributeName+" "+string(a.AttributeType))
	}
	for _, e := range in.KeySchema {
		out = append(out, "key "+*e.AttributeName+" "+string(e.KeyType))
	}
	return out
}

// The function gets the environment main reads, and exactly the routes
// the service answers.
func TestTemplateFunctionMatchesTheCode(t *testing.T) {
	var fn struct {
		Properties struct {
			Environment struct {
				Variables map[string]yaml.Node `yaml:"Variables"`
			} `yaml:"Environment"`
			Events map[string]struct {
				Type       string `yaml:"Type"`
				Properties struct {
					Path   string `yaml:"Path"`
					Method string `yaml:"Method"`
				} `yaml:"Properties"`
			} `yaml:"Events"`
		} `yaml:"Properties"`
	}
	node := resources(t)["NotesApiFunction"]
	if err := node.Decode(&fn); err != nil {
		t.Fatal(err)
	}
	var env, routes []string
	for name := range fn.Properties.Environment.Variables {
		env = append(env, name)
	}
	for _, e := range fn.Properties.Events {
		if e.Type != "HttpApi" {
			t.Errorf("an event of type %s", e.Type)
		}
		routes = append(routes, e.Properties.Method+" "+e.Properties.Path)
	}
	if want := []string{envLedgerTable, envNotesTable, envWebhook}; !slices.Equal(slices.Sorted(slices.Values(env)), want) {
		t.Errorf("environment %v, want %v", env, want)
	}
	if want := slices.Sorted(slices.Values(notes.Routes())); !slices.Equal(slices.Sorted(slices.Values(routes)), want) {
		t.Errorf("routes %v, want %v", routes, want)
	}
}
