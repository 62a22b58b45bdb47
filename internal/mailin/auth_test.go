package mailin

import (
	"testing"

	"github.com/emersion/go-msgauth/dmarc"
)

func TestAligned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		domain, from string
		mode         dmarc.AlignmentMode
		want         bool
	}{
		{"example.org", "example.org", dmarc.AlignmentRelaxed, true},
		{"Example.ORG.", "example.org", dmarc.AlignmentStrict, true},
		{"mail.example.org", "example.org", dmarc.AlignmentRelaxed, true},
		{"example.org", "news.example.org", dmarc.AlignmentRelaxed, true},
		{"mail.example.org", "example.org", dmarc.AlignmentStrict, false},
		{"example.net", "example.org", dmarc.AlignmentRelaxed, false},
		// Below a public suffix, two registrations are two organizations.
		{"alice.github.io", "bob.github.io", dmarc.AlignmentRelaxed, false},
		{"shop.example.co.uk", "example.co.uk", dmarc.AlignmentRelaxed, true},
		{"", "example.org", dmarc.AlignmentRelaxed, false},
	}
	for _, tt := range tests {
		if got := aligned(tt.domain, tt.from, tt.mode); got != tt.want {
			t.Errorf("aligned(%q, %q, %s) = %v, want %v", tt.domain, tt.from, tt.mode, got, tt.want)
		}
	}
}

func TestSignatureSelectors(t *testing.T) {
	t.Parallel()
	raw := []byte("DKIM-Signature: v=1; a=ed25519-sha256; d=example.org;\r\n s=sel\r\n  one; h=from; bh=x; b=y\r\n" +
		"DKIM-Signature: v=1; d=example.net; b=z\r\nFrom: a@example.org\r\n\r\nbody\r\n")
	// Held in pieces, as read: a field runs across them.
	got := signatureSelectors(&RawMail{chunks: [][]byte{raw[:40], raw[40:]}, size: len(raw)})
	if len(got) != 2 || got[0] != "selone" || got[1] != "" {
		t.Errorf("selectors = %q, want [selone \"\"]", got)
	}
}
