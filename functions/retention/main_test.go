package main

import (
	"testing"
	"time"
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
		{"events", "", 0, false},
		{"events", "36501", 0, false},
		{"", "30", 0, false},
	}
	for _, tt := range tests {
		env := map[string]string{"EVENTS_TABLE": tt.table, EnvDays: tt.days}
		p, err := policyFrom(func(k string) string { return env[k] })
		if (err == nil) != tt.ok || p.Keep != tt.want || (tt.ok && p.Limit != maxRemovedPerStream) {
			t.Errorf("table %q, days %q: %+v, %v; want keep %v, ok %v", tt.table, tt.days, p, err, tt.want, tt.ok)
		}
	}
}
