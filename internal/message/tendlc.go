package message

import (
	"context"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/tendlc"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// TenDLC is what the send path asks of 10DLC registration (tendlc.Service): whether a project may
// send SMS to +1 numbers, and what is left to register when it may not.
type TenDLC interface {
	Approved(ctx context.Context, project string, testMode bool) (bool, error)
	Remaining(ctx context.Context, project string, testMode bool, senderID string) ([]tendlc.Step, error)
}

// SetTenDLC makes SMS to +1 numbers need an approved 10DLC campaign: at accept (403
// ten_dlc_required), and before a WhatsApp message falls back to SMS (TEN_DLC_REQUIRED).
func (s *Service) SetTenDLC(t TenDLC) {
	s.acceptPolicies = append(s.acceptPolicies, tenDLCRegistered{registrations: t})
	for i, p := range s.fallbackPolicies {
		if _, ok := p.(tenDLCApproved); ok {
			s.fallbackPolicies[i] = tenDLCApproved{registrations: t}
		}
	}
}

// tenDLCDestination says whether an SMS to `to` needs 10DLC: every +1 number does (spec: Limits,
// Sending limits 5), the US's and the other NANP countries' alike, as carriers apply it to
// traffic from US long codes.
func tenDLCDestination(channel, to string) bool {
	return (channel == string(v1alpha1.ChannelSMS) || channel == string(v1alpha1.ChannelSMSOneway)) && strings.HasPrefix(to, "+1")
}

// tenDLCRegistered refuses an SMS to a +1 number when the project has no approved 10DLC
// campaign in the key's mode. v2 says what is left to register, in order, and which of the
// sender's channels reach the person without 10DLC.
type tenDLCRegistered struct{ registrations TenDLC }

func (p tenDLCRegistered) CheckAccept(ctx context.Context, o *Outbound) error {
	if !tenDLCDestination(o.Channel, o.To) {
		return nil
	}
	ok, err := p.registrations.Approved(ctx, o.Project, o.TestMode)
	if err != nil || ok {
		return err
	}
	e := apperror.New(apperror.Forbidden, "ten_dlc_required", "SMS to +1 numbers needs a registered 10DLC brand and an approved campaign"+
		modeOf(o.TestMode)+"; see docs/10dlc.md.")
	if !o.strict {
		return e
	}
	steps, err := p.registrations.Remaining(ctx, o.Project, o.TestMode, o.Sender)
	if err != nil {
		return err
	}
	e.Message = "SMS to " + o.To + " needs a registered 10DLC brand and an approved campaign" + modeOf(o.TestMode) +
		": details.registration lists the calls that register one, in order, and details.alternatives the channels that reach the person now."
	e.Details = map[string]any{"registration": steps, "alternatives": alternatives(o)}
	return e
}

func modeOf(testMode bool) string {
	if testMode {
		return " (test keys register in the sandbox with a test key)"
	}
	return ""
}

// alternatives are the sender's active channels that reach a phone number without 10DLC, each
// with the request that sends through it.
func alternatives(o *Outbound) []map[string]any {
	out := []map[string]any{}
	if o.sender == nil {
		return out
	}
	for _, ch := range o.sender.SendableChannels() {
		if ch != v1alpha1.ChannelWhatsApp && ch != v1alpha1.ChannelVoice {
			continue
		}
		body := map[string]any{"to": o.To, "channel": string(ch)}
		entry := map[string]any{"channel": string(ch), "request": map[string]any{"method": "POST", "path": "/v2/messages", "body": body}}
		if ch == v1alpha1.ChannelWhatsApp {
			body["messageType"] = "template"
			entry["description"] = "WhatsApp starts a conversation with an approved template; inside the 24-hour window of the person's last message any message goes."
		}
		out = append(out, entry)
	}
	return out
}

// tenDLCApproved fails a fallback to SMS to a +1 number when the project has no approved 10DLC
// campaign in the message's mode. Without registrations set it lets every fallback go.
type tenDLCApproved struct{ registrations TenDLC }

func (p tenDLCApproved) CheckFallback(ctx context.Context, m db.Message, _ *v1alpha1.Sender) (*transport.Failure, error) {
	if p.registrations == nil || !tenDLCDestination(string(v1alpha1.ChannelSMS), m.Recipient) {
		return nil, nil
	}
	ok, err := p.registrations.Approved(ctx, m.Project, m.TestMode)
	if err != nil || ok {
		return nil, err
	}
	f := tenDLCRequired
	return &f, nil
}
