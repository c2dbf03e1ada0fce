package main

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The effects function gets the environment main reads, and one event:
// the ledger's stream.
func TestTemplateEffectsFunctionMatchesTheCode(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources struct {
			Fn struct {
				Properties struct {
					Environment struct {
						Variables map[string]yaml.Node `yaml:"Variables"`
					} `yaml:"Environment"`
					Events map[string]struct {
						Type string `yaml:"Type"`
					} `yaml:"Events"`
				} `yaml:"Properties"`
			} `yaml:"NotesEffectsFunction"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	p := doc.Resources.Fn.Properties
	var env []string
	for name := range p.Environment.Variables {
		env = append(env, name)
	}
	if want := []string{envLedgerTable, envWebhook}; !slices.Equal(slices.Sorted(slices.Values(env)), want) {
		t.Errorf("environment %v, want %v", env, want)
	}
	if len(p.Events) != 1 || p.Events["LedgerStream"].Type != "DynamoDB" {
		t.Errorf("events %v, want the ledger's stream alone", p.Events)
	}
}
