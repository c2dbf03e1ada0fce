package main

import (
	"maps"
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
)

// cfnValue is a template value: a plain scalar, or an intrinsic function
// written with its short-form tag (!Ref, !GetAtt, !Sub).
type cfnValue struct {
	Tag   string // "!Ref" and so on; "" for a plain value
	Value string
}

func (v *cfnValue) UnmarshalYAML(n *yaml.Node) error {
	if n.Tag != "" && n.Tag[0] == '!' {
		v.Tag = n.Tag
	}
	return n.Decode(&v.Value)
}

type keyElement struct {
	AttributeName string `yaml:"AttributeName"`
	KeyType       string `yaml:"KeyType"`
}

type tableProps struct {
	BillingMode          string `yaml:"BillingMode"`
	AttributeDefinitions []struct {
		AttributeName string `yaml:"AttributeName"`
		AttributeType string `yaml:"AttributeType"`
	} `yaml:"AttributeDefinitions"`
	KeySchema             []keyElement `yaml:"KeySchema"`
	LocalSecondaryIndexes []struct {
		IndexName  string       `yaml:"IndexName"`
		KeySchema  []keyElement `yaml:"KeySchema"`
		Projection struct {
			ProjectionType string `yaml:"ProjectionType"`
		} `yaml:"Projection"`
	} `yaml:"LocalSecondaryIndexes"`
	TimeToLiveSpecification *struct {
		AttributeName string `yaml:"AttributeName"`
		Enabled       bool   `yaml:"Enabled"`
	} `yaml:"TimeToLiveSpecification"`
	PointInTimeRecoverySpecification struct {
		PointInTimeRecoveryEnabled bool `yaml:"PointInTimeRecoveryEnabled"`
	} `yaml:"PointInTimeRecoverySpecification"`
	DeletionProtectionEnabled cfnValue `yaml:"DeletionProtectionEnabled"`
}

type resource struct {
	Type                string    `yaml:"Type"`
	DeletionPolicy      string    `yaml:"DeletionPolicy"`
	UpdateReplacePolicy string    `yaml:"UpdateReplacePolicy"`
	Metadata            yaml.Node `yaml:"Metadata"`
	Properties          yaml.Node `yaml:"Properties"`
}

type template struct {
	Parameters map[string]struct {
		Default string `yaml:"Default"`
	} `yaml:"Parameters"`
	Globals struct {
		Function struct {
			Runtime       string   `yaml:"Runtime"`
			Architectures []string `yaml:"Architectures"`
		} `yaml:"Function"`
	} `yaml:"Globals"`
	Resources map[string]resource `yaml:"Resources"`
}

type functionProps struct {
	Handler     string `yaml:"Handler"`
	CodeUri     string `yaml:"CodeUri"`
	Environment struct {
		Variables map[string]cfnValue `yaml:"Variables"`
	} `yaml:"Environment"`
	LoggingConfig struct {
		LogFormat string `yaml:"LogFormat"`
	} `yaml:"LoggingConfig"`
	Policies []struct {
		Statement []struct {
			Action   []string `yaml:"Action"`
			Resource cfnValue `yaml:"Resource"`
		} `yaml:"Statement"`
	} `yaml:"Policies"`
}

func loadTemplate(t *testing.T) template {
	t.Helper()
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl template
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatalf("parse template.yaml: %v", err)
	}
	return tpl
}

func decode[T any](t *testing.T, n yaml.Node) T {
	t.Helper()
	var v T
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTemplateFunction(t *testing.T) {
	tpl := loadTemplate(t)
	fn, ok := tpl.Resources["SyncEventsFunction"]
	if !ok || fn.Type != "AWS::Serverless::Function" {
		t.Fatalf("no SyncEventsFunction (%+v)", fn)
	}
	props := decode[functionProps](t, fn.Properties)
	meta := decode[map[string]string](t, fn.Metadata)
	if props.Handler != "bootstrap" || tpl.Globals.Function.Runtime != "provided.al2023" ||
		!slices.Equal(tpl.Globals.Function.Architectures, []string{"arm64"}) || meta["BuildMethod"] != "makefile" {
		t.Fatalf("handler %q, runtime %q, architectures %v, build %q", props.Handler, tpl.Globals.Function.Runtime,
			tpl.Globals.Function.Architectures, meta["BuildMethod"])
	}
	if props.LoggingConfig.LogFormat != "JSON" {
		t.Fatalf("log format %q", props.LoggingConfig.LogFormat)
	}

	vars := props.Environment.Variables
	if got, want := slices.Sorted(maps.Keys(vars)), slices.Sorted(slices.Values(config.Variables)); !slices.Equal(got, want) {
		t.Fatalf("environment variables %v, the code reads %v", got, want)
	}
	if vars[config.EnvIdempotencyTable] != (cfnValue{"!Ref", "IdempotencyTable"}) || vars[config.EnvEventsTable] != (cfnValue{"!Ref", "EventsTable"}) {
		t.Fatalf("table variables %+v %+v", vars[config.EnvIdempotencyTable], vars[config.EnvEventsTable])
	}
	// The configuration the template gives, parameters at their defaults and
	// tables at plausible names, must be one the code starts with.
	env := map[string]string{}
	for name, v := range vars {
		switch {
		case v.Tag == "!Ref" && tpl.Resources[v.Value].Type != "":
			env[name] = v.Value + "-generated-name"
		case v.Tag == "!Ref":
			env[name] = tpl.Parameters[v.Value].Default
		default:
			env[name] = v.Value
		}
	}
	if _, err := config.Load(func(k string) string { return env[k] }); err != nil {
		t.Fatalf("the template's configuration does not start: %v", err)
	}
}

// TestTemplatePolicyIsLeastPrivilege: exactly the item actions the code's
// calls need (TransactWriteItems is authorised per item, as PutItem), on
// exactly its tables.
func TestTemplatePolicyIsLeastPrivilege(t *testing.T) {
	props := decode[functionProps](t, loadTemplate(t).Resources["SyncEventsFunction"].Properties)
	got := map[string][]string{}
	for _, p := range props.Policies {
		for _, s := range p.Statement {
			got[s.Resource.Tag+" "+s.Resource.Value] = append(got[s.Resource.Tag+" "+s.Resource.Value], s.Action...)
		}
	}
	want := map[string][]string{
		"!GetAtt IdempotencyTable.Arn":                         {"dynamodb:PutItem", "dynamodb:GetItem"},
		"!GetAtt EventsTable.Arn":                              {"dynamodb:PutItem"},
		"!Sub ${EventsTable.Arn}/index/" + ddb.ByReceivedIndex: {"dynamodb:Query"},
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("policy grants %v, want %v", got, want)
	}
}

func TestTemplateTablesMatchTheCode(t *testing.T) {
	tpl := loadTemplate(t)
	for name, def := range map[string]ddb.Table{"IdempotencyTable": ddb.LedgerTable, "EventsTable": ddb.EventsTable} {
		t.Run(name, func(t *testing.T) {
			res := tpl.Resources[name]
			if res.Type != "AWS::DynamoDB::Table" || res.DeletionPolicy != "Retain" || res.UpdateReplacePolicy != "Retain" {
				t.Fatalf("type %q, deletion %q, replace %q", res.Type, res.DeletionPolicy, res.UpdateReplacePolicy)
			}
			props := decode[tableProps](t, res.Properties)
			want := def.CreateTableInput(name)
			if props.BillingMode != string(want.BillingMode) {
				t.Errorf("billing %q, want %q", props.BillingMode, want.BillingMode)
			}
			gotAttrs, wantAttrs := map[string]string{}, map[string]string{}
			for _, a := range props.AttributeDefinitions {
				gotAttrs[a.AttributeName] = a.AttributeType
			}
			for _, a := range want.AttributeDefinitions {
				wantAttrs[*a.AttributeName] = string(a.AttributeType)
			}
			if !maps.Equal(gotAttrs, wantAttrs) {
				t.Errorf("attributes %v, want %v", gotAttrs, wantAttrs)
			}
			var wantKeys []keyElement
			for _, k := range want.KeySchema {
				wantKeys = append(wantKeys, keyElement{*k.AttributeName, string(k.KeyType)})
			}
			if !slices.Equal(props.KeySchema, wantKeys) {
				t.Errorf("key schema %v, want %v", props.KeySchema, wantKeys)
			}
			if len(props.LocalSecondaryIndexes) != len(want.LocalSecondaryIndexes) {
				t.Fatalf("%d local indexes, want %d", len(props.LocalSecondaryIndexes), len(want.LocalSecondaryIndexes))
			}
			for i, ix := range want.LocalSecondaryIndexes {
				got := props.LocalSecondaryIndexes[i]
				var keys []keyElement
				for _, k := range ix.KeySchema {
					keys = append(keys, keyElement{*k.AttributeName, string(k.KeyType)})
				}
				if got.IndexName != *ix.IndexName || !slices.Equal(got.KeySchema, keys) || got.Projection.ProjectionType != string(ix.Projection.ProjectionType) {
					t.Errorf("index %+v, want %s %v %s", got, *ix.IndexName, keys, ix.Projection.ProjectionType)
				}
			}
			switch ttl := props.TimeToLiveSpecification; {
			case def.TTLAttribute == "" && ttl != nil:
				t.Errorf("TTL on %s, the code has none", ttl.AttributeName)
			case def.TTLAttribute != "" && (ttl == nil || !ttl.Enabled || ttl.AttributeName != def.TTLAttribute):
				t.Errorf("TTL %+v, want enabled on %s", ttl, def.TTLAttribute)
			}
			if !props.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled {
				t.Error("point-in-time recovery is off")
			}
			if props.DeletionProtectionEnabled != (cfnValue{"!Ref", "DeletionProtection"}) {
				t.Errorf("deletion protection %+v, want the DeletionProtection parameter", props.DeletionProtectionEnabled)
			}
		})
	}
}
