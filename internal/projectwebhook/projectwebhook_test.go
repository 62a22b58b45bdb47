package projectwebhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
)

// TestPutChecksTheURL: a bad URL is refused before anything is read or written (the Service
// has no clients here); in dev, plain http to loopback is taken, so only the missing events
// are reported.
func TestPutChecksTheURL(t *testing.T) {
	t.Parallel()
	strict := NewService(nil, nil)
	dev := NewService(nil, nil).WithURLPolicy(delivery.URLPolicy{AllowHTTPLoopback: true})
	for _, c := range []struct {
		url           string
		strict, inDev string // the start of the url error; empty: none
	}{
		{"https://user:s3cr3t@hooks.acme.example/v2", "must not carry credentials", "must not carry credentials"},
		{"https://@hooks.acme.example/v2", "must not carry credentials", "must not carry credentials"},
		{"http://127.0.0.1:8080/hook", "must be https", ""},
		{"http://hooks.acme.example/v2", "must be https", "must be https"},
		{"https://hooks.acme.example/v2", "", ""},
	} {
		for _, run := range []struct {
			name string
			s    *Service
			want string
		}{{"strict", strict, c.strict}, {"dev", dev, c.inDev}} {
			for _, kind := range []v1alpha1.WebhookKind{v1alpha1.WebhookKindV2, v1alpha1.WebhookKindInvitations} {
				in := PutInput{URL: &c.url}
				if kind == v1alpha1.WebhookKindInvitations {
					if run.want == "" {
						continue // valid input would be written
					}
				} else {
					in.Events = &[]string{} // missing events keep a valid URL from being written
				}
				_, _, _, err := run.s.Put(context.Background(), "p", kind, in)
				var ae *apperror.Error
				if !errors.As(err, &ae) || ae.Code != "invalid_request" {
					t.Fatalf("%s %s %q: %v, want invalid_request", run.name, kind, c.url, err)
				}
				var urlErr string
				for _, fe := range ae.Details["errors"].([]apperror.FieldError) {
					if fe.Path == "url" {
						urlErr = fe.Message
					}
				}
				if !strings.HasPrefix(urlErr, run.want) || (run.want == "") != (urlErr == "") || strings.Contains(ae.Message, "s3cr3t") {
					t.Errorf("%s %s %q: %q, want url error %q…", run.name, kind, c.url, ae.Message, run.want)
				}
			}
		}
	}
}
