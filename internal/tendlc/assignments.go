package tendlc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Assignment statuses: a number is active under its campaign once the provider put it there.
const (
	AssignmentPending = "pending"
	AssignmentActive  = "active"
	AssignmentFailed  = "failed"
)

// Assignment is a number sending under a campaign (the published client's assignment):
// phoneNumberId names the Sender whose phoneNumber is assigned, a number its project owns (a
// Ready PhoneNumber holds it for the project) or one of the sandbox's test numbers.
type Assignment struct {
	ID            string     `json:"id"`
	CampaignID    string     `json:"campaignId"`
	PhoneNumberID string     `json:"phoneNumberId"`
	PhoneNumber   string     `json:"phoneNumber"`
	Status        string     `json:"status"`
	FailureReason *string    `json:"failureReason,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	AssignedAt    *time.Time `json:"assignedAt,omitempty"`
}

// Assignments lists the numbers of a campaign.
func (s *Service) Assignments(ctx context.Context, project string, testMode bool, campaignID string, p Page) ([]Assignment, error) {
	if _, err := s.Campaign(ctx, project, testMode, campaignID); err != nil {
		return nil, err
	}
	rows, err := db.Planned(s.pool).TenDLCAssignments(ctx, db.TenDLCAssignmentsParams{CampaignID: campaignID,
		AfterTime: p.AfterTime, AfterID: p.AfterID, MaxRows: int32(p.Limit)})
	if err != nil {
		return nil, fmt.Errorf("list assignments: %w", err)
	}
	out := make([]Assignment, len(rows))
	for i, r := range rows {
		out[i] = assignmentOf(r)
	}
	return out, nil
}

// Assign puts a sender's number under an approved campaign.
func (s *Service) Assign(ctx context.Context, project string, testMode bool, campaignID string, phoneNumberID *string) (Assignment, error) {
	c, err := s.Campaign(ctx, project, testMode, campaignID)
	if err != nil {
		return Assignment{}, err
	}
	if phoneNumberID == nil || *phoneNumberID == "" {
		return Assignment{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumberId", Message: "is required: the id of a sender with a +1 phoneNumber"})
	}
	if c.Status != CampaignApproved {
		return Assignment{}, wrongState("campaign", campaignID, c.Status, "numbers are assigned to an approved campaign")
	}
	var snd v1alpha1.Sender
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: *phoneNumberID}, &snd); err != nil {
		if apierrors.IsNotFound(err) {
			return Assignment{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumberId", Message: "is not a sender of this project"})
		}
		return Assignment{}, fmt.Errorf("read sender %s: %w", *phoneNumberID, err)
	}
	number := snd.Spec.PhoneNumber
	if !strings.HasPrefix(number, "+1") || len(number) != 12 {
		return Assignment{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumberId",
			Message: "names a sender without a +1 ten-digit phoneNumber: 10DLC registers US long codes"})
	}
	// Only the number's owner registers it: a campaign of another project's number would send
	// under this project's registration (docs/senders.md#phone-numbers).
	owned, err := phonenumber.Check(ctx, s.reader, project, number)
	if err != nil {
		return Assignment{}, err
	}
	if !owned.Usable() {
		return Assignment{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumberId", Message: owned.Why()})
	}
	held, err := db.Planned(s.pool).TenDLCAssignmentOfNumber(ctx, db.TenDLCAssignmentOfNumberParams{Project: project, TestMode: testMode, PhoneNumber: number})
	switch {
	case err == nil:
		return Assignment{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumberId",
			Message: fmt.Sprintf("%s already sends under campaign %s: remove it there first", number, held.CampaignID)})
	case !errors.Is(err, pgx.ErrNoRows):
		return Assignment{}, fmt.Errorf("read assignment of %s: %w", number, err)
	}
	reg, err := s.registrar(ctx, project, testMode)
	if err != nil {
		return Assignment{}, err
	}
	ref, err := reg.AssignNumber(ctx, c, number)
	if err != nil {
		return Assignment{}, err
	}
	id, err := randid.Prefixed("asg_", 24)
	if err != nil {
		return Assignment{}, err
	}
	now := s.now().UTC()
	row, err := db.Planned(s.pool).InsertTenDLCAssignment(ctx, db.InsertTenDLCAssignmentParams{ID: id, CampaignID: campaignID, Project: project,
		TestMode: testMode, PhoneNumberID: *phoneNumberID, PhoneNumber: number, Status: AssignmentActive, ProviderRef: &ref, Now: now, AssignedAt: &now})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		// Another request assigned the number meanwhile; the provider holds it once either way.
		return Assignment{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumberId", Message: number + " was assigned meanwhile"})
	}
	if err != nil {
		return Assignment{}, fmt.Errorf("store assignment: %w", err)
	}
	return assignmentOf(row), nil
}

// Unassign takes a number out of its campaign.
func (s *Service) Unassign(ctx context.Context, project string, testMode bool, campaignID, id string) error {
	c, err := s.Campaign(ctx, project, testMode, campaignID)
	if err != nil {
		return err
	}
	row, err := db.Planned(s.pool).TenDLCAssignment(ctx, db.TenDLCAssignmentParams{ID: id, CampaignID: campaignID})
	if err != nil {
		return notFound(err, "phone number assignment", id)
	}
	if row.ProviderRef != nil && row.Status == AssignmentActive {
		reg, err := s.registrar(ctx, project, testMode)
		if err != nil {
			return err
		}
		if err := reg.UnassignNumber(ctx, c, *row.ProviderRef); err != nil {
			return err
		}
	}
	return db.Planned(s.pool).DeleteTenDLCAssignment(ctx, id)
}

func assignmentOf(r db.TenDlcAssignment) Assignment {
	return Assignment{ID: r.ID, CampaignID: r.CampaignID, PhoneNumberID: r.PhoneNumberID, PhoneNumber: r.PhoneNumber, Status: r.Status,
		FailureReason: r.FailureReason, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), AssignedAt: utc(r.AssignedAt)}
}
