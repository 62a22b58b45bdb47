package billing

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// AccountOf is the billing account of project p (nil: none) under list, without its parent: a
// Free project that is not a sub-account opens with the list's free credit; a sub-account's
// parent pays up to its creditLimit past its balance (Prices.Account adds the parent).
func AccountOf(project string, p *v1alpha1.Project, list *v1alpha1.PriceList) Account {
	a := Account{Project: project}
	if p == nil {
		return a
	}
	if p.Spec.Parent == "" && (p.Spec.Plan == "" || p.Spec.Plan == v1alpha1.PlanFree) {
		a.OpeningCredit = FreeCredit(list)
	}
	if sa := p.Spec.SubAccount; sa != nil && sa.CreditLimit != nil {
		a.CreditLimit = FromCents(*sa.CreditLimit)
	}
	return a
}

// Service answers for projects' balances (GET /v1/balance) and credits them (the operator).
type Service struct {
	Pool   *pgxpool.Pool
	Prices *Prices
	Reader client.Reader
	Now    func() time.Time
}

// View is a project's balance as the API shows it.
type View struct {
	Balance, TotalSpent Micros
	// CreditLimit is a sub-account's, in cents; nil otherwise.
	CreditLimit  *int64
	IsSubAccount bool
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// accountOf reads what project's balance opens with and may go to.
func (s *Service) accountOf(ctx context.Context, project string) (Account, *v1alpha1.Project, error) {
	p, err := kubewrite.ProjectOf(ctx, s.Reader, project)
	if err != nil {
		return Account{}, nil, err
	}
	prices, err := s.Prices.For(ctx, project)
	if err != nil {
		return Account{}, nil, err
	}
	a, err := s.Prices.Account(ctx, project, p, prices)
	return a, p, err
}

// Available is what project's balance could pay now: its balance and how far past it it may
// go (a sub-account: the part of its credit limit not yet used, as far as its parent can pay).
func (s *Service) Available(ctx context.Context, project string) (Micros, error) {
	a, _, err := s.accountOf(ctx, project)
	if err != nil {
		return 0, err
	}
	b, err := Read(ctx, s.Pool, a, s.now())
	if err != nil {
		return 0, err
	}
	if a.Parent == nil {
		return b.Balance + a.CreditLimit, nil
	}
	parent, err := s.Available(ctx, a.Parent.Project)
	if err != nil {
		return 0, err
	}
	held := b.Balance + b.Drawn
	return max(0, held) + max(0, min(a.CreditLimit-b.Drawn, parent)), nil
}

// Account is what charging project needs (its opening credit and credit limit).
func (s *Service) Account(ctx context.Context, project string) (Account, error) {
	a, _, err := s.accountOf(ctx, project)
	return a, err
}

// PriceList is the price list that prices project, nil when none does.
func (s *Service) PriceList(ctx context.Context, project string) (*v1alpha1.PriceList, error) {
	return s.Prices.For(ctx, project)
}

// Balance is project's balance, opened (with its free credit) when new.
func (s *Service) Balance(ctx context.Context, project string) (View, error) {
	a, p, err := s.accountOf(ctx, project)
	if err != nil {
		return View{}, err
	}
	b, err := Read(ctx, s.Pool, a, s.now())
	if err != nil {
		return View{}, err
	}
	v := View{Balance: b.Balance, TotalSpent: b.Spent}
	if p != nil && p.Spec.Parent != "" {
		v.IsSubAccount = true
		if sa := p.Spec.SubAccount; sa != nil {
			v.CreditLimit = sa.CreditLimit
		}
	}
	return v, nil
}

// Credit adds amount to project's balance (switchboard balance credit) and returns it.
func (s *Service) Credit(ctx context.Context, project string, amount Micros, note string) (Micros, error) {
	a, _, err := s.accountOf(ctx, project)
	if err != nil {
		return 0, err
	}
	return Credit(ctx, s.Pool, a, amount, note, s.now())
}

// Spent is what each of projects has spent so far (0 before its first charge), in one read.
func (s *Service) Spent(ctx context.Context, projects ...string) (map[string]Micros, error) {
	rows, err := db.Planned(s.Pool).SpentOf(ctx, projects)
	if err != nil {
		return nil, fmt.Errorf("read what %d projects spent: %w", len(projects), err)
	}
	out := make(map[string]Micros, len(projects))
	for _, r := range rows {
		out[r.Project] = Micros(r.SpentMicros)
	}
	return out, nil
}

// Ledger returns the project's latest ledger entries, newest first: credits, charges, refunds.
func (s *Service) Ledger(ctx context.Context, project string, limit int32) ([]db.LedgerEntry, error) {
	rows, err := db.Planned(s.Pool).LatestLedgerEntries(ctx, db.LatestLedgerEntriesParams{Project: project, Max: limit})
	if err != nil {
		return nil, fmt.Errorf("read the ledger of %s: %w", project, err)
	}
	return rows, nil
}

// DailyUsage returns the project's daily usage counters (sms, voice, conversational, email)
// since a day, oldest first.
func (s *Service) DailyUsage(ctx context.Context, project string, testMode bool, since time.Time) ([]db.DailyUsageRow, error) {
	rows, err := db.Planned(s.Pool).DailyUsage(ctx, db.DailyUsageParams{Project: project, TestMode: testMode, SinceDay: since.UTC().Truncate(24 * time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("read the usage of %s: %w", project, err)
	}
	return rows, nil
}
