package broadcast

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// draftOf stores a test-mode draft on channel with text and adds contacts to it, a request of
// MaxContactsPerRequest at a time, as the API adds them.
func draftOf(t testing.TB, pool *pgxpool.Pool, channel, text string, contacts []ContactInput) (*Service, db.Broadcast) {
	t.Helper()
	ctx := context.Background()
	s := NewService(pool, nil, nil, nil, nil)
	k := Key{Project: "acme", TestMode: true}
	name := "estimate"
	b, err := s.Create(ctx, k, Input{Channel: &channel, Name: &name, Text: &text})
	if err != nil {
		t.Fatal(err)
	}
	for len(contacts) > 0 {
		n := min(len(contacts), MaxContactsPerRequest)
		if _, err := s.AddContacts(ctx, k, b.ID, contacts[:n]); err != nil {
			t.Fatal(err)
		}
		contacts = contacts[n:]
	}
	row, err := db.Planned(pool).BroadcastByID(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s, row
}

func openPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func contact(to string, vars map[string]string) ContactInput {
	c := ContactInput{Recipient: &to}
	if vars != nil {
		c.TemplateVariables, _ = json.Marshal(vars)
	}
	return c
}

func priceList(prices ...v1alpha1.Price) *v1alpha1.PriceList {
	return &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Name: "prices"}, Spec: v1alpha1.PriceListSpec{Prices: prices}}
}

// quoted is what each pending recipient's message costs, priced one by one as it is sent: the
// estimate must come to the same.
func quoted(t *testing.T, pool *pgxpool.Pool, b db.Broadcast, list *v1alpha1.PriceList) billing.Micros {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT recipient, template_variables FROM broadcast_contacts WHERE broadcast_id = $1`, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var total billing.Micros
	for rows.Next() {
		var to string
		var raw []byte
		if err := rows.Scan(&to, &raw); err != nil {
			t.Fatal(err)
		}
		var vars map[string]string
		_ = json.Unmarshal(raw, &vars)
		q, ok, err := billing.QuoteOf(list, pricedChannel(b.Channel), to, fill(deref(b.Text), vars))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			total += q.Price
		}
	}
	return total
}

// TestEstimateIsEachRecipientsPrice: the estimate, grouped in Postgres, is the sum of what each
// recipient's message is quoted when it is sent: by the longest prefix of the price list, and in
// as many SMS parts as its text filled in takes (GSM or UCS-2, extension characters, characters
// outside the BMP, placeholders without a value left as written), recipients added before the
// lengths were kept included.
func TestEstimateIsEachRecipientsPrice(t *testing.T) {
	t.Parallel()
	lists := map[string]*v1alpha1.PriceList{
		"by prefix": priceList(v1alpha1.Price{Channel: "sms", Prefix: "+44", Price: "0.04"},
			v1alpha1.Price{Channel: "sms", Prefix: "+447", Price: "0.05"}, v1alpha1.Price{Channel: "sms", Prefix: "+1", Price: "0.0079"},
			v1alpha1.Price{Channel: "sms", Prefix: "+1876", Price: "0.09"}, v1alpha1.Price{Channel: "sms_oneway", Prefix: "+", Price: "1.00"},
			v1alpha1.Price{Channel: "email", Prefix: "+", Price: "0.80"}),
		"everywhere": priceList(v1alpha1.Price{Channel: "sms", Prefix: "+", Price: "0.10"}, v1alpha1.Price{Channel: "sms", Prefix: "+44", Price: "0.03"}),
	}
	numbers := []string{"+447700900", "+442071838", "+120255501", "+187655501", "+336123456"}
	vars := []map[string]string{
		nil,
		{},
		{"name": "Ann", "1": "42"},
		{"name": "Ann"}, // {{1}} stays as written
		{"name": strings.Repeat("a", 150), "1": "7"},
		{"name": "€{[]}~^|\\", "1": "ext"},
		{"name": "Жанна", "1": "1"},
		{"name": strings.Repeat("😀", 40), "1": "2"},
		{"name": strings.Repeat("é", 200), "1": "ñ", "unused": strings.Repeat("Ж", 500)},
	}
	var contacts []ContactInput
	for i, n := range numbers {
		for j, v := range vars {
			contacts = append(contacts, contact(fmt.Sprintf("%s%d%d", n, i, j), v))
		}
	}
	for _, c := range []struct{ channel, text string }{
		{"sms", "Hi {{name}}, your code is {{1}}. Bye {{ name }}!"},
		{"sms", "No placeholder here, 20% off today"},
		{"sms", "Olá {{name}} ✓ {{1}}"},
		{"sms", strings.Repeat("x", 150) + "{{name}}"},
		{"smart", "Hi {{name}}"},
		{"sms_oneway", "Code {{1}}"},
	} {
		t.Run(c.channel+" "+c.text[:min(len(c.text), 20)], func(t *testing.T) {
			t.Parallel()
			pool := openPool(t)
			_, b := draftOf(t, pool, c.channel, c.text, contacts)
			// Recipients added before their variables' lengths were kept.
			if _, err := pool.Exec(context.Background(), `UPDATE broadcast_contacts SET variable_lengths = NULL
				WHERE broadcast_id = $1 AND recipient LIKE '+44%'`, b.ID); err != nil {
				t.Fatal(err)
			}
			for name, list := range lists {
				want := quoted(t, pool, b, list)
				got, err := estimateCost(context.Background(), db.Planned(pool), b, list)
				if err != nil || got != want {
					t.Errorf("%s: estimate %s (%v), each recipient's quote %s", name, got, err, want)
				}
			}
		})
	}
}

// BenchmarkEstimate prices a draft of 100,000 recipients (the size broadcasts are benchmarked
// at), each with a name filled into the text, at a price list of two prefixes.
func BenchmarkEstimate(b *testing.B) {
	pool := openPool(b)
	contacts := make([]ContactInput, 100_000)
	for i := range contacts {
		contacts[i] = contact(fmt.Sprintf("+4477009%05d", i), map[string]string{"name": fmt.Sprintf("Recipient %d", i)})
	}
	_, row := draftOf(b, pool, "sms", "Hi {{name}}, 20% off everything today only", contacts)
	list := priceList(v1alpha1.Price{Channel: "sms", Prefix: "+44", Price: "0.04"}, v1alpha1.Price{Channel: "sms", Prefix: "+447", Price: "0.05"})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		total, err := estimateCost(ctx, db.Planned(tx), row, list)
		_ = tx.Rollback(ctx)
		if err != nil || total != 100_000*50_000 {
			b.Fatalf("estimate %s (%v)", total, err)
		}
	}
}
