package billing_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestParseUSD(t *testing.T) {
	t.Parallel()
	for in, want := range map[v1alpha1.USDAmount]billing.Micros{"0": 0, "2.00": 2_000_000, "0.0079": 7_900, "12.345678": 12_345_678, "7": 7_000_000} {
		if got, err := billing.ParseUSD(in); err != nil || got != want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []v1alpha1.USDAmount{"", "-1", "1.1234567", "1,00", ".5", "abc", "1e3"} {
		if _, err := billing.ParseUSD(bad); err == nil {
			t.Errorf("ParseUSD(%q) took it", bad)
		}
	}
	if got := billing.Micros(7_900).USD(); got != 0.0079 {
		t.Errorf("USD = %v", got)
	}
	if got := billing.Micros(2_000_000).Cents(); got != 200 {
		t.Errorf("Cents = %v", got)
	}
}

// TestSegments: GSM-7 fits 160 septets in one part and 153 in each of more (extension
// characters take two); anything else is UCS-2: 70 and 67.
func TestSegments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string
		want int
	}{
		{"", 1},
		{strings.Repeat("a", 160), 1},
		{strings.Repeat("a", 161), 2},
		{strings.Repeat("a", 306), 2},
		{strings.Repeat("a", 307), 3},
		{strings.Repeat("€", 80), 1},  // 160 septets
		{strings.Repeat("€", 81), 2},  // 162
		{strings.Repeat("é", 160), 1}, // in the default alphabet
		{strings.Repeat("ж", 70), 1},
		{strings.Repeat("ж", 71), 2},
		{strings.Repeat("ж", 134), 2},
		{strings.Repeat("ж", 135), 3},
		{strings.Repeat("😀", 35), 1}, // two UTF-16 units each
		{strings.Repeat("😀", 36), 2},
	} {
		if got := billing.Segments(c.text); got != c.want {
			t.Errorf("Segments(%d × %q) = %d, want %d", len([]rune(c.text)), []rune(c.text)[0:min(1, len(c.text))], got, c.want)
		}
	}
}

func priceList() *v1alpha1.PriceList {
	return &v1alpha1.PriceList{Spec: v1alpha1.PriceListSpec{FreeCredit: "2.00", Prices: []v1alpha1.Price{
		{Channel: "sms", Prefix: "+", Price: "0.05", ProviderCost: "0.04"},
		{Channel: "sms", Prefix: "+1", Price: "0.0079", ProviderCost: "0.0075"},
		{Channel: "sms", Prefix: "+1242", Price: "0.10"},
		{Channel: "email", Prefix: "+", Price: "0.0008"},
	}}}
}

// TestQuoteOf: the longest prefix wins, "+" prices every number and email, an SMS is priced by
// its segments, and a channel the list does not price is not quoted.
func TestQuoteOf(t *testing.T) {
	t.Parallel()
	l := priceList()
	for _, c := range []struct {
		channel, to, text string
		price, cost       billing.Micros
		ok                bool
	}{
		{"sms", "+15005550100", "hi", 7_900, 7_500, true},
		{"sms", "+12425550100", "hi", 100_000, 0, true},
		{"sms", "+447700900000", "hi", 50_000, 40_000, true},
		{"sms", "+15005550100", strings.Repeat("a", 161), 15_800, 15_000, true},
		{"email", "ada@example.com", "hi", 800, 0, true},
		{"voice", "+15005550100", "", 0, 0, false},
	} {
		q, ok, err := billing.QuoteOf(l, c.channel, c.to, c.text)
		if err != nil || ok != c.ok || q.Price != c.price || q.ProviderCost != c.cost {
			t.Errorf("QuoteOf(%s, %s) = %+v %v %v; want %d/%d %v", c.channel, c.to, q, ok, err, c.price, c.cost, c.ok)
		}
	}
}

// TestChargesNeverPassTheCreditLimit: 50 sends at once on a balance that pays for 20 (with a
// credit limit of 10 more): exactly 30 are charged, the others refused with 402, and the
// balance is the ledger's sum to the micro-dollar.
func TestChargesNeverPassTheCreditLimit(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	now := time.Now()
	acct := billing.Account{Project: "acme", OpeningCredit: 200_000, CreditLimit: 100_000} // 0.20 USD, 0.10 below zero
	var wg sync.WaitGroup
	var mu sync.Mutex
	charged, refused := 0, 0
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				return billing.ChargeAll(ctx, tx, acct, []billing.Charge{{MessageID: "msg_" + string(rune('A'+i)), Amount: 10_000}}, false, now)
			})
			mu.Lock()
			defer mu.Unlock()
			if e := apperror.As(err); e != nil && e.Code == "insufficient_balance" && e.Kind == apperror.PaymentRequired {
				refused++
			} else if err != nil {
				t.Errorf("charge: %v", err)
			} else {
				charged++
			}
		}()
	}
	wg.Wait()
	if charged != 30 || refused != 20 {
		t.Fatalf("%d charged, %d refused; want 30 and 20", charged, refused)
	}
	b, err := billing.Read(ctx, pool, acct, now)
	if err != nil || b.Balance != -100_000 || b.Spent != 300_000 {
		t.Fatalf("balance %+v, %v", b, err)
	}
	sum, err := db.Planned(pool).LedgerSum(ctx, "acme")
	if err != nil || billing.Micros(sum) != b.Balance {
		t.Fatalf("ledger sum %d, balance %d (%v)", sum, b.Balance, err)
	}
}

// TestRefundAndCredit: a refund returns a charge once; email needs a balance above zero; a
// credit must be positive; the ledger always sums to the balance.
func TestRefundAndCredit(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	now := time.Now()
	acct := billing.Account{Project: "acme", OpeningCredit: 50_000}
	charge := func(amount billing.Micros, id string, email bool) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var cs []billing.Charge
			if amount > 0 {
				cs = []billing.Charge{{MessageID: id, Amount: amount}}
			}
			return billing.ChargeAll(ctx, tx, acct, cs, email, now)
		})
	}
	if err := charge(50_000, "msg_1", false); err != nil {
		t.Fatal(err)
	}
	if err := charge(0, "", true); apperror.As(err) == nil || apperror.As(err).Code != "insufficient_balance" {
		t.Fatalf("email at zero balance: %v", err)
	}
	for range 2 {
		var got billing.Micros
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			got, err = billing.Refund(ctx, tx, "acme", "msg_1", now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if b, _ := billing.Read(ctx, pool, acct, now); b.Balance != 50_000 {
			t.Fatalf("after refund (%d) the balance is %d", got, b.Balance)
		}
	}
	if err := charge(0, "", true); err != nil {
		t.Fatalf("email above zero: %v", err)
	}
	if _, err := billing.Credit(ctx, pool, acct, -5, "", now); apperror.As(err) == nil {
		t.Fatalf("a negative credit: %v", err)
	}
	if b, err := billing.Credit(ctx, pool, acct, 1_000_000, "invoice 7", now); err != nil || b != 1_050_000 {
		t.Fatalf("credit = %d, %v", b, err)
	}
	sum, err := db.Planned(pool).LedgerSum(ctx, "acme")
	if err != nil || sum != 1_050_000 {
		t.Fatalf("ledger sum %d (%v)", sum, err)
	}
}

// BenchmarkCharge is one send's charge in a transaction of its own: the balance row moved and
// the ledger entry written.
func BenchmarkCharge(b *testing.B) {
	pool := pgtest.NewPool(b)
	ctx := context.Background()
	acct := billing.Account{Project: "acme", OpeningCredit: 1 << 50}
	now := time.Now()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return billing.ChargeAll(ctx, tx, acct, []billing.Charge{{MessageID: "msg_" + strconv.Itoa(i), Amount: 7_900}}, false, now)
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSubAccountsDrawOnTheirParent: a parent with 0.80 USD and two sub-accounts with nothing of
// their own (credit limits 0.30 and 0.25) are charged 10,000 µ$ at a time, 120 times at once,
// some transactions charging a sub-account and its parent together: exactly 80 charges go
// through (what the parent can pay), no sub-account draws past its credit limit, no transaction
// deadlocks, and every balance is its ledger's sum. Money reaching a sub-account pays its parent
// back first; a sub-account without a credit limit spends only its own balance.
func TestSubAccountsDrawOnTheirParent(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	now := time.Now()
	parent := billing.Account{Project: "acme", OpeningCredit: 800_000}
	subA := billing.Account{Project: "sa-a", CreditLimit: 300_000, Parent: &parent}
	subB := billing.Account{Project: "sa-b", CreditLimit: 250_000, Parent: &parent}
	var wg sync.WaitGroup
	var mu sync.Mutex
	charged := map[string]int{}
	for i := range 40 {
		for j, a := range []billing.Account{subA, subB, parent} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := "msg_" + strconv.Itoa(i*3+j)
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if i%4 == 0 { // with the parent's own send in the same transaction, as a batch of sends does
						if err := billing.LockAll(ctx, tx, []billing.Account{a, parent}, now); err != nil {
							return err
						}
						if err := billing.ChargeAll(ctx, tx, parent, nil, false, now); err != nil {
							return err
						}
					}
					return billing.ChargeAll(ctx, tx, a, []billing.Charge{{MessageID: id, Amount: 10_000}}, false, now)
				})
				mu.Lock()
				defer mu.Unlock()
				if e := apperror.As(err); e != nil && e.Code == "insufficient_balance" {
					return
				} else if err != nil {
					t.Errorf("charge %s: %v", a.Project, err)
				}
				charged[a.Project]++
			}()
		}
	}
	wg.Wait()
	if total := charged["acme"] + charged["sa-a"] + charged["sa-b"]; total != 80 || charged["sa-a"] > 30 || charged["sa-b"] > 25 {
		t.Fatalf("charged %v; want 80 in all, at most 30 for sa-a and 25 for sa-b", charged)
	}
	balance := func(a billing.Account) billing.Micros {
		t.Helper()
		b, err := billing.Read(ctx, pool, a, now)
		if err != nil {
			t.Fatal(err)
		}
		return b.Balance
	}
	ledgerIsBalance := func() {
		t.Helper()
		for _, p := range []string{"acme", "sa-a", "sa-b"} {
			row, err := db.Planned(pool).GetBalance(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if sum, err := db.Planned(pool).LedgerSum(ctx, p); err != nil || sum != row.BalanceMicros {
				t.Fatalf("%s: ledger sum %d, balance %d (%v)", p, sum, row.BalanceMicros, err)
			}
		}
	}
	if p, a, b := balance(parent), balance(subA), balance(subB); p != 0 || a != -10_000*billing.Micros(charged["sa-a"]) || b != -10_000*billing.Micros(charged["sa-b"]) {
		t.Fatalf("balances: parent %d, sa-a %d, sa-b %d", p, a, b)
	}
	ledgerIsBalance()

	// Nothing left to draw: the sub-account is refused, nothing moves.
	charge := func(a billing.Account, id string, amount billing.Micros, email bool) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var cs []billing.Charge
			if amount > 0 {
				cs = []billing.Charge{{MessageID: id, Amount: amount}}
			}
			return billing.ChargeAll(ctx, tx, a, cs, email, now)
		})
	}
	if err := charge(subA, "msg_late", 10_000, false); apperror.As(err) == nil {
		t.Fatalf("a charge the parent cannot pay: %v", err)
	}
	if err := charge(subA, "", 0, true); apperror.As(err) == nil {
		t.Fatalf("an email with no money anywhere: %v", err)
	}

	// Money for the sub-account pays its parent back first.
	owedA := -balance(subA)
	if _, err := billing.Credit(ctx, pool, subA, owedA+50_000, "top-up", now); err != nil {
		t.Fatal(err)
	}
	if p, a := balance(parent), balance(subA); p != owedA || a != 50_000 {
		t.Fatalf("after the top-up: parent %d (want %d), sa-a %d", p, owedA, a)
	}
	// A refund of a charge the parent paid goes back to the parent.
	if charged["sa-b"] > 0 {
		var refunded billing.Micros
		for i := range 120 {
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
				refunded, err = billing.Refund(ctx, tx, "sa-b", "msg_"+strconv.Itoa(i), now)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if refunded > 0 {
				break
			}
		}
		if p := balance(parent); refunded != 10_000 || p != owedA+10_000 {
			t.Fatalf("refund %d: parent %d, want %d", refunded, p, owedA+10_000)
		}
	}
	ledgerIsBalance()

	// Without a credit limit a sub-account spends its own balance only.
	own := billing.Account{Project: "sa-c", Parent: &parent}
	if err := charge(own, "msg_c", 1, false); apperror.As(err) == nil {
		t.Fatalf("a sub-account without credit spent: %v", err)
	}
	if _, err := billing.Credit(ctx, pool, own, 20_000, "", now); err != nil {
		t.Fatal(err)
	}
	if err := charge(own, "msg_c", 20_000, false); err != nil {
		t.Fatal(err)
	}
	if b := balance(own); b != 0 {
		t.Fatalf("sa-c balance %d", b)
	}
	ledgerIsBalance()
}

// A number's price is the most specific entry's: country and type, the country's "*", "*" and
// the type, then "*" and "*"; none: not for sale.
func TestNumberQuote(t *testing.T) {
	list := &v1alpha1.PriceList{Spec: v1alpha1.PriceListSpec{NumberPrices: []v1alpha1.NumberPrice{
		{Country: "US", Type: "local", Monthly: "1.15"},
		{Country: "US", Type: "*", Monthly: "2.00", Upfront: "1.00"},
		{Country: "*", Type: "tollFree", Monthly: "3.00"},
	}}}
	for _, c := range []struct {
		country, typ     string
		monthly, upfront billing.Micros
		ok               bool
	}{
		{"US", "local", 1_150_000, 0, true},
		{"us", "mobile", 2_000_000, 1_000_000, true},
		{"DE", "tollFree", 3_000_000, 0, true},
		{"DE", "local", 0, 0, false},
	} {
		m, u, ok, err := billing.NumberQuote(list, c.country, c.typ)
		if err != nil || ok != c.ok || m != c.monthly || u != c.upfront {
			t.Errorf("NumberQuote(%s, %s) = %d %d %v %v", c.country, c.typ, m, u, ok, err)
		}
	}
	if _, _, ok, _ := billing.NumberQuote(nil, "US", "local"); ok {
		t.Error("a missing price list prices a number")
	}
}
