package main

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/cors"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/metrics"
)

// cfnValue is a template value: a plain scalar, or an intrinsic function
// written with its short-form tag (!Ref, !GetAtt, !Sub).
type cfnValue struct {
	Tag   string // "!Ref" and so on; "" for a plain value
	Value string
}

func (v *cfnValue) UnmarshalYAML(n *yaml.Node) error {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") { // "!!str" is YAML's own
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
	StreamSpecification       *struct {
		StreamViewType string `yaml:"StreamViewType"`
	} `yaml:"StreamSpecification"`
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
		Default        string   `yaml:"Default"`
		AllowedPattern string   `yaml:"AllowedPattern"`
		AllowedValues  []string `yaml:"AllowedValues"`
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
	Role   cfnValue `yaml:"Role"`
	Events map[string]struct {
		Type       string `yaml:"Type"`
		Properties struct {
			Path   string `yaml:"Path"`
			Method string `yaml:"Method"`
		} `yaml:"Properties"`
	} `yaml:"Events"`
}

type roleProps struct {
	ManagedPolicyArns []string `yaml:"ManagedPolicyArns"`
	Policies          []struct {
		PolicyDocument struct {
			Statement []struct {
				Action   []string `yaml:"Action"`
				Resource cfnValue `yaml:"Resource"`
			} `yaml:"Statement"`
		} `yaml:"PolicyDocument"`
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
	meta := decode[struct {
		BuildMethod string `yaml:"BuildMethod"`
	}](t, fn.Metadata)
	if props.Handler != "bootstrap" || tpl.Globals.Function.Runtime != "provided.al2023" ||
		!slices.Equal(tpl.Globals.Function.Architectures, []string{"arm64"}) || meta.BuildMethod != "makefile" {
		t.Fatalf("handler %q, runtime %q, architectures %v, build %q", props.Handler, tpl.Globals.Function.Runtime,
			tpl.Globals.Function.Architectures, meta.BuildMethod)
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

// TestTemplateRoutesAreTheRouteTable: every path of the API's route table
// has a route in API Gateway for each method HTTP commonly uses (so that
// the function answers its own 405 with Allow), the catch-all has the same
// set (for the function's JSON 404), and there is no other route.
func TestTemplateRoutesAreTheRouteTable(t *testing.T) {
	tpl := loadTemplate(t)
	props := decode[functionProps](t, tpl.Resources["SyncEventsFunction"].Properties)
	methods := []string{"DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"}
	want := map[string][]string{"/{proxy+}": methods}
	for _, r := range api.Routes() {
		method, path, _ := strings.Cut(r, " ")
		if !slices.Contains(methods, method) {
			t.Errorf("route %s: API Gateway routes are made for %v only", r, methods)
		}
		want[path] = methods
	}
	got := map[string][]string{}
	for _, ev := range props.Events {
		if ev.Type != "HttpApi" {
			t.Errorf("event of type %s", ev.Type)
		}
		got[ev.Properties.Path] = append(got[ev.Properties.Path], ev.Properties.Method)
	}
	for path := range got {
		slices.Sort(got[path])
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("the template routes %v; the route table wants %v", got, want)
	}
}

// TestTemplatePolicyIsLeastPrivilege: the function's own role grants
// exactly the item actions the code's calls need (TransactWriteItems is
// authorised per item, as PutItem) on exactly its tables, log writes to its
// own log group, and X-Ray's two actions, which take no resource.
func TestTemplatePolicyIsLeastPrivilege(t *testing.T) {
	tpl := loadTemplate(t)
	fn := decode[functionProps](t, tpl.Resources["SyncEventsFunction"].Properties)
	if fn.Role != (cfnValue{"!GetAtt", "SyncEventsFunctionRole.Arn"}) {
		t.Fatalf("the function's role is %+v, want the template's SyncEventsFunctionRole", fn.Role)
	}
	role := decode[roleProps](t, tpl.Resources["SyncEventsFunctionRole"].Properties)
	if len(role.ManagedPolicyArns) != 0 {
		t.Fatalf("managed policies %v: each grants more than the code needs", role.ManagedPolicyArns)
	}
	got := map[string][]string{}
	for _, p := range role.Policies {
		for _, s := range p.PolicyDocument.Statement {
			got[s.Resource.Tag+" "+s.Resource.Value] = append(got[s.Resource.Tag+" "+s.Resource.Value], s.Action...)
		}
	}
	want := map[string][]string{
		"!GetAtt IdempotencyTable.Arn": {"dynamodb:PutItem", "dynamodb:GetItem"},
		"!GetAtt EventsTable.Arn": {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:BatchGetItem",
			"dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem", "dynamodb:Query"},
		"!Sub ${EventsTable.Arn}/index/" + eventstore.ByReceivedIndex: {"dynamodb:Query"},
		"!GetAtt FunctionLogGroup.Arn":                                {"logs:CreateLogStream", "logs:PutLogEvents"},
		" *":                                                          {"xray:PutTraceSegments", "xray:PutTelemetryRecords"},
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("policy grants %v, want %v", got, want)
	}
}

func TestTemplateTablesMatchTheCode(t *testing.T) {
	tpl := loadTemplate(t)
	for name, def := range map[string]struct {
		table *dynamodb.CreateTableInput
		ttl   string
	}{
		"IdempotencyTable": {dynamodbstore.TableInput("IdempotencyTable"), dynamodbstore.TTLAttribute},
		"EventsTable":      {eventstore.TableInput("EventsTable"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			res := tpl.Resources[name]
			if res.Type != "AWS::DynamoDB::Table" || res.DeletionPolicy != "Retain" || res.UpdateReplacePolicy != "Retain" {
				t.Fatalf("type %q, deletion %q, replace %q", res.Type, res.DeletionPolicy, res.UpdateReplacePolicy)
			}
			props := decode[tableProps](t, res.Properties)
			want := def.table
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
			case def.ttl == "" && ttl != nil:
				t.Errorf("TTL on %s, the code has none", ttl.AttributeName)
			case def.ttl != "" && (ttl == nil || !ttl.Enabled || ttl.AttributeName != def.ttl):
				t.Errorf("TTL %+v, want enabled on %s", ttl, def.ttl)
			}
			switch st := props.StreamSpecification; {
			case want.StreamSpecification == nil && st != nil:
				t.Errorf("a stream (%s), the code has none", st.StreamViewType)
			case want.StreamSpecification != nil && (st == nil || st.StreamViewType != string(want.StreamSpecification.StreamViewType)):
				t.Errorf("stream %+v, want %s", st, want.StreamSpecification.StreamViewType)
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

// alarmProps is what an alarm reads: one metric, or metric math over several.
type alarmProps struct {
	Namespace  string `yaml:"Namespace"`
	MetricName string `yaml:"MetricName"`
	Dimensions []struct {
		Name  string   `yaml:"Name"`
		Value cfnValue `yaml:"Value"`
	} `yaml:"Dimensions"`
	Metrics []struct {
		MetricStat *struct {
			Metric struct {
				Namespace  string `yaml:"Namespace"`
				MetricName string `yaml:"MetricName"`
			} `yaml:"Metric"`
		} `yaml:"MetricStat"`
	} `yaml:"Metrics"`
	AlarmActions []cfnValue `yaml:"AlarmActions"`
}

// TestTemplateAlarmsAndDashboardReadTheCodesMetrics: every metric of the
// service's namespace that an alarm or the dashboard reads is one the code
// writes (internal/metrics), with an Outcome the code reports and its
// FunctionName; every alarm notifies the topic; the rollback alarms exist.
func TestTemplateAlarmsAndDashboardReadTheCodesMetrics(t *testing.T) {
	tpl := loadTemplate(t)
	emitted := map[string]bool{}
	for _, m := range metrics.All {
		emitted[m.Name] = true
	}
	alarms := 0
	for name, res := range tpl.Resources {
		if res.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		alarms++
		a := decode[alarmProps](t, res.Properties)
		if len(a.AlarmActions) != 1 || a.AlarmActions[0] != (cfnValue{"!Ref", "AlarmTopic"}) {
			t.Errorf("%s notifies %v, want AlarmTopic", name, a.AlarmActions)
		}
		if a.Namespace != metrics.Namespace {
			continue
		}
		if !emitted[a.MetricName] {
			t.Errorf("%s reads %s, which the code does not write", name, a.MetricName)
		}
		dims := map[string]cfnValue{}
		for _, d := range a.Dimensions {
			dims[d.Name] = d.Value
		}
		if dims[metrics.DimFunction] != (cfnValue{"!Ref", "SyncEventsFunction"}) || !slices.Contains(metrics.Outcomes, dims[metrics.DimOutcome].Value) || len(dims) != 2 {
			t.Errorf("%s reads dimensions %v: want FunctionName (the function) and one of the Outcomes %v", name, dims, metrics.Outcomes)
		}
	}
	if alarms < 10 {
		t.Errorf("%d alarms", alarms)
	}

	// The dashboard's body is JSON inside !Sub; its metric arrays are
	// [namespace, name, dimension, value, ...].
	dash := decode[struct {
		DashboardBody cfnValue `yaml:"DashboardBody"`
	}](t, tpl.Resources["Dashboard"].Properties)
	var body struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(dash.DashboardBody.Value), &body); err != nil {
		t.Fatalf("dashboard body: %v", err)
	}
	read, outcomes := 0, map[string]bool{}
	for _, w := range body.Widgets {
		for _, m := range w.Properties.Metrics {
			if len(m) < 2 || m[0] != metrics.Namespace {
				continue
			}
			read++
			name, _ := m[1].(string)
			if !emitted[name] {
				t.Errorf("the dashboard reads %s, which the code does not write", name)
			}
			for i := 2; i+1 < len(m); i += 2 {
				if m[i] == metrics.DimOutcome {
					o, _ := m[i+1].(string)
					outcomes[o] = true
					if !slices.Contains(metrics.Outcomes, o) {
						t.Errorf("the dashboard reads Outcome %v, which the code does not report", m[i+1])
					}
				}
				if m[i] == metrics.DimFunction && m[i+1] != "${SyncEventsFunction}" {
					t.Errorf("the dashboard reads FunctionName %v", m[i+1])
				}
			}
		}
	}
	if read == 0 {
		t.Error("the dashboard reads none of the service's metrics")
	}
	for _, o := range metrics.Outcomes {
		if !outcomes[o] {
			t.Errorf("the dashboard does not show outcome %s", o)
		}
	}
}

// TestTemplateCORSIsTheDevServers: the CORS configuration API Gateway gets
// is the policy make run's dev server answers with (internal/cors), so a
// page that works against make run works against the deployed API.
func TestTemplateCORSIsTheDevServers(t *testing.T) {
	tpl := loadTemplate(t)
	props := decode[struct {
		CorsConfiguration yaml.Node `yaml:"CorsConfiguration"`
	}](t, tpl.Resources["HttpApi"].Properties)
	n := props.CorsConfiguration
	if n.Tag != "!If" || len(n.Content) != 3 {
		t.Fatalf("CorsConfiguration is not one !If [condition, configuration, no value]: tag %q, %d items", n.Tag, len(n.Content))
	}
	got := decode[struct {
		AllowOrigins  yaml.Node `yaml:"AllowOrigins"`
		AllowMethods  []string  `yaml:"AllowMethods"`
		AllowHeaders  []string  `yaml:"AllowHeaders"`
		ExposeHeaders []string  `yaml:"ExposeHeaders"`
		MaxAge        int       `yaml:"MaxAge"`
	}](t, *n.Content[1])
	want := cors.API
	if !slices.Equal(got.AllowMethods, want.AllowMethods) || !slices.Equal(got.AllowHeaders, want.AllowHeaders) ||
		!slices.Equal(got.ExposeHeaders, want.ExposeHeaders) || got.MaxAge != want.MaxAge {
		t.Fatalf("template CORS %+v, dev server's %+v", got, want)
	}
	if got.AllowOrigins.Tag != "!Split" || !strings.Contains(fmtNode(got.AllowOrigins), "CorsAllowOrigins") {
		t.Fatalf("AllowOrigins is not the CorsAllowOrigins parameter split at commas (what the dev server's CORS_ALLOW_ORIGINS reads)")
	}
}

func fmtNode(n yaml.Node) string {
	b, _ := yaml.Marshal(&n)
	return string(b)
}

// TestTemplateDynamoDBEndpointIsLocalOnly: the DynamoDBEndpoint parameter
// takes what sam local needs (DynamoDB Local on loopback, Docker's host
// name, a container on a Docker network, env.local.json's value) and
// refuses every value that would send the function's payloads to a host
// on the internet, AWS's own endpoints included (the function reaches
// DynamoDB in AWS with no endpoint at all).
func TestTemplateDynamoDBEndpointIsLocalOnly(t *testing.T) {
	tpl := loadTemplate(t)
	p := tpl.Parameters["DynamoDBEndpoint"]
	if p.AllowedPattern == "" || p.Default != "" {
		t.Fatalf("DynamoDBEndpoint: pattern %q, default %q", p.AllowedPattern, p.Default)
	}
	pattern := regexp.MustCompile(p.AllowedPattern)
	raw, err := os.ReadFile("../../env.local.json")
	if err != nil {
		t.Fatal(err)
	}
	var local map[string]map[string]string
	if err := json.Unmarshal(raw, &local); err != nil {
		t.Fatal(err)
	}
	accept := []string{"", local["SyncEventsFunction"][config.EnvEndpoint], "http://localhost:8000", "http://127.0.0.1:8000",
		"http://[::1]:8000", "http://host.docker.internal:8000", "https://localhost:8443", "http://dynamodb-local:8000", "http://moto:5000"}
	for _, v := range accept {
		if !pattern.MatchString(v) {
			t.Errorf("DynamoDBEndpoint refuses %q, which sam local needs", v)
		}
	}
	for _, v := range []string{
		"https://dynamodb.eu-west-1.amazonaws.com", "https://dynamodb.eu-west-1.amazonaws.com:443", "http://evil.example:8000",
		"https://collector.example.com:443", "http://localhost.evil.example:8000", "http://127.0.0.1.evil.example:8000",
		"http://localhost", "http://dynamodb-local", "ftp://localhost:8000", "http://10.0.0.5:8000", "http://1234:8000",
		"http://localhost:8000/path", "http://user@localhost:8000", " http://localhost:8000", "http://localhost:8000\n",
	} {
		if pattern.MatchString(v) {
			t.Errorf("DynamoDBEndpoint accepts %q", v)
		}
	}
}

// TestTemplateNumberParametersAreWhatTheFunctionTakes: for each parameter
// the function reads as a number, the template's AllowedPattern admits a
// value exactly when config.Load takes it, so that a stack never deploys
// with a value the function refuses at start (every invocation failing),
// and no value the function takes is refused at deploy.
func TestTemplateNumberParametersAreWhatTheFunctionTakes(t *testing.T) {
	tpl := loadTemplate(t)
	fn := decode[functionProps](t, tpl.Resources["SyncEventsFunction"].Properties)
	values := []string{"0", "1", "9", "10", "60", "9999", "10000", "10001", "99999", "100000", "100001", "1000000",
		"00", "01", "-1", "+1", "1.5", "1e3", " 1", "1 ", "x", ""}
	checked := 0
	for env, v := range fn.Environment.Variables {
		p, ok := tpl.Parameters[v.Value]
		if v.Tag != "!Ref" || !ok || !strings.HasSuffix(env, "_PER_SECOND") && !strings.HasSuffix(env, "_BURST") {
			continue
		}
		checked++
		pattern := regexp.MustCompile(p.AllowedPattern)
		for _, value := range values {
			_, err := config.Load(func(name string) string {
				switch name {
				case env:
					return value
				case config.EnvIdempotencyTable, config.EnvEventsTable:
					return "table"
				}
				return ""
			})
			// An empty value is the default to the function; CloudFormation
			// holds a parameter's Default instead.
			takes := err == nil && value != ""
			if pattern.MatchString(value) != takes {
				t.Errorf("%s (%s): the template admits %q: %v; the function takes it: %v (%v)", v.Value, env, value, pattern.MatchString(value), takes, err)
			}
		}
	}
	if checked != 4 {
		t.Fatalf("checked %d rate parameters, want 4", checked)
	}
}

// TestTemplateSpaceWritesIsWhatTheFunctionTakes: the SpaceWrites
// parameter, handed to the function as SPACE_WRITES, admits exactly the
// values config.Load takes, its default the busy-space path.
func TestTemplateSpaceWritesIsWhatTheFunctionTakes(t *testing.T) {
	tpl := loadTemplate(t)
	fn := decode[functionProps](t, tpl.Resources["SyncEventsFunction"].Properties)
	if v := fn.Environment.Variables[config.EnvSpaceWrites]; v != (cfnValue{"!Ref", "SpaceWrites"}) {
		t.Fatalf("%s is %+v", config.EnvSpaceWrites, v)
	}
	p := tpl.Parameters["SpaceWrites"]
	if p.Default != config.SpaceWritesSequenced || !slices.Equal(p.AllowedValues, []string{config.SpaceWritesSequenced, config.SpaceWritesHead}) {
		t.Fatalf("SpaceWrites: default %q, allowed %v", p.Default, p.AllowedValues)
	}
	for _, v := range append(p.AllowedValues, "Head", "on", "") {
		c, err := config.Load(func(name string) string {
			switch name {
			case config.EnvSpaceWrites:
				return v
			case config.EnvIdempotencyTable, config.EnvEventsTable:
				return "table"
			}
			return ""
		})
		if takes := err == nil && v != ""; takes != slices.Contains(p.AllowedValues, v) || (takes && c.SequencedSpaceWrites != (v == config.SpaceWritesSequenced)) {
			t.Errorf("%q: the template admits it: %v; the function: %+v, %v", v, slices.Contains(p.AllowedValues, v), c.SequencedSpaceWrites, err)
		}
	}
}
