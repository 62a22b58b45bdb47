package broadcast

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
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
	total, err := estimateCost(ctx, db.Planned(tx), b, list)
	if err != nil {
		return err
	}
	if err := db.Planned(tx).SetBroadcastEstimate(ctx, db.SetBroadcastEstimateParams{ID: b.ID, EstimatedCostMicros: ptr(int64(total))}); err != nil {
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

// estimateCost is what b's recipients still to send to cost at list. Postgres groups them by
// their price prefix and the length of their text filled in (BroadcastPriceGroups): a few rows
// whatever the broadcast's size, each priced as its recipients' messages are (QuoteOf of the
// prefix, in the parts the length takes).
func estimateCost(ctx context.Context, q *db.Queries, b db.Broadcast, list *v1alpha1.PriceList) (billing.Micros, error) {
	if b.Channel == "email" {
		return emailShare(list, int(b.PendingCount))
	}
	ch := pricedChannel(b.Channel)
	if ch == "" {
		return 0, nil
	}
	text := deref(b.Text)
	literal, placeholders := splitText(text)
	p := db.BroadcastPriceGroupsParams{BroadcastID: b.ID, Prefixes: []string{}, Names: []string{}, RawSeptets: []int32{},
		RawUnits: []int32{}, RawGsm: []bool{}}
	for _, e := range list.Spec.Prices {
		if string(e.Channel) == ch {
			p.Prefixes = append(p.Prefixes, e.Prefix)
			p.HeadLen = max(p.HeadLen, int32(len(e.Prefix)))
		}
	}
	for _, ph := range placeholders {
		raw := billing.Measure(ph.raw)
		p.Names, p.RawSeptets = append(p.Names, ph.name), append(p.RawSeptets, int32(raw.Septets))
		p.RawUnits, p.RawGsm = append(p.RawUnits, int32(raw.Units)), append(p.RawGsm, raw.GSM)
	}
	groups, err := q.BroadcastPriceGroups(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("price recipients of %s: %w", b.ID, err)
	}
	var total billing.Micros
	for _, g := range groups {
		if g.Prefix == "" {
			continue // nothing in the list prices them
		}
		// The prefix as the number: the entries that match it are those that match each of
		// the group's numbers.
		part, ok, err := billing.QuoteOf(list, ch, g.Prefix, "")
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		l := literal.Plus(billing.Length{Septets: int(g.Septets), Units: int(g.Units), GSM: g.Gsm})
		total += part.Price * billing.Micros(l.Segments()) * billing.Micros(g.N)
	}
	if len(placeholders) == 0 {
		return total, nil
	}
	unmeasured, err := q.BroadcastUnmeasuredTexts(ctx, b.ID)
	if err != nil {
		return 0, fmt.Errorf("read recipients of %s: %w", b.ID, err)
	}
	for _, r := range unmeasured {
		var vars map[string]string
		_ = json.Unmarshal(r.TemplateVariables, &vars)
		q, ok, err := billing.QuoteOf(list, ch, r.Recipient, fill(text, vars))
		if err != nil {
			return 0, err
		}
		if ok {
			total += q.Price
		}
	}
	return total, nil
}

// placeholder is one placeholder of a text: its variable's name and how it is written.
type placeholder struct{ name, raw string }

// splitText cuts text into what fill leaves as it is (its literal length) and its
// placeholders, in order.
func splitText(text string) (billing.Length, []placeholder) {
	var literal strings.Builder
	var out []placeholder
	at := 0
	for _, m := range variable.FindAllStringSubmatchIndex(text, -1) {
		literal.WriteString(text[at:m[0]])
		out = append(out, placeholder{name: text[m[2]:m[3]], raw: text[m[0]:m[1]]})
		at = m[1]
	}
	literal.WriteString(text[at:])
	return billing.Measure(literal.String()), out
}

// variableLengths is what each of a recipient's template variables adds to an SMS
// ({"name": [septets, units, gsm 0|1]}), kept with the recipient for estimateCost; nil
// without variables.
func variableLengths(vars []byte) []byte {
	if vars == nil {
		return nil
	}
	var m map[string]string
	if json.Unmarshal(vars, &m) != nil {
		return nil
	}
	out := make(map[string][3]int, len(m))
	for k, v := range m {
		l := billing.Measure(v)
		gsm := 0
		if l.GSM {
			gsm = 1
		}
		out[k] = [3]int{l.Septets, l.Units, gsm}
	}
	b, _ := json.Marshal(out)
	return b
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
	after, err := db.Planned(tx).CountMarketingEmails(ctx, db.CountMarketingEmailsParams{Project: b.Project, Month: month, Sent: int64(n)})
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
