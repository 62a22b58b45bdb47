package sender

import (
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
)

func TestWebhookURLRules(t *testing.T) {
	t.Parallel()
	dev := delivery.URLPolicy{AllowHTTPLoopback: true}
	for _, c := range []struct {
		url           string
		strict, inDev string // the start of the field error; empty: taken
	}{
		{"https://hooks.acme.example/sb", "", ""},
		{"https://user:s3cr3t@hooks.acme.example/sb", "must not carry credentials", "must not carry credentials"},
		{"https://user@hooks.acme.example/sb", "must not carry credentials", "must not carry credentials"},
		{"http://127.0.0.1:8080/hook", "must be https", ""},
		{"http://localhost:8080/hook", "must be https", ""},
		{"http://hooks.acme.example/sb", "must be https", "must be https"},
		{"ftp://hooks.acme.example/sb", "must be an absolute https URL", "must be an absolute https URL"},
	} {
		for _, run := range []struct {
			name string
			errs func() []string
			want string
		}{
			{"strict", func() []string {
				return messages(apply(&v1alpha1.SenderSpec{}, Input{WebhookURL: &c.url}, delivery.URLPolicy{}))
			}, c.strict},
			{"dev", func() []string { return messages(apply(&v1alpha1.SenderSpec{}, Input{WebhookURL: &c.url}, dev)) }, c.inDev},
		} {
			errs := run.errs()
			switch {
			case run.want == "" && len(errs) != 0:
				t.Errorf("%s %q: %v", run.name, c.url, errs)
			case run.want != "" && (len(errs) != 1 || !strings.HasPrefix(errs[0], "webhookUrl: "+run.want)):
				t.Errorf("%s %q: %v, want webhookUrl: %s…", run.name, c.url, errs, run.want)
			case len(errs) == 1 && strings.Contains(errs[0], "s3cr3t"):
				t.Errorf("%s %q: the error repeats the credentials: %v", run.name, c.url, errs)
			}
		}
	}
}

func messages(errs []apperror.FieldError) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Path + ": " + e.Message
	}
	return out
}

// Receiving asked of a sender with no email address is ignored, as it is without a verified
// inbound MX (spec: the request is ignored and the response shows false); a display name
// without an address is still refused.
func TestEmailReceivingWithoutAnAddressIsIgnored(t *testing.T) {
	t.Parallel()
	on := true
	spec := v1alpha1.SenderSpec{PhoneNumber: "+14155550100"}
	if errs := apply(&spec, Input{EmailReceivingEnabled: &on, EmailCatchAllEnabled: &on}, delivery.URLPolicy{}); len(errs) != 0 {
		t.Fatalf("receiving without an address: %v, want it ignored", messages(errs))
	}
	if spec.Email != nil {
		t.Fatalf("receiving without an address made an email channel: %+v", spec.Email)
	}
	name := "Acme"
	errs := messages(apply(&spec, Input{EmailFromName: &name}, delivery.URLPolicy{}))
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "emailAddress: ") {
		t.Fatalf("a display name without an address: %v, want an emailAddress error", errs)
	}
}
