// Package tally counts the API's answers by label: the one way make load
// and the race tests sum up what a run was answered. It knows only
// statuses, codes and the replay flag, nothing of how they were obtained.
package tally

import (
	"slices"
	"strconv"
)

// Answer labels an answer: its status, its error code if any, and whether
// it was a replay, such as "409 EVENT_ALREADY_EXISTS" or "201 (replayed)".
func Answer(status int, code string, replayed bool) string {
	label := strconv.Itoa(status)
	if code != "" {
		label += " " + code
	}
	if replayed {
		label += " (replayed)"
	}
	return label
}

// Counts is how many answers each label got.
type Counts map[string]int

// Labels are the labels counted, in order.
func (c Counts) Labels() []string {
	labels := make([]string, 0, len(c))
	for k := range c {
		labels = append(labels, k)
	}
	slices.Sort(labels)
	return labels
}
