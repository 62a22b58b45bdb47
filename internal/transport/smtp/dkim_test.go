package smtp_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

// TestSendSignsWithBothKeys: a domain with an Ed25519 key beside its RSA key (RFC 8463) signs
// each mail twice, each signature under its own selector, and both verify against the records
// the domain publishes; a receiver that knows only one key type still finds its signature valid.
func TestSendSignsWithBothKeys(t *testing.T) {
	t.Parallel()
	rsaKey, edKey := testKeys(t)
	records := map[string]string{
		rsaKey.selector + "._domainkey.example.com": rsaKey.record,
		edKey.selector + "._domainkey.example.com":  edKey.record,
	}
	s := smtptest.NewServer(t, smtptest.Options{})
	m := outbound()
	m.DKIM = &transport.DKIMKey{Domain: "example.com", Selector: rsaKey.selector, Signer: rsaKey.signer,
		Also: &transport.DKIMKey{Domain: "example.com", Selector: edKey.selector, Signer: edKey.signer}}
	_, got := sendOne(t, s, sender(t, s, nil), m)

	if n := strings.Count(string(got.Data), "DKIM-Signature:"); n != 2 {
		t.Fatalf("%d DKIM-Signature fields, want 2:\n%s", n, got.Data)
	}
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(got.Data), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		if v, ok := records[name]; ok {
			return []string{v}, nil
		}
		return nil, fmt.Errorf("no TXT record for %s", name)
	}})
	if err != nil || len(verifs) != 2 {
		t.Fatalf("verify: %d signatures, %v", len(verifs), err)
	}
	algorithms := map[string]bool{}
	for _, v := range verifs {
		if v.Err != nil || v.Domain != "example.com" {
			t.Errorf("signature of %s: %v", v.Domain, v.Err)
		}
	}
	for _, line := range strings.Split(string(got.Data), "\r\n") {
		if strings.HasPrefix(line, "DKIM-Signature:") || strings.HasPrefix(line, " ") {
			for _, a := range []string{"a=rsa-sha256", "a=ed25519-sha256"} {
				if strings.Contains(line, a) {
					algorithms[a] = true
				}
			}
		}
	}
	if !algorithms["a=rsa-sha256"] || !algorithms["a=ed25519-sha256"] {
		t.Errorf("algorithms signed with: %v, want rsa-sha256 and ed25519-sha256", algorithms)
	}

	// A receiver that has only the RSA record (an Ed25519 record not published yet) still passes
	// the mail on its RSA signature.
	verifs, _ = dkim.VerifyWithOptions(bytes.NewReader(got.Data), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		if name == rsaKey.selector+"._domainkey.example.com" {
			return []string{rsaKey.record}, nil
		}
		return nil, fmt.Errorf("no TXT record for %s", name)
	}})
	passed := 0
	for _, v := range verifs {
		if v.Err == nil {
			passed++
		}
	}
	if passed != 1 {
		t.Errorf("with the RSA record alone, %d signatures pass, want 1", passed)
	}
}
