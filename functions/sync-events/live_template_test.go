package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/poke"
)

// TestTemplateLiveSyncIsTheCodes holds the template's live sync to the
// code: the stream mappings pass what eventstore.HeadRecordFilter passes
// (make run's stand-in applies that constant), from the events table's
// stream; the namespace is package poke's; the poke function's role may
// publish there and nowhere else, and no role may subscribe.
func TestTemplateLiveSyncIsTheCodes(t *testing.T) {
	tpl := loadTemplate(t)
	// The retention function hears the same head records.
	for _, function := range []string{"PokeFunction", "RetentionFunction"} {
		fnHeadsAreTheCodes(t, tpl, function)
	}

	ns := decode[struct {
		Name               string `yaml:"Name"`
		SubscribeAuthModes []struct {
			AuthType string `yaml:"AuthType"`
		} `yaml:"SubscribeAuthModes"`
		PublishAuthModes []struct {
			AuthType string `yaml:"AuthType"`
		} `yaml:"PublishAuthModes"`
		CodeHandlers string `yaml:"CodeHandlers"`
	}](t, tpl.Resources["LiveUsersNamespace"].Properties)
	if ns.Name != poke.Namespace || len(ns.PublishAuthModes) != 1 || ns.PublishAuthModes[0].AuthType != "AWS_IAM" ||
		len(ns.SubscribeAuthModes) != 1 || ns.SubscribeAuthModes[0].AuthType != "OPENID_CONNECT" || ns.CodeHandlers == "" {
		t.Errorf("namespace %+v: want %s, publish by IAM only, subscribe by the OIDC token, an onSubscribe handler", ns, poke.Namespace)
	}

	publishable := []cfnValue{{"!GetAtt", "LiveUsersNamespace.ChannelNamespaceArn"}, {"!GetAtt", "LiveSpacesNamespace.ChannelNamespaceArn"}}
	for name, res := range tpl.Resources {
		if res.Type != "AWS::IAM::Role" {
			continue
		}
		role := decode[struct {
			Policies []struct {
				PolicyDocument struct {
					Statement []struct {
						Action   []string  `yaml:"Action"`
						Resource yaml.Node `yaml:"Resource"`
					} `yaml:"Statement"`
				} `yaml:"PolicyDocument"`
			} `yaml:"Policies"`
		}](t, res.Properties)
		for _, p := range role.Policies {
			for _, st := range p.PolicyDocument.Statement {
				var resources []cfnValue
				if st.Resource.Kind == yaml.SequenceNode {
					resources = decode[[]cfnValue](t, st.Resource)
				} else {
					resources = []cfnValue{decode[cfnValue](t, st.Resource)}
				}
				for _, a := range st.Action {
					if !strings.HasPrefix(a, "appsync:") {
						continue
					}
					if name != "PokeFunctionRole" || a != "appsync:EventPublish" || !slices.Equal(resources, publishable) {
						t.Errorf("%s grants %s on %+v: only the poke function may publish, on the two namespaces", name, a, resources)
					}
				}
			}
		}
	}
}

// fnHeadsAreTheCodes: function's stream event reads the events table's
// stream through eventstore.HeadRecordFilter.
func fnHeadsAreTheCodes(t *testing.T, tpl template, function string) {
	t.Helper()
	fn := decode[struct {
		Role   cfnValue `yaml:"Role"`
		Events map[string]struct {
			Type       string `yaml:"Type"`
			Properties struct {
				Stream           cfnValue `yaml:"Stream"`
				StartingPosition string   `yaml:"StartingPosition"`
				FilterCriteria   struct {
					Filters []struct {
						Pattern string `yaml:"Pattern"`
					} `yaml:"Filters"`
				} `yaml:"FilterCriteria"`
			} `yaml:"Properties"`
		} `yaml:"Events"`
	}](t, tpl.Resources[function].Properties)
	heads, ok := fn.Events["Heads"]
	if !ok || heads.Type != "DynamoDB" || heads.Properties.Stream != (cfnValue{"!GetAtt", "EventsTable.StreamArn"}) || len(heads.Properties.FilterCriteria.Filters) != 1 {
		t.Fatalf("%s's stream event: %+v", function, fn.Events)
	}
	var got, want any
	if err := json.Unmarshal([]byte(heads.Properties.FilterCriteria.Filters[0].Pattern), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(eventstore.HeadRecordFilter), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: filter %v, want eventstore.HeadRecordFilter %v", function, got, want)
	}
}
