package history_test

import (
	"testing"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

func TestRetained(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := func(policy string, days int) history.Event {
		return history.Event{Policy: policy, Cluster: "east", State: compliance.Compliant, Time: t0.AddDate(0, 0, days)}
	}
	cutoff := t0.AddDate(0, 0, 10)
	tests := map[string]struct {
		in   []history.Event
		want int
	}{
		"all recent":                  {[]history.Event{e("a", 10), e("a", 11)}, 2},
		"old dropped, newest kept":    {[]history.Event{e("a", 1), e("a", 2), e("a", 12)}, 1},
		"quiet series keeps newest":   {[]history.Event{e("a", 1), e("a", 2)}, 1},
		"each series its own newest":  {[]history.Event{e("a", 1), e("b", 2), e("b", 3)}, 2},
		"nothing in, nothing out":     {nil, 0},
		"at the cutoff counts as new": {[]history.Event{e("a", 10), e("a", 20)}, 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := history.Retained(tc.in, cutoff); len(got) != tc.want {
				t.Fatalf("Retained kept %d (%+v), want %d", len(got), got, tc.want)
			}
		})
	}
}
