package numbers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/periodic"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Renewer keeps bought numbers paid (a worker runs it): every Every it charges the month of each
// number whose paid month is over (suspending one the balance cannot pay, and resuming it once
// it can), stops billing numbers whose PhoneNumber is gone (`kubectl delete`), and settles
// purchases whose outcome was never recorded.
type Renewer struct {
	Service *Service
	// Live reads PhoneNumbers from the API server: a PhoneNumber deleted a moment ago is gone.
	Live client.Reader
	// Every is how often it looks (a minute when zero).
	Every time.Duration
	// Events records suspensions and resumptions on the PhoneNumbers; nil records none.
	Events record.EventRecorder
	// SettleAfter is how old a purchase without an outcome must be before the account is asked
	// about it (DefaultSettleAfter when zero).
	SettleAfter time.Duration
}

// renewBatch bounds the numbers renewed in one transaction.
const renewBatch = 100

// DefaultSettleAfter is how old a purchase in 'buying' must be before the account is asked about
// it: longer than any purchase's own wait.
const DefaultSettleAfter = 2 * purchaseTimeout

// Start implements manager.Runnable.
func (r *Renewer) Start(ctx context.Context) error {
	periodic.Run(ctx, r.Every, time.Minute, func(ctx context.Context) {
		if err := r.Run(ctx); err != nil && ctx.Err() == nil {
			r.Service.Log.Error(err, "renewing phone numbers")
		}
	})
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every worker renews (the rows
// are locked one renewer at a time).
func (r *Renewer) NeedLeaderElection() bool { return false }

// Run does one round: settles, renews.
func (r *Renewer) Run(ctx context.Context) error {
	return errors.Join(r.reviewBundles(ctx), r.settle(ctx), r.renew(ctx))
}

// settle finishes or refunds the purchases nobody recorded the outcome of: the account that was
// buying says whether it holds the number.
func (r *Renewer) settle(ctx context.Context) error {
	s := r.Service
	after := r.SettleAfter
	if after <= 0 {
		after = DefaultSettleAfter
	}
	rows, err := db.Planned(s.Pool).StaleBuyingPhoneNumbers(ctx, db.StaleBuyingPhoneNumbersParams{Before: s.now().Add(-after), MaxRows: renewBatch})
	if err != nil {
		return err
	}
	var errs []error
	for _, row := range rows {
		if row.TestMode || row.Provider == "" {
			// A sandbox purchase has no account to ask: it was bought.
			b := Bought{}
			for _, c := range row.Capabilities {
				b.SMS, b.Voice, b.MMS = b.SMS || c == "sms", b.Voice || c == "voice", b.MMS || c == "mms"
			}
			if _, err := s.finish(ctx, row, b, nil); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		ns, name, _ := strings.Cut(row.Provider, "/")
		shop, err := s.Shops.ShopAt(ctx, ns, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seller, ok := shop.(Seller)
		if !ok {
			continue
		}
		b, found, err := seller.Find(ctx, row.Number)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("ask %s for %s: %w", row.Provider, row.Number, err))
		case found:
			_, err = s.finish(ctx, row, b, nil)
			errs = append(errs, err)
			s.Log.Info("a purchase without an answer was bought: the number is the project's", "purchase", row.ID)
		case row.Bundle != nil:
			// Its bundle was approved and the purchase had no answer: it is tried again.
			b, err := db.Planned(s.Pool).GetNumberBundle(ctx, *row.Bundle)
			if err == nil {
				err = s.buyWithBundle(ctx, shop, row, b.BundleSid)
			}
			errs = append(errs, err)
		default:
			err := s.fail(ctx, row, "the account did not buy the number", nil)
			errs = append(errs, err)
			s.Log.Info("a purchase without an answer was not bought: refunded", "purchase", row.ID)
		}
	}
	return errors.Join(errs...)
}

// renew charges the month of each number whose paid month is over, one transaction per batch.
func (r *Renewer) renew(ctx context.Context) error {
	s := r.Service
	for {
		var done int
		var changed []db.PhoneNumber
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			q := db.Planned(tx)
			now := s.now()
			due, err := q.DuePhoneNumbers(ctx, db.DuePhoneNumbersParams{Now: now, MaxRows: renewBatch})
			if err != nil {
				return err
			}
			done = len(due)
			for _, row := range due {
				gone, err := s.resourceGone(ctx, r.Live, row)
				if err != nil {
					return err
				}
				if gone {
					if err := q.ReleasePhoneNumber(ctx, db.ReleasePhoneNumberParams{ID: row.ID, Now: now}); err != nil {
						return err
					}
					continue
				}
				paid, err := r.charge(ctx, tx, row, now)
				if err != nil {
					return err
				}
				if paid {
					row.RenewsAt = s.nextMonth(row.RenewsAt)
					if !row.RenewsAt.After(now) {
						row.RenewsAt = s.nextMonth(now) // months missed while suspended are not owed
					}
					row.State = "active"
					err = q.RenewPhoneNumber(ctx, db.RenewPhoneNumberParams{ID: row.ID, RenewsAt: row.RenewsAt, Now: now})
				} else {
					row.State = "suspended"
					err = q.SuspendPhoneNumber(ctx, db.SuspendPhoneNumberParams{ID: row.ID, Now: now})
				}
				if err != nil {
					return err
				}
				changed = append(changed, row)
			}
			return nil
		})
		if err != nil {
			return err
		}
		var errs []error
		for _, row := range changed {
			errs = append(errs, r.mark(ctx, row))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if done < renewBatch {
			return nil
		}
	}
}

// charge takes a month of row from its project's balance inside tx; false when the balance
// cannot pay it (past the credit limit).
func (r *Renewer) charge(ctx context.Context, tx pgx.Tx, row db.PhoneNumber, now time.Time) (bool, error) {
	if row.TestMode || row.MonthlyMicros == 0 {
		return true, nil
	}
	payer, err := r.Service.Money.Account(ctx, row.Project)
	if err != nil {
		return false, err
	}
	// Each month's charge has an id of its own: the ledger shows which month it paid.
	id := fmt.Sprintf("%s/%d", row.ID, row.Months+1)
	_, err = tx.Exec(ctx, "SAVEPOINT renewal")
	if err != nil {
		return false, err
	}
	err = billing.ChargeAll(ctx, tx, payer, []billing.Charge{{MessageID: id, Amount: billing.Micros(row.MonthlyMicros)}}, false, now)
	if e := apperror.As(err); e != nil && e.Code == "insufficient_balance" {
		_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT renewal")
		return false, err
	}
	return err == nil, err
}

// mark writes a renewal's outcome on the number's PhoneNumber: its Paid condition (a False one
// makes the controller suspend the number) and its paid month.
func (r *Renewer) mark(ctx context.Context, row db.PhoneNumber) error {
	s := r.Service
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pn v1alpha1.PhoneNumber
		if err := r.Live.Get(ctx, client.ObjectKey{Namespace: row.Namespace, Name: row.Resource}, &pn); err != nil {
			return client.IgnoreNotFound(err)
		}
		before := pn.DeepCopy()
		cond := metav1.Condition{Type: v1alpha1.ConditionNumberPaid, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNumberRenewed,
			Message: fmt.Sprintf("paid until %s", row.RenewsAt.UTC().Format(time.RFC3339)), ObservedGeneration: pn.Generation}
		if row.State == "suspended" {
			cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonNumberRenewalUnpaid
			cond.Message = fmt.Sprintf("the month from %s is unpaid: the project's balance cannot pay %s USD (add credit: it is charged again within minutes)",
				row.RenewsAt.UTC().Format(time.RFC3339), billing.Micros(row.MonthlyMicros))
		}
		var was *metav1.Condition
		if c := meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionNumberPaid); c != nil {
			was = c.DeepCopy() // SetStatusCondition changes the one in the list
		}
		meta.SetStatusCondition(&pn.Status.Conditions, cond)
		if pn.Status.Purchase != nil && row.State == "active" {
			pn.Status.Purchase.PaidUntil = metav1.NewTime(row.RenewsAt.UTC().Truncate(time.Second))
		}
		if equality.Semantic.DeepEqual(before.Status, pn.Status) {
			return nil // a month still unpaid: nothing new to say
		}
		if err := s.Kube.Status().Patch(ctx, &pn, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(kubewrite.FieldManager)); err != nil {
			return err
		}
		switch {
		case r.Events == nil:
		case cond.Status == metav1.ConditionFalse && (was == nil || was.Status != metav1.ConditionFalse):
			r.Events.Event(&pn, corev1.EventTypeWarning, "Suspended", cond.Message)
		case cond.Status == metav1.ConditionTrue && was != nil && was.Status == metav1.ConditionFalse:
			r.Events.Event(&pn, corev1.EventTypeNormal, "Resumed", "the unpaid month is paid: "+cond.Message)
		}
		return nil
	})
}
