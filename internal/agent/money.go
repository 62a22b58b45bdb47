package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Money: an execution on the installation's model (zavu) pays its tokens at the PriceList's
// ModelPrices, from the project's balance, before its reply is sent; one on the project's own
// key costs nothing here (its tokens are still recorded). A project that cannot pay gets no
// reply, and the execution ends as balance_insufficient.

// billingAccount is the project's billing account; ok is false when the runtime prices
// nothing (no Prices configured).
func (r *Runtime) billingAccount(ctx context.Context, project string) (billing.Account, bool, error) {
	if r.Prices == nil {
		return billing.Account{}, false, nil
	}
	list, err := r.Prices.For(ctx, project)
	if err != nil {
		return billing.Account{}, false, err
	}
	p, err := kubewrite.ProjectOf(ctx, r.Reader, project)
	if err != nil {
		return billing.Account{}, false, err
	}
	a, err := r.Prices.Account(ctx, project, p, list)
	return a, err == nil, err
}

// canPay says whether the project's balance is above zero, before the installation's model is
// asked: a project that cannot pay is not answered at the installation's expense.
func (r *Runtime) canPay(ctx context.Context, project string) (bool, error) {
	a, ok, err := r.billingAccount(ctx, project)
	if err != nil || !ok {
		return true, err
	}
	err = pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		return billing.ChargeAll(ctx, tx, a, nil, true, r.clock().UTC())
	})
	if isInsufficient(err) {
		return false, nil
	}
	return err == nil, err
}

// charge takes the execution's installation tokens from the balance, once (a retried run finds
// them charged). It returns false when the balance cannot pay.
func (r *Runtime) charge(ctx context.Context, ex db.AgentExecution, cost billing.Micros) (bool, error) {
	if cost <= 0 {
		return true, nil
	}
	a, ok, err := r.billingAccount(ctx, ex.Project)
	if err != nil || !ok {
		return true, err
	}
	now := r.clock().UTC()
	err = pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		n, err := db.Planned(tx).MarkAgentExecutionCharged(ctx, db.MarkAgentExecutionChargedParams{ID: ex.ID, CostMicros: int64(cost), Now: &now})
		if err != nil || n == 0 {
			return err
		}
		return billing.ChargeAll(ctx, tx, a, []billing.Charge{{MessageID: ex.ID, Amount: cost}}, false, now)
	})
	if isInsufficient(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("charge execution %s: %w", ex.ID, err)
	}
	return true, nil
}

// stepCost is what a model call of c cost the project ("" for a dry run, which costs nothing).
func (r *Runtime) stepCost(ctx context.Context, project string, c *candidate, in, out int64) (billing.Micros, error) {
	if !c.installation || r.Prices == nil || project == "" {
		return 0, nil
	}
	list, err := r.Prices.For(ctx, project)
	if err != nil {
		return 0, err
	}
	price, _, err := billing.TokensQuote(list, c.model, in, out)
	return price, err
}

func isInsufficient(err error) bool {
	e := apperror.As(err)
	return err != nil && e != nil && e.Code == "insufficient_balance" && !errors.Is(err, context.Canceled)
}
