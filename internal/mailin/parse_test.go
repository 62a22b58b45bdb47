package mailin

import (
	"slices"
	"testing"
)

func TestMsgIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field string
		want  []string
	}{
		{"<a@example.org>", []string{"a@example.org"}},
		{" <a@example.org>\r\n <b@example.org> (comment) <c@example.org>", []string{"a@example.org", "b@example.org", "c@example.org"}},
		{"a@example.org b@example.org", []string{"a@example.org", "b@example.org"}},
		{"<>", nil},
		{"<unclosed@example.org", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := msgIDs(tt.field); !slices.Equal(got, tt.want) {
			t.Errorf("msgIDs(%q) = %q, want %q", tt.field, got, tt.want)
		}
	}
}
