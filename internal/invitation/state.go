package invitation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// errUnchanged tells change that there is nothing to write.
var errUnchanged = errors.New("unchanged")

// change reads the invitation from the API server, lets step change its status and writes it
// back conditionally on what was read (a conflict reads and steps again), then announces the
// change. step returns errUnchanged when there is nothing to write.
func (s *Service) change(ctx context.Context, project, id string, step func(*v1alpha1.Invitation, time.Time) error) (*v1alpha1.Invitation, error) {
	var out *v1alpha1.Invitation
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		inv, err := read(ctx, s.live, project, id)
		if err != nil {
			return err
		}
		now := s.now().UTC().Truncate(time.Second)
		err = step(inv, now)
		if errors.Is(err, errUnchanged) {
			out = inv
			return nil
		}
		if err != nil {
			return err
		}
		inv.Status.UpdatedAt = stamp(now)
		if err := s.client.Status().Update(ctx, inv, client.FieldOwner(s.fieldManager)); err != nil {
			return err
		}
		out = inv
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, s.Announce(ctx, out)
}

// setState moves the invitation to st: a change of state gets a new change id, so that it is
// announced once; a move to the state it is in is not a change.
func setState(inv *v1alpha1.Invitation, st v1alpha1.InvitationState, now time.Time) {
	if inv.Stored() == st {
		return
	}
	id, _ := randid.String(randid.Lower, 16)
	inv.Status.PreviousState, inv.Status.State, inv.Status.ChangeID = inv.Stored(), st, id
}

func stamp(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}

// Link errors: the page tells them apart (404 for no invitation, 410 for a link that stopped).
var (
	// ErrGone: the invitation was cancelled or has expired; its link no longer works.
	ErrGone = errors.New("the invitation's link no longer works")
	// ErrFinished: the invitation completed; there is nothing left to do at its link.
	ErrFinished = errors.New("the invitation has completed")
)

// usable refuses a step at a link that no longer works.
func usable(inv *v1alpha1.Invitation, now time.Time) error {
	switch inv.StateAt(now) {
	case v1alpha1.InvitationCancelled, v1alpha1.InvitationExpired:
		return ErrGone
	case v1alpha1.InvitationCompleted:
		return ErrFinished
	}
	return nil
}

// Viewed records that the client opened the link (the first time only).
func (s *Service) Viewed(ctx context.Context, inv *v1alpha1.Invitation) (*v1alpha1.Invitation, error) {
	if inv.Status.ViewedAt != nil {
		return inv, nil
	}
	return s.change(ctx, inv.Namespace, inv.Name, func(inv *v1alpha1.Invitation, now time.Time) error {
		if inv.Status.ViewedAt != nil {
			return errUnchanged
		}
		inv.Status.ViewedAt = stamp(now)
		return nil
	})
}

// Start records that the client started connecting: pending, failed (a retry) or in progress
// (a restart) → in_progress.
func (s *Service) Start(ctx context.Context, inv *v1alpha1.Invitation) (*v1alpha1.Invitation, error) {
	return s.change(ctx, inv.Namespace, inv.Name, func(inv *v1alpha1.Invitation, now time.Time) error {
		if err := usable(inv, now); err != nil {
			return err
		}
		setState(inv, v1alpha1.InvitationInProgress, now)
		inv.Status.StartedAt, inv.Status.FailureReason, inv.Status.FailedAt = stamp(now), "", nil
		return nil
	})
}

// Connected is what a completed connection produced.
type Connected struct {
	Sender  string
	Account v1alpha1.InvitationAccount
	// WABAAccountID is the WhatsApp business account (whatsapp_waba).
	WABAAccountID string
}

// Complete records the connection: in_progress → completed, with the Sender it created.
func (s *Service) Complete(ctx context.Context, inv *v1alpha1.Invitation, c Connected) (*v1alpha1.Invitation, error) {
	return s.change(ctx, inv.Namespace, inv.Name, func(inv *v1alpha1.Invitation, now time.Time) error {
		if inv.Stored() != v1alpha1.InvitationInProgress {
			return fmt.Errorf("complete invitation %s/%s: it is %s, not in_progress", inv.Namespace, inv.Name, inv.Stored())
		}
		setState(inv, v1alpha1.InvitationCompleted, now)
		acct := c.Account
		inv.Status.CompletedAt, inv.Status.Sender, inv.Status.ConnectedAccount, inv.Status.WABAAccountID = stamp(now), c.Sender, &acct, c.WABAAccountID
		return nil
	})
}

// Fail records that the connection failed for reason (one of the spec's): in_progress →
// failed. The link keeps working: the client may try again. An invitation no longer in
// progress (cancelled meanwhile, completed) is left as it is.
func (s *Service) Fail(ctx context.Context, inv *v1alpha1.Invitation, reason string) (*v1alpha1.Invitation, error) {
	return s.change(ctx, inv.Namespace, inv.Name, func(inv *v1alpha1.Invitation, now time.Time) error {
		if inv.Stored() != v1alpha1.InvitationInProgress {
			return errUnchanged
		}
		setState(inv, v1alpha1.InvitationFailed, now)
		inv.Status.FailedAt, inv.Status.FailureReason = stamp(now), reason
		return nil
	})
}

// Resend carries out the operator's resend (spec.resendRequestedAt later than status.resentAt):
// back to pending, whatever the state, with a new expiry from now; what an earlier connection
// recorded stays until the next one replaces it.
func (s *Service) Resend(ctx context.Context, inv *v1alpha1.Invitation) (*v1alpha1.Invitation, error) {
	return s.change(ctx, inv.Namespace, inv.Name, func(inv *v1alpha1.Invitation, now time.Time) error {
		if !inv.ResendAsked() {
			return errUnchanged
		}
		setState(inv, v1alpha1.InvitationPending, now)
		inv.Status.ResentAt = inv.Spec.ResendRequestedAt.DeepCopy()
		inv.Status.ExpiresAt = expiry(now, inv.Spec.ExpiresInDays)
		inv.Status.FailureReason, inv.Status.FailedAt, inv.Status.CancelledAt = "", nil, nil
		return nil
	})
}

// Announce writes the invitation.status_changed of the invitation's last change, unless it was
// written already: the writer of a change announces it, and the controller again after a crash
// in between; the project's webhooks take it, never a parent project's.
func (s *Service) Announce(ctx context.Context, inv *v1alpha1.Invitation) error {
	st := inv.Status
	if st.ChangeID == "" || s.pool == nil {
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		at := s.now().UTC()
		if st.UpdatedAt != nil {
			at = st.UpdatedAt.Time
		}
		fresh, err := db.Planned(tx).AnnounceInvitation(ctx, db.AnnounceInvitationParams{Project: inv.Namespace,
			InvitationUid: string(inv.UID), ChangeID: st.ChangeID, ChangedAt: at})
		if err != nil {
			return fmt.Errorf("record the announcement of invitation %s: %w", inv.Name, err)
		}
		if !fresh {
			return nil
		}
		_, err = s.deliveries.Enqueue(ctx, tx, delivery.Event{Project: inv.Namespace,
			Name: string(v1alpha1.EventInvitationStatusChanged), Data: EventData(inv)})
		return err
	})
}

// EventData is invitation.status_changed's data for the invitation's last change.
func EventData(inv *v1alpha1.Invitation) map[string]any {
	st := inv.Status
	data := map[string]any{"invitationId": inv.Name, "clientName": orNil(inv.Spec.ClientName), "clientEmail": orNil(inv.Spec.ClientEmail),
		"connectionType": string(connectionType(inv)), "previousStatus": string(st.PreviousState), "currentStatus": string(inv.Stored())}
	switch inv.Stored() {
	case v1alpha1.InvitationCompleted:
		data["senderId"] = st.Sender
		data["connectedAccount"] = accountView(st.ConnectedAccount)
		if connectionType(inv) == v1alpha1.ConnectionWhatsApp {
			data["wabaAccountId"] = st.WABAAccountID
		}
	case v1alpha1.InvitationFailed:
		data["failureReason"] = st.FailureReason
	}
	return data
}

// Forget drops the announcement record of a deleted invitation.
func (s *Service) Forget(ctx context.Context, inv *v1alpha1.Invitation) error {
	if s.pool == nil {
		return nil
	}
	return db.Planned(s.pool).ForgetInvitationAnnouncement(ctx, db.ForgetInvitationAnnouncementParams{Project: inv.Namespace,
		InvitationUid: string(inv.UID)})
}
