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

// Account is what a charge needs of a project: the credit it opens with (once), how far past
// its balance it may spend, and who pays for that.
type Account struct {
	Project       string
	OpeningCredit Micros
	// CreditLimit is, for a project with no parent, how far below zero its balance may go; for
	// a sub-account, how much of its spending past its own balance its parent pays (its
	// creditLimit).
	CreditLimit Micros
	// Parent is the account that pays what a sub-account spends past its own balance; nil for
	// a project that is not one.
	Parent *Account
}

// family is the projects whose balances a movement of a's money may touch.
func (a Account) family() []string {
	if a.Parent == nil {
		return []string{a.Project}
	}
	return []string{a.Project, a.Parent.Project}
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

// open creates the balances of the project and of its parent with their opening credit, once,
// recording the credit.
func open(ctx context.Context, q *db.Queries, a Account, now time.Time) error {
	if a.Parent != nil {
		if err := open(ctx, q, *a.Parent, now); err != nil {
			return err
		}
	}
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
// requirePositive refuses, too, when the balance is not above zero (an email send). A
// sub-account's parent pays, in the same transaction, what its balance cannot.
func ChargeAll(ctx context.Context, tx pgx.Tx, a Account, charges []Charge, requirePositive bool, now time.Time) error {
	q := db.Planned(tx)
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
	slack := a.CreditLimit
	if a.Parent != nil {
		var err error
		if slack, err = draw(ctx, q, a, total, requirePositive, now); err != nil {
			return err
		}
		requirePositive = false // draw answered it
	}
	_, err := q.ChargeBalance(ctx, db.ChargeBalanceParams{Project: a.Project, Amount: int64(total), CreditLimit: int64(slack),
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

// draw makes a sub-account's balance able to pay amount, inside q's transaction: what its own
// balance cannot pay, its parent pays (draw_out on the parent, draw_in on the sub-account), as
// long as what the parent has paid for it stays within its credit limit and the parent's own
// balance can pay. It returns how far below zero the sub-account's balance may then go: only a
// debt it had before its parent paid for it, which stays its own. requirePositive (an email)
// needs money there: the sub-account's balance above zero, or its credit not used up and its
// parent's balance above zero.
func draw(ctx context.Context, q *db.Queries, a Account, amount Micros, requirePositive bool, now time.Time) (Micros, error) {
	rows, err := q.LockBalances(ctx, a.family())
	if err != nil {
		return 0, fmt.Errorf("lock balances of %s: %w", a.Project, err)
	}
	var own, parent db.LockBalancesRow
	for _, r := range rows {
		switch r.Project {
		case a.Project:
			own = r
		case a.Parent.Project:
			parent = r
		}
	}
	slack := Micros(max(0, -own.BalanceMicros))
	if requirePositive && own.BalanceMicros <= 0 &&
		(Micros(own.DrawnMicros) >= a.CreditLimit || Micros(parent.BalanceMicros)+a.Parent.CreditLimit <= 0) {
		return 0, ErrInsufficient(amount == 0)
	}
	need := amount - Micros(max(0, own.BalanceMicros))
	if need <= 0 {
		return slack, nil
	}
	if Micros(own.DrawnMicros)+need > a.CreditLimit {
		return 0, ErrInsufficient(false)
	}
	_, err = q.DrawOut(ctx, db.DrawOutParams{Project: a.Parent.Project, Amount: int64(need), CreditLimit: int64(a.Parent.CreditLimit), Now: now})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrInsufficient(false)
	}
	if err != nil {
		return 0, fmt.Errorf("draw on %s for %s: %w", a.Parent.Project, a.Project, err)
	}
	if _, err := q.DrawIn(ctx, db.DrawInParams{Project: a.Project, Amount: int64(need), Parent: a.Parent.Project,
		DrawnLimit: int64(a.CreditLimit), Now: now}); err != nil {
		return 0, fmt.Errorf("draw for %s: %w", a.Project, err) // the lock held: no row is not expected
	}
	if err := transfer(ctx, q, a.Parent.Project, a.Project, "draw", need, now); err != nil {
		return 0, err
	}
	return slack, nil
}

// transfer records money moved from one project's balance to another's: kind_out on from,
// kind_in on to, each naming the other.
func transfer(ctx context.Context, q *db.Queries, from, to, kind string, amount Micros, now time.Time) error {
	if err := q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: from, Kind: kind + "_out", Amounts: []int64{int64(amount)},
		MessageIds: []string{""}, Note: "to " + to, Now: now}); err != nil {
		return err
	}
	return q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: to, Kind: kind + "_in", Amounts: []int64{int64(amount)},
		MessageIds: []string{""}, Note: "from " + from, Now: now})
}

// lockFamily locks project's balance and its parent's, in the one order, before money reaches
// a sub-account (which then pays its parent back first); a project whose balance names no
// parent (it never drew) locks nothing here.
func lockFamily(ctx context.Context, q *db.Queries, project string) error {
	parent, err := q.ParentOf(ctx, project)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && parent == nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read parent of %s: %w", project, err)
	}
	if _, err := q.LockBalances(ctx, []string{project, *parent}); err != nil {
		return fmt.Errorf("lock balances of %s: %w", project, err)
	}
	return nil
}

// repay pays a sub-account's parent back what it drew, as far as the sub-account's balance
// (just raised to balance) goes: money reaching a sub-account settles its debt first.
func repay(ctx context.Context, q *db.Queries, project string, balance, drawn int64, parent *string, now time.Time) error {
	if parent == nil || drawn <= 0 || balance <= 0 {
		return nil
	}
	amount := min(drawn, balance)
	if err := q.RepayOut(ctx, db.RepayOutParams{Project: project, Amount: amount, Now: now}); err != nil {
		return fmt.Errorf("repay %s from %s: %w", *parent, project, err)
	}
	if _, err := q.CreditBalance(ctx, db.CreditBalanceParams{Project: *parent, Amount: amount, Now: now}); err != nil {
		return fmt.Errorf("repay %s from %s: %w", *parent, project, err)
	}
	return transfer(ctx, q, project, *parent, "repay", Micros(amount), now)
}

// LockAll locks the balances of accounts and their parents in the one order, before a
// transaction charges several of them: a sub-account's charge takes its parent's balance too,
// so charging project by project could take them out of order.
func LockAll(ctx context.Context, tx pgx.Tx, accounts []Account, now time.Time) error {
	q := db.Planned(tx)
	var projects []string
	for _, a := range accounts {
		if err := open(ctx, q, a, now); err != nil {
			return err
		}
		projects = append(projects, a.family()...)
	}
	if _, err := q.LockBalances(ctx, projects); err != nil {
		return fmt.Errorf("lock balances: %w", err)
	}
	return nil
}

// Refund returns what message was charged, once, inside tx; it returns the amount (0 when it
// was never charged or is refunded already). A sub-account pays its parent back first.
func Refund(ctx context.Context, tx pgx.Tx, project, messageID string, now time.Time) (Micros, error) {
	q := db.Planned(tx)
	owed, err := q.ChargeOf(ctx, messageID)
	if err != nil {
		return 0, fmt.Errorf("read charge of %s: %w", messageID, err)
	}
	if owed <= 0 {
		return 0, nil
	}
	if err := lockFamily(ctx, q, project); err != nil {
		return 0, err
	}
	row, err := q.RefundBalance(ctx, db.RefundBalanceParams{Project: project, Amount: owed, Now: now})
	if err != nil {
		return 0, fmt.Errorf("refund %s: %w", messageID, err)
	}
	if err := q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: project, Kind: "refund", Amounts: []int64{owed},
		MessageIds: []string{messageID}, Note: "refund", Now: now}); err != nil {
		return 0, err
	}
	if err := q.ClearCharged(ctx, messageID); err != nil {
		return 0, fmt.Errorf("clear charge of %s: %w", messageID, err)
	}
	return Micros(owed), repay(ctx, q, project, row.BalanceMicros, row.DrawnMicros, row.Parent, now)
}

// Credit adds amount to the project's balance (the operator's top-up), opening it first when
// new, and returns the new balance. A negative or zero amount is refused.
func Credit(ctx context.Context, pool *pgxpool.Pool, a Account, amount Micros, note string, now time.Time) (Micros, error) {
	if amount <= 0 {
		return 0, apperror.InvalidFields(apperror.FieldError{Path: "amount", Message: "must be a positive amount of dollars"})
	}
	var balance int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if err := open(ctx, q, a, now); err != nil {
			return err
		}
		if err := lockFamily(ctx, q, a.Project); err != nil {
			return err
		}
		row, err := q.CreditBalance(ctx, db.CreditBalanceParams{Project: a.Project, Amount: int64(amount), Now: now})
		if err != nil {
			return fmt.Errorf("credit %s: %w", a.Project, err)
		}
		if note == "" {
			note = "credit"
		}
		if err := q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: a.Project, Kind: "credit", Amounts: []int64{int64(amount)},
			MessageIds: []string{""}, Note: note, Now: now}); err != nil {
			return err
		}
		// Paying the parent back lowers what it holds and what it drew alike: the balance shown
		// (held less drawn) is the same before and after.
		balance = row.BalanceMicros - row.DrawnMicros
		return repay(ctx, q, a.Project, row.BalanceMicros, row.DrawnMicros, row.Parent, now)
	})
	return Micros(balance), err
}

// Balance is a project's money. A sub-account's Balance is what it holds less what its parent
// paid for it (Drawn): below zero while it owes its parent.
type Balance struct {
	Balance, Spent, Drawn Micros
}

// Read returns the project's balance, opening it (with its opening credit) when new.
func Read(ctx context.Context, pool *pgxpool.Pool, a Account, now time.Time) (Balance, error) {
	var b db.Balance
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
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
	return Balance{Balance: Micros(b.BalanceMicros - b.DrawnMicros), Spent: Micros(b.SpentMicros), Drawn: Micros(b.DrawnMicros)}, nil
}

// Reserve sets amount aside from the project's balance inside tx (a broadcast's estimate, when
// it starts sending), past which it is 402 insufficient_balance; note names what for. What is
// reserved is not spent: Release gives it back as the broadcast's messages are charged. A
// sub-account's parent pays what its balance cannot, as for a charge.
func Reserve(ctx context.Context, tx pgx.Tx, a Account, amount Micros, note string, now time.Time) error {
	if amount <= 0 {
		return nil
	}
	q := db.Planned(tx)
	if err := open(ctx, q, a, now); err != nil {
		return err
	}
	slack := a.CreditLimit
	if a.Parent != nil {
		var err error
		if slack, err = draw(ctx, q, a, amount, false, now); err != nil {
			return err
		}
	}
	_, err := q.ReserveBalance(ctx, db.ReserveBalanceParams{Project: a.Project, Amount: int64(amount), CreditLimit: int64(slack), Now: now})
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
	q := db.Planned(tx)
	if err := lockFamily(ctx, q, project); err != nil {
		return err
	}
	row, err := q.CreditBalance(ctx, db.CreditBalanceParams{Project: project, Amount: int64(amount), Now: now})
	if err != nil {
		return fmt.Errorf("release for %s: %w", project, err)
	}
	if err := q.AddLedgerEntries(ctx, db.AddLedgerEntriesParams{Project: project, Kind: "release", Amounts: []int64{int64(amount)},
		MessageIds: []string{""}, Note: note, Now: now}); err != nil {
		return err
	}
	return repay(ctx, q, project, row.BalanceMicros, row.DrawnMicros, row.Parent, now)
}
