package main

import (
	"context"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.yaml.in/yaml/v3"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/retention"
)

// The function starts only with a table and a whole number of days.
func TestPolicyFrom(t *testing.T) {
	tests := []struct {
		table, days string
		want        time.Duration
		ok          bool
	}{
		{"events", "30", 30 * 24 * time.Hour, true},
		{"events", "1", 24 * time.Hour, true},
		{"events", "0", 0, false},
		{"events", "-3", 0, false},
		{"events", "1.5", 0, false},
		{"events", "+30", 0, false},
		{"events", "030", 0, false},
		{"events", "", 0, false},
		{"events", "36501", 0, false},
		{"", "30", 0, false},
	}
	for _, tt := range tests {
		env := map[string]string{"EVENTS_TABLE": tt.table, config.EnvEventRetentionDays: tt.days}
		p, err := policyFrom(func(k string) string { return env[k] })
		if (err == nil) != tt.ok || p.Keep != tt.want || (tt.ok && p.Limit != maxRemovedPerStream) {
			t.Errorf("table %q, days %q: %+v, %v; want keep %v, ok %v", tt.table, tt.days, p, err, tt.want, tt.ok)
		}
	}
}

// The template's EventRetentionDays admits exactly what the function
// takes, and 0, which makes no function (the condition RetainEvents); the
// function is handed the parameter as EVENT_RETENTION_DAYS.
func TestTemplateRetentionDaysIsWhatTheFunctionTakes(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Parameters map[string]struct {
			AllowedPattern string `yaml:"AllowedPattern"`
			Default        string `yaml:"Default"`
		} `yaml:"Parameters"`
		Resources map[string]struct {
			Condition  string    `yaml:"Condition"`
			Properties yaml.Node `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	param, fn := tpl.Parameters["EventRetentionDays"], tpl.Resources["RetentionFunction"]
	var props struct {
		Environment struct {
			Variables map[string]yaml.Node `yaml:"Variables"`
		} `yaml:"Environment"`
	}
	if err := fn.Properties.Decode(&props); err != nil {
		t.Fatal(err)
	}
	if v := props.Environment.Variables[config.EnvEventRetentionDays]; fn.Condition != "RetainEvents" || v.Tag != "!Ref" || v.Value != "EventRetentionDays" || param.Default != "0" {
		t.Fatalf("RetentionFunction: condition %q, %s %s %s; default %q", fn.Condition, config.EnvEventRetentionDays, v.Tag, v.Value, param.Default)
	}
	pattern := regexp.MustCompile(param.AllowedPattern)
	values := []string{"00", "01", "-1", "+1", "1.5", "1e3", " 1", "1 ", "x", "", "36501", "99999", "100000"}
	for n := 0; n <= 36500; n++ {
		values = append(values, strconv.Itoa(n))
	}
	for _, value := range values {
		env := map[string]string{"EVENTS_TABLE": "events", config.EnvEventRetentionDays: value}
		_, err := policyFrom(func(k string) string { return env[k] })
		if admitted, takes := pattern.MatchString(value), err == nil || value == "0"; admitted != takes {
			t.Errorf("%q: the template admits it: %v; the function takes it (or 0, no function): %v (%v)", value, admitted, takes, err)
		}
	}
}

// The function's log line holds counts and the cause of a failure, never
// a stream's id, when trimming works and when DynamoDB fails it.
func TestHandlerLogsNoStreamIDs(t *testing.T) {
	b := ddbtest.Start(t)
	trimmer := eventstore.Table{Client: b.Client, Name: b.Tables.Events}
	var out strings.Builder
	fn := handler(trimmer, retention.Policy{Keep: time.Hour, Limit: 10}, slog.New(slog.NewJSONHandler(&out, nil)))
	img := map[string]events.DynamoDBAttributeValue{
		"user_id": events.NewStringAttribute("secret-user"), "event_id": events.NewStringAttribute("head"), "seq": events.NewNumberAttribute("3"),
	}
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{NewImage: img}}}}
	if err := fn(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	b.Transport.Inject(ddbtest.Fault{Kind: ddbtest.Refused, Times: 100})
	if err := fn(context.Background(), batch); err == nil {
		t.Fatal("a batch whose trims fail succeeded")
	}
	if strings.Contains(out.String(), "secret-user") || !strings.Contains(out.String(), `"streams":1`) || !strings.Contains(out.String(), "retried") {
		t.Errorf("log: %s", out.String())
	}
}
