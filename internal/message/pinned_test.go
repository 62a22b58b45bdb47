package message

import (
	"slices"
	"testing"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// A retry of a message whose last call's outcome is unknown goes only to the Provider called:
// another could send it a second time. Once that Provider proved it did not take it, or before
// any call, the whole route is tried again.
func TestARetryOfAnUnknownOutcomeStaysWithItsProvider(t *testing.T) {
	t.Parallel()
	a, b, gone := "acme/carrier-a", "acme/carrier-b", "acme/gone"
	routes := []Route{{Provider: a}, {Provider: b}}
	for _, c := range []struct {
		name string
		m    db.Message
		want []string
	}{
		{"queued, never called", db.Message{Status: "queued"}, []string{a, b}},
		{"the second's call unknown", db.Message{Status: "sending", Provider: &b}, []string{b}},
		{"the second refused it", db.Message{Status: "sending", Provider: &b, ProviderRefused: true}, []string{a, b}},
		{"a Provider no longer in the route", db.Message{Status: "sending", Provider: &gone}, []string{a, b}},
	} {
		var got []string
		for _, r := range pinned(c.m, routes) {
			got = append(got, r.Provider)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: tries %v, want %v", c.name, got, c.want)
		}
	}
}
