package sender

import (
	"errors"
	"fmt"
	"slices"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
)

// apply validates in and writes it into spec, taking webhook URLs by the installation's rules,
// urls; it returns every invalid field.
func apply(spec *v1alpha1.SenderSpec, in Input, urls delivery.URLPolicy) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }

	if in.Name != nil {
		if n := len([]rune(*in.Name)); n < 1 || n > 100 {
			bad("name", "must be 1 to 100 characters")
		}
		spec.DisplayName = *in.Name
	}
	if in.PhoneNumber != nil {
		if !addr.IsE164(*in.PhoneNumber) {
			bad("phoneNumber", "must be an E.164 number, e.g. +14155550100")
		}
		spec.PhoneNumber = *in.PhoneNumber
	}
	if in.EnableSmsOneway != nil {
		spec.SMSOneway = &v1alpha1.Enablement{Enabled: *in.EnableSmsOneway}
	}
	if in.EnableVoice != nil {
		if *in.EnableVoice && spec.PhoneNumber == "" {
			bad("enableVoice", "voice needs a phone number provisioned for calls")
		}
		spec.Voice = &v1alpha1.Enablement{Enabled: *in.EnableVoice}
	}
	if in.SetAsDefault != nil {
		spec.Default = *in.SetAsDefault
	}

	if in.EmailAddress != nil {
		if !addr.IsEmail(*in.EmailAddress) || len(*in.EmailAddress) > 254 {
			bad("emailAddress", "must be an email address")
		}
		if spec.Email == nil {
			spec.Email = &v1alpha1.EmailSettings{}
		}
		spec.Email.Address = *in.EmailAddress
	}
	// Receiving and catch-all without an address are ignored, not refused (spec: enabling needs
	// a verified inbound MX, otherwise the request is ignored and the response shows false); a
	// display name has nothing to name.
	if in.EmailFromName != nil && spec.Email == nil {
		bad("emailAddress", "is required to set emailFromName")
	}
	if spec.Email != nil {
		if in.EmailFromName != nil {
			if len([]rune(*in.EmailFromName)) > 100 {
				bad("emailFromName", "must be up to 100 characters")
			}
			spec.Email.FromName = *in.EmailFromName
		}
		if in.EmailReceivingEnabled != nil {
			spec.Email.ReceivingEnabled = *in.EmailReceivingEnabled
		}
		if in.EmailCatchAllEnabled != nil {
			spec.Email.CatchAllEnabled = *in.EmailCatchAllEnabled
		}
	}

	if in.RemoveWebhook {
		spec.Webhook = nil
	}
	webhookFields := in.WebhookEvents != nil || in.WebhookActive != nil || in.WebhookSignatureVersion != nil
	if in.WebhookURL != nil {
		var badURL *delivery.URLError
		if _, err := urls.Check(*in.WebhookURL); errors.As(err, &badURL) {
			bad("webhookUrl", badURL.Reason)
		}
		if spec.Webhook == nil {
			// New webhooks sign with v2 (spec: Webhook signature version).
			spec.Webhook = &v1alpha1.SenderWebhook{SignatureVersion: v1alpha1.SignatureV2}
		}
		spec.Webhook.URL = *in.WebhookURL
	} else if webhookFields && spec.Webhook == nil && !in.RemoveWebhook {
		bad("webhookUrl", "is required to set up a webhook")
	}
	if spec.Webhook != nil && !in.RemoveWebhook {
		if in.WebhookEvents != nil {
			events := make([]v1alpha1.WebhookEvent, 0, len(*in.WebhookEvents))
			for i, e := range *in.WebhookEvents {
				if !slices.Contains(v1alpha1.WebhookEventNames(), e) {
					bad(fmt.Sprintf("webhookEvents[%d]", i), fmt.Sprintf("unknown event %q", e))
					continue
				}
				if !slices.Contains(events, v1alpha1.WebhookEvent(e)) {
					events = append(events, v1alpha1.WebhookEvent(e))
				}
			}
			spec.Webhook.Events = events
		}
		if in.WebhookActive != nil {
			active := *in.WebhookActive
			spec.Webhook.Active = &active
		}
		if in.WebhookSignatureVersion != nil {
			switch v := v1alpha1.SignatureVersion(*in.WebhookSignatureVersion); v {
			case v1alpha1.SignatureV1, v1alpha1.SignatureV1V2, v1alpha1.SignatureV2:
				spec.Webhook.SignatureVersion = v
			default:
				bad("webhookSignatureVersion", "must be v1, v1+v2 or v2")
			}
		}
	}
	return errs
}
