package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/quota"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// fallBack sends a WhatsApp message its transport refused as SMS instead, when the send allows
// it (fallbackEnabled, the default), the recipient is a phone number and the sender has SMS on.
// The message keeps its id (and status queued); attempted_channels records whatsapp. It reports
// whether it took the failure over: false leaves the message to fail with the transport's error.
//
// A send that asked for the checked fallback (Request.Strict) runs the fallback policies first:
// one that fails makes the message fail with its code, keeping the WhatsApp provider's code.
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
	if opts.FallbackChecked {
		for _, p := range s.fallbackPolicies {
			f, err := p.CheckFallback(ctx, m, &snd)
			if err != nil {
				return false, err
			}
			if f != nil {
				f.ProviderCode = failure.ProviderCode
				_, err := s.ApplyStatus(ctx, StatusChange{MessageID: m.ID, Status: transport.StatusFailed, Failure: f})
				return true, err
			}
		}
	} else if !contains(snd.SendableChannels(), v1alpha1.ChannelSMS) {
		return false, nil
	}
	var ceiling, unpaid *apperror.Error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now().UTC()
		row, err := db.Planned(tx).FallBackToSMS(ctx, db.FallBackToSMSParams{ID: m.ID, Originator: snd.Address(v1alpha1.ChannelSMS),
			UpdatedAt: now})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // already moved on: a repeated job
		}
		if err != nil {
			return fmt.Errorf("fall back to sms for message %s: %w", m.ID, err)
		}
		// The message now counts as an SMS: on the SMS ceiling of today, and no longer against
		// the month's conversational allowance. With no SMS left today it does not fall back.
		counted, err := s.countedOn(ctx, m.Project)
		if err != nil {
			return err
		}
		var takes []quota.Take
		for _, p := range counted {
			takes = append(takes, quota.Take{Project: p, TestMode: m.TestMode, Meter: quota.SMS, N: 1})
		}
		if err := quota.TakeAll(ctx, tx, s.now(), takes, s.limitsOf(ctx)); err != nil {
			ceiling = apperror.As(err)
			return err
		}
		for _, p := range counted {
			if err := quota.GiveBack(ctx, tx, p, m.TestMode, quota.Conversational, 1, m.CreatedAt); err != nil {
				return err
			}
		}
		// The fallback is a new SMS: priced and paid for here, as a direct SMS is when it is
		// accepted, and its charge returned on the same failures.
		if err := s.chargeStored(ctx, tx, db.Message(row), now); err != nil {
			if e := apperror.As(err); e != nil && e.Code == "insufficient_balance" {
				unpaid = e
			}
			return err
		}
		if _, err := s.queue.InsertTx(ctx, tx, DispatchArgs{MessageID: m.ID}, nil); err != nil {
			return fmt.Errorf("enqueue sms dispatch of message %s: %w", m.ID, err)
		}
		return nil
	})
	if ceiling != nil {
		return false, nil
	}
	if unpaid != nil {
		// The balance cannot pay for the SMS: the message fails as unpaid, not as WhatsApp's failure.
		f := &transport.Failure{Code: ErrInsufficientBalance, ProviderCode: failure.ProviderCode,
			Message: "The WhatsApp message failed and its fallback to SMS was not sent: the project's balance cannot pay for the SMS."}
		_, err := s.ApplyStatus(ctx, StatusChange{MessageID: m.ID, Status: transport.StatusFailed, Failure: f})
		return true, err
	}
	return true, err
}

// ErrInsufficientBalance fails a message whose fallback the balance could not pay for.
const ErrInsufficientBalance = "INSUFFICIENT_BALANCE"
