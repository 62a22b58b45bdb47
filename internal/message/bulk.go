package message

import (
	"context"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// A broadcast sends through the same path as a single send: it builds one Outbound per
// recipient, CheckBulk runs the accept policies on each (a refusal fails that recipient alone),
// and Accept stores a chunk of them in the broadcast's transaction.

// BulkSender is the sender a broadcast sends as: the one named, else the project's default.
func (s *Service) BulkSender(ctx context.Context, project string, name *string) (*v1alpha1.Sender, error) {
	return s.pickSender(ctx, project, deref(name))
}

// CheckBulk runs the accept policies on o, a broadcast's message to one recipient from snd, as
// Send does after routing. Its error (an *apperror.Error for a refusal) says why that recipient
// is not sent to; a template's variables are checked against the recipient's own here.
func (s *Service) CheckBulk(ctx context.Context, o *Outbound, snd *v1alpha1.Sender) error {
	o.sender = snd
	if o.From == "" {
		o.From = snd.Address(v1alpha1.Channel(o.Channel))
	}
	for _, p := range s.acceptPolicies {
		if err := p.CheckAccept(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// Refunded says whether a message failed with code has had its charge returned (it never went).
func Refunded(code string) bool { return refunded[code] }
