package webhook_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/pkg/webhook"
)

// Known vectors, computed independently (Python's hmac module) for this secret, body and time.
var (
	secret = []byte("whsec_test_secret")
	body   = []byte(`{"event":"message.delivered","data":{"status":"delivered"}}`)
	at     = time.Unix(1767225600, 0)
	v1Hex  = "df5c0f865d603b6beaafed881ac72dea139459203bcc00b74707fa05a2a044c2"
	v2Hex  = "6dbe1823e113b6466d70617cf52ce72aad512fe71f794cf58390598b60ad3c17"
)

func TestSignMatchesKnownVectors(t *testing.T) {
	t.Parallel()
	for version, want := range map[string]string{
		webhook.V1:   "t=1767225600,v1=" + v1Hex,
		webhook.V1V2: "t=1767225600,v1=" + v1Hex + ",v2=" + v2Hex,
		webhook.V2:   "t=1767225600,v2=" + v2Hex,
	} {
		got, err := webhook.Sign(secret, body, at, version)
		if err != nil || got != want {
			t.Errorf("Sign(%s) = %q, %v; want %q", version, got, err, want)
		}
	}
	if _, err := webhook.Sign(secret, body, at, "v3"); err == nil {
		t.Error("Sign with an unknown version succeeded")
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := at.Add(time.Minute)
	tests := []struct {
		name   string
		header string
		body   []byte
		secret []byte
		want   error
	}{
		{"v1", "t=1767225600,v1=" + v1Hex, body, secret, nil},
		{"v2", "t=1767225600,v2=" + v2Hex, body, secret, nil},
		{"both", "t=1767225600,v1=" + v1Hex + ",v2=" + v2Hex, body, secret, nil},
		{"spaces and upper-case hex", "t=1767225600, v2=" + fmt.Sprintf("%X", mustHex(v2Hex)), body, secret, nil},
		{"order does not matter", "v2=" + v2Hex + ",t=1767225600", body, secret, nil},
		{"v2 preferred: a wrong v2 fails even with a right v1", "t=1767225600,v1=" + v1Hex + ",v2=" + v1Hex, body, secret, webhook.ErrMismatch},
		{"tampered body", "t=1767225600,v2=" + v2Hex, []byte(`{"event":"message.failed"}`), secret, webhook.ErrMismatch},
		{"wrong secret", "t=1767225600,v1=" + v1Hex, body, []byte("other"), webhook.ErrMismatch},
		{"v2 with a moved timestamp", "t=1767225601,v2=" + v2Hex, body, secret, webhook.ErrMismatch},
		{"v2 without timestamp", "v2=" + v2Hex, body, secret, webhook.ErrTimestamp},
		{"no signature", "t=1767225600", body, secret, webhook.ErrNoSignature},
		{"empty header", "", body, secret, webhook.ErrNoSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := webhook.Verify(tt.header, tt.body, tt.secret, 5*time.Minute, now); !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyRefusesOldV2Deliveries(t *testing.T) {
	t.Parallel()
	header := "t=1767225600,v2=" + v2Hex
	if err := webhook.Verify(header, body, secret, 5*time.Minute, at.Add(6*time.Minute)); !errors.Is(err, webhook.ErrTimestamp) {
		t.Fatalf("6 minutes late: %v, want ErrTimestamp", err)
	}
	if err := webhook.Verify(header, body, secret, 0, at.Add(24*time.Hour)); err != nil {
		t.Fatalf("tolerance 0 skips the check: %v", err)
	}
}

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		fmt.Sscanf(s[2*i:2*i+2], "%02x", &b[i])
	}
	return b
}

func ExampleVerify() {
	// In an HTTP handler: read the raw body first, then verify before acting on it.
	header := "t=1767225600,v2=" + v2Hex
	err := webhook.Verify(header, body, secret, 5*time.Minute, time.Unix(1767225630, 0))
	fmt.Println(err == nil)
	// Output: true
}
