package regulatory

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// A regulatory bundle is built from the project's records (numbers.Service): these read them
// and keep what the review said.

// BundleAddress is the project's newest address of country that no review rejected; nil when
// it has none.
func (s *Service) BundleAddress(ctx context.Context, project, country string) (*Address, error) {
	row, err := db.Planned(s.Pool).BundleAddress(ctx, db.BundleAddressParams{Project: project, CountryCode: country})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a := addressView(row)
	return &a, nil
}

// BundleDocument is the project's newest document of one of types that no review rejected,
// with its file; nil when it has none.
func (s *Service) BundleDocument(ctx context.Context, project string, types []string) (*Document, []byte, error) {
	rows, err := db.Planned(s.Pool).BundleDocuments(ctx, db.BundleDocumentsParams{Project: project, Types: types})
	if err != nil || len(rows) == 0 {
		return nil, nil, err
	}
	file, err := s.files().Get(ctx, rows[0].Upload)
	if err != nil {
		return nil, nil, err
	}
	d := documentView(rows[0])
	return &d, file, nil
}

// Reviewed keeps a review's outcome on the records a bundle was made of: verified (with the
// bundle's sid: they are in use from then on), or its documents rejected with reason (the
// address stays pending: a review names what it refused in words, not by record).
func (s *Service) Reviewed(ctx context.Context, project string, address *string, documents []string, verified bool, reason, sid string) error {
	status := "rejected"
	if verified {
		status = "verified"
	}
	var why, ref *string
	if !verified && reason != "" {
		why = &reason
	}
	if verified {
		ref = &sid
	}
	now := s.now()
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if address != nil && verified {
			if err := q.ReviewRegulatoryAddress(ctx, db.ReviewRegulatoryAddressParams{Status: status, ProviderSid: ref, Now: now,
				ID: *address, Project: project}); err != nil {
				return err
			}
		}
		if len(documents) == 0 {
			return nil
		}
		return q.ReviewRegulatoryDocuments(ctx, db.ReviewRegulatoryDocumentsParams{Status: status, RejectionReason: why,
			ProviderSid: ref, Now: now, Project: project, Ids: documents})
	})
}
