package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Failures of a fallback that v2 checks before it (spec: States/Message, the v2 rows).
var (
	smsInactive = transport.Failure{Code: "CHANNEL_INACTIVE",
		Message: "WhatsApp could not deliver the message and the fallback to SMS is off: the sender's SMS connection is switched off."}
	tenDLCRequired = transport.Failure{Code: "TEN_DLC_REQUIRED",
		Message: "WhatsApp could not deliver the message, and SMS to a +1 number needs an approved 10DLC campaign."}
)

// fallBack sends a WhatsApp message its transport refused as SMS instead, when the send allows
// it (fallbackEnabled, the default), the recipient is a phone number and the sender has SMS on.
// The message keeps its id and status (queued); attempted_channels records whatsapp. It reports
// whether it took the failure over: false leaves the message to fail with the transport's error.
//
// A v2 send is checked first, as the spec says: with SMS off it fails with CHANNEL_INACTIVE, and
// to a +1 number without an approved 10DLC campaign with TEN_DLC_REQUIRED.
func (s *Service) fallBack(ctx context.Context, m db.Message, failure *transport.Failure) (bool, error) {
	if m.Channel != string(v1alpha1.ChannelWhatsApp) || classify(m.Recipient) != phoneRecipient {
		return false, nil
	}
	var opts Options
	if len(m.Options) > 0 {
		if err := json.Unmarshal(m.Options, &opts); err != nil {
			return false, fmt.Errorf("read options of message %s: %w", m.ID, err)
		}
	}
	if !opts.FallbackEnabled {
		return false, nil
	}
	var snd v1alpha1.Sender
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: m.Project, Name: m.Sender}, &snd)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read sender %s: %w", m.Sender, err)
	}
	smsOn := contains(activeChannels(&snd), v1alpha1.ChannelSMS)
	if m.APIVersion == "v2" {
		if !smsOn {
			return true, s.failWith(ctx, m, smsInactive, failure)
		}
		if strings.HasPrefix(m.Recipient, "+1") {
			ok, err := s.hasTenDLC(ctx, m.Project)
			if err != nil {
				return false, err
			}
			if !ok {
				return true, s.failWith(ctx, m, tenDLCRequired, failure)
			}
		}
	} else if !smsOn {
		return false, nil
	}
	return true, pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := db.New(tx).FallBackToSMS(ctx, db.FallBackToSMSParams{ID: m.ID, Originator: originator(&snd, v1alpha1.ChannelSMS),
			UpdatedAt: s.now().UTC()})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // already moved on: a repeated job
		}
		if err != nil {
			return fmt.Errorf("fall back to sms for message %s: %w", m.ID, err)
		}
		if _, err := s.queue.InsertTx(ctx, tx, DispatchArgs{MessageID: m.ID}, nil); err != nil {
			return fmt.Errorf("enqueue sms dispatch of message %s: %w", m.ID, err)
		}
		return nil
	})
}

// failWith fails m with the fallback's own error, keeping the provider's code of the WhatsApp
// failure that started it.
func (s *Service) failWith(ctx context.Context, m db.Message, f transport.Failure, cause *transport.Failure) error {
	f.ProviderCode = cause.ProviderCode
	return s.move(ctx, m.ID, "failed", nil, &f, nil)
}

// hasTenDLC says whether the project may send SMS to +1 numbers. 10DLC brands and campaigns are
// not modelled yet: a project verified up to its 10DLC brand counts as having a campaign.
func (s *Service) hasTenDLC(ctx context.Context, project string) (bool, error) {
	var list v1alpha1.ProjectList
	if err := s.reader.List(ctx, &list, client.InNamespace(project)); err != nil {
		return false, fmt.Errorf("read project %s: %w", project, err)
	}
	p := v1alpha1.NamespaceProject(list.Items)
	return p != nil && p.Spec.Verification == v1alpha1.VerificationTenDLCBrand, nil
}
