package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Account is what a charge needs of a project: the credit it opens with (once) and how far
// below zero it may go (a sub-account's creditLimit).
type Account struct {
	Project       string
	OpeningCredit Micros
	CreditLimit   Micros
}

// Charge is one message paid for.
type Charge struct {
	MessageID string
	Amount    Micros
}

// ErrInsufficient is the answer to a send the balance cannot pay for.
func ErrInsufficient(balanceNeeded bool) *apperror.Error {
	msg := "The project's balance cannot pay for this message; add credit (switchboard balance credit) and send again."
	if balanceNeeded {
		msg = "Email needs a prepaid balance above zero; add credit (switchboard balance credit) and send again."
	}
	return apperror.New(apperror.PaymentRequired, "insufficient_balance", msg)
}

// open creates the project's balance with its opening credit, once, recording the credit.
func open(ctx context.Context, q *db.Queries, a Account, now time.Time) error {
	_, err := q.OpenBalance(ctx, db.OpenBalanceParams{Project: a.Project, Initial: int64(a.OpeningCredit), Now: now})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // it exists
	}
	if err != nil {
		return fmt.Errorf("open balance of %s: %w", a.Project, err)
	}
	if a.OpeningCredit > 0 {
		return q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: a.Project, Kind: "credit",
			Amounts: []int64{int64(a.OpeningCredit)}, MessageIds: []string{""}, Note: "opening credit", Now: now})
	}
	return nil
}

// ChargeAll takes the charges from the project's balance inside tx (the send's transaction),
// all or none: past the credit limit it is 402 insufficient_balance and the caller rolls back.
// requirePositive refuses, too, when the balance is not above zero (an email send).
func ChargeAll(ctx context.Context, tx pgx.Tx, a Account, charges []Charge, requirePositive bool, now time.Time) error {
	q := db.New(tx)
	if err := open(ctx, q, a, now); err != nil {
		return err
	}
	var total Micros
	amounts, ids := make([]int64, 0, len(charges)), make([]string, 0, len(charges))
	for _, c := range charges {
		total += c.Amount
		if c.Amount > 0 {
			amounts, ids = append(amounts, int64(c.Amount)), append(ids, c.MessageID)
		}
	}
	_, err := q.ChargeBalance(ctx, db.ChargeBalanceParams{Project: a.Project, Amount: int64(total), CreditLimit: int64(a.CreditLimit),
		RequirePositive: requirePositive, Now: now})
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrInsufficient(requirePositive && total == 0)
	}
	if err != nil {
		return fmt.Errorf("charge %s: %w", a.Project, err)
	}
	if len(amounts) == 0 {
		return nil
	}
	return q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: a.Project, Kind: "charge", Amounts: amounts, MessageIds: ids, Now: now})
}

// Refund returns what message was charged, once, inside tx; it returns the amount (0 when it
// was never charged or is refunded already).
func Refund(ctx context.Context, tx pgx.Tx, project, messageID string, now time.Time) (Micros, error) {
	q := db.New(tx)
	owed, err := q.ChargeOf(ctx, messageID)
	if err != nil {
		return 0, fmt.Errorf("read charge of %s: %w", messageID, err)
	}
	if owed <= 0 {
		return 0, nil
	}
	if _, err := q.RefundBalance(ctx, db.RefundBalanceParams{Project: project, Amount: owed, Now: now}); err != nil {
		return 0, fmt.Errorf("refund %s: %w", messageID, err)
	}
	if err := q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: project, Kind: "refund", Amounts: []int64{owed},
		MessageIds: []string{messageID}, Note: "refund", Now: now}); err != nil {
		return 0, err
	}
	if err := q.ClearCharged(ctx, messageID); err != nil {
		return 0, fmt.Errorf("clear charge of %s: %w", messageID, err)
	}
	return Micros(owed), nil
}

// Credit adds amount to the project's balance (the operator's top-up), opening it first when
// new, and returns the new balance. A negative or zero amount is refused.
func Credit(ctx context.Context, pool *pgxpool.Pool, a Account, amount Micros, note string, now time.Time) (Micros, error) {
	if amount <= 0 {
		return 0, apperror.InvalidFields(apperror.FieldError{Path: "amount", Message: "must be a positive amount of dollars"})
	}
	var balance int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if err := open(ctx, q, a, now); err != nil {
			return err
		}
		var err error
		if balance, err = q.CreditBalance(ctx, db.CreditBalanceParams{Project: a.Project, Amount: int64(amount), Now: now}); err != nil {
			return fmt.Errorf("credit %s: %w", a.Project, err)
		}
		if note == "" {
			note = "credit"
		}
		return q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: a.Project, Kind: "credit", Amounts: []int64{int64(amount)},
			MessageIds: []string{""}, Note: note, Now: now})
	})
	return Micros(balance), err
}

// Balance is a project's money.
type Balance struct {
	Balance, Spent Micros
}

// Read returns the project's balance, opening it (with its opening credit) when new.
func Read(ctx context.Context, pool *pgxpool.Pool, a Account, now time.Time) (Balance, error) {
	var b db.Balance
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if err := open(ctx, q, a, now); err != nil {
			return err
		}
		var err error
		b, err = q.GetBalance(ctx, a.Project)
		return err
	})
	if err != nil {
		return Balance{}, fmt.Errorf("read balance of %s: %w", a.Project, err)
	}
	return Balance{Balance: Micros(b.BalanceMicros), Spent: Micros(b.SpentMicros)}, nil
}

// Reserve sets amount aside from the project's balance inside tx (a broadcast's estimate, when
// it starts sending), past which it is 402 insufficient_balance; note names what for. What is
// reserved is not spent: Release gives it back as the broadcast's messages are charged.
func Reserve(ctx context.Context, tx pgx.Tx, a Account, amount Micros, note string, now time.Time) error {
	if amount <= 0 {
		return nil
	}
	q := db.New(tx)
	if err := open(ctx, q, a, now); err != nil {
		return err
	}
	_, err := q.ReserveBalance(ctx, db.ReserveBalanceParams{Project: a.Project, Amount: int64(amount), CreditLimit: int64(a.CreditLimit), Now: now})
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrInsufficient(false)
	}
	if err != nil {
		return fmt.Errorf("reserve for %s: %w", a.Project, err)
	}
	return q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: a.Project, Kind: "reserve", Amounts: []int64{int64(amount)},
		MessageIds: []string{""}, Note: note, Now: now})
}

// Release returns amount of what Reserve set aside to the project's balance inside tx.
func Release(ctx context.Context, tx pgx.Tx, project string, amount Micros, note string, now time.Time) error {
	if amount <= 0 {
		return nil
	}
	q := db.New(tx)
	if _, err := q.CreditBalance(ctx, db.CreditBalanceParams{Project: project, Amount: int64(amount), Now: now}); err != nil {
		return fmt.Errorf("release for %s: %w", project, err)
	}
	return q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: project, Kind: "release", Amounts: []int64{int64(amount)},
		MessageIds: []string{""}, Note: note, Now: now})
}
