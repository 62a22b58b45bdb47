package broadcast

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Money prices a broadcast and reads the balance that pays for it (billing.Service).
type Money interface {
	PriceList(ctx context.Context, project string) (*v1alpha1.PriceList, error)
	Balance(ctx context.Context, project string) (billing.View, error)
	Account(ctx context.Context, project string) (billing.Account, error)
}

// SetMoney makes sends estimate their cost and, for live keys, refuse one the balance cannot
// cover.
func (s *Service) SetMoney(m Money) { s.money = m }

// variable is a placeholder filled per recipient: {{name}}, {{1}}.
var variable = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// fill puts a recipient's variables into text; a placeholder without a value stays.
func fill(text string, vars map[string]string) string {
	if len(vars) == 0 {
		return text
	}
	return variable.ReplaceAllStringFunc(text, func(ph string) string {
		if v, ok := vars[variable.FindStringSubmatch(ph)[1]]; ok {
			return v
		}
		return ph
	})
}

// pricedChannel is the channel a broadcast's messages are priced on: smart is priced as SMS,
// the dearest channel it may pick, so the estimate is a ceiling. "" for channels not charged
// per message.
func pricedChannel(channel string) string {
	switch channel {
	case "smart":
		return "sms"
	case "sms", "sms_oneway":
		return channel
	}
	return ""
}

// estimate prices the recipients still to send to at the project's price list (nil when no list
// prices the project: nothing is charged) and, for a live key, refuses a send the balance
// (with a sub-account's credit) cannot cover: 402 insufficient_balance.
func (s *Service) estimate(ctx context.Context, tx pgx.Tx, b db.Broadcast) error {
	if s.money == nil {
		return nil
	}
	list, err := s.money.PriceList(ctx, b.Project)
	if err != nil || list == nil {
		return err
	}
	var total billing.Micros
	if b.Channel == "email" {
		if total, err = emailShare(list, int(b.PendingCount)); err != nil {
			return err
		}
	}
	if ch := pricedChannel(b.Channel); ch != "" {
		rows, err := db.New(tx).BroadcastRecipientTexts(ctx, b.ID)
		if err != nil {
			return fmt.Errorf("read recipients of %s: %w", b.ID, err)
		}
		text := deref(b.Text)
		for _, r := range rows {
			var vars map[string]string
			_ = json.Unmarshal(r.TemplateVariables, &vars)
			q, ok, err := billing.QuoteOf(list, ch, r.Recipient, fill(text, vars))
			if err != nil {
				return err
			}
			if ok {
				total += q.Price
			}
		}
	}
	if err := db.New(tx).SetBroadcastEstimate(ctx, db.SetBroadcastEstimateParams{ID: b.ID, EstimatedCostMicros: ptr(int64(total))}); err != nil {
		return err
	}
	if b.TestMode || total == 0 {
		return nil
	}
	v, err := s.money.Balance(ctx, b.Project)
	if err != nil {
		return err
	}
	available := v.Balance
	if v.CreditLimit != nil {
		available += billing.FromCents(*v.CreditLimit)
	}
	if available < total {
		e := apperror.New(apperror.PaymentRequired, "insufficient_balance", fmt.Sprintf(
			"The broadcast is estimated at %s USD and the balance covers %s USD; add credit (switchboard balance credit) and send again.",
			total, max(available, 0)))
		e.Details = map[string]any{"estimatedCost": total.USD(), "balance": v.Balance.USD()}
		return e
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// EmailBlock is how many broadcast (marketing) emails one email price pays for: email is billed
// in blocks of 1,000 a month, each charged as the project's count crosses its end (spec: Limits,
// Sending limits 2). The PriceList's email price is the price of a block.
const EmailBlock = 1000

// emailShare is the part of a block's price n emails take: what an email broadcast's estimate
// and reservation count for them (the blocks actually charged depend on the month's count).
func emailShare(list *v1alpha1.PriceList, n int) (billing.Micros, error) {
	q, ok, err := billing.QuoteOf(list, "email", "+", "")
	if err != nil || !ok {
		return 0, err
	}
	return q.Price * billing.Micros(n) / EmailBlock, nil
}

// chargeEmails bills a live broadcast's accepted emails inside tx: the month's count of the
// project's broadcast emails goes up by them, and each block of EmailBlock whose end it crosses
// is charged the PriceList's email price. It returns what it charged.
func (s *Service) chargeEmails(ctx context.Context, tx pgx.Tx, b db.Broadcast, list *v1alpha1.PriceList, msgs []db.Message, now time.Time) (billing.Micros, error) {
	n := 0
	for _, m := range msgs {
		if m.Channel == "email" {
			n++
		}
	}
	if n == 0 || b.TestMode || list == nil {
		return 0, nil
	}
	q, ok, err := billing.QuoteOf(list, "email", "+", "")
	if err != nil || !ok {
		return 0, err
	}
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	after, err := db.New(tx).CountMarketingEmails(ctx, db.CountMarketingEmailsParams{Project: b.Project, Month: month, Sent: int64(n)})
	if err != nil {
		return 0, fmt.Errorf("count broadcast emails of %s: %w", b.Project, err)
	}
	blocks := after/EmailBlock - (after-int64(n))/EmailBlock
	if blocks == 0 {
		return 0, nil
	}
	acct, err := s.money.Account(ctx, b.Project)
	if err != nil {
		return 0, err
	}
	amount := q.Price * billing.Micros(blocks)
	return amount, billing.ChargeAll(ctx, tx, acct, []billing.Charge{{Amount: amount}}, false, now)
}
