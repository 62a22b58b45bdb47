package contact

import (
	"context"
	"maps"
	"testing"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// suppressionsOf is each email channel's suppression reason ("" for none) by its address.
func suppressionsOf(cs ...Contact) map[string]string {
	out := map[string]string{}
	for _, c := range cs {
		for _, ch := range c.Channels {
			switch {
			case ch.Channel != "email" && ch.Suppression != nil:
				out[ch.Identifier] = "a non-email channel has one"
			case ch.Channel == "email" && ch.Suppression != nil:
				out[ch.Identifier] = ch.Suppression.Reason
			case ch.Channel == "email":
				out[ch.Identifier] = ""
			}
		}
	}
	return out
}

// A contact shows its email addresses' entries on the project's suppression list in its own mode.
func TestContactsShowTheirSuppressions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := NewService(pool)
	checks := &emailcheck.Checker{Pool: pool}
	test := apikey.Key{Project: "acme", Environment: apikey.Test}
	live := apikey.Key{Project: "acme", Environment: apikey.Live}
	str := func(v string) *string { return &v }
	email := func(address string) ChannelInput {
		return ChannelInput{Channel: str("email"), Identifier: str(address)}
	}
	sms := ChannelInput{Channel: str("sms"), Identifier: str("+14155550100")}

	if err := checks.Unsubscribe(ctx, "acme", true, "una@example.com", "brd_1"); err != nil {
		t.Fatal(err)
	}
	if err := checks.Suppress(ctx, "acme", true, "gone@example.com", emailcheck.ReasonHardBounce, "msg_1", "550"); err != nil {
		t.Fatal(err)
	}
	if err := checks.Suppress(ctx, "other", true, "ana@example.com", emailcheck.ReasonManual, "", ""); err != nil {
		t.Fatal(err)
	}
	una, err := s.Create(ctx, test, CreateInput{Channels: &[]ChannelInput{sms, email("Una@Example.com"), email("ana@example.com")}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"una@example.com": "unsubscribe", "ana@example.com": ""}
	if got := suppressionsOf(una); !maps.Equal(got, want) {
		t.Fatalf("created: %v, want %v", got, want)
	}
	gone, err := s.Create(ctx, test, CreateInput{Channels: &[]ChannelInput{email("gone@example.com")}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, test, una.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Channels[1].Suppression; e == nil || e.BroadcastID != "brd_1" || e.CreatedAt.IsZero() || e.Until != nil {
		t.Fatalf("una's entry = %+v", e)
	}
	page, err := s.List(ctx, test, ListFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want["gone@example.com"] = "hard_bounce"
	if got := suppressionsOf(page...); len(page) != 2 || !maps.Equal(got, want) {
		t.Fatalf("listed: %v, want %v", got, want)
	}

	// Live keys have their own contacts and their own list.
	liveUna, err := s.Create(ctx, live, CreateInput{Channels: &[]ChannelInput{email("una@example.com")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := suppressionsOf(liveUna); got["una@example.com"] != "" {
		t.Fatalf("a live contact shows the test list: %v", got)
	}
	if err := checks.Suppress(ctx, "acme", false, "una@example.com", emailcheck.ReasonComplaint, "", ""); err != nil {
		t.Fatal(err)
	}
	if liveUna, err = s.Get(ctx, live, liveUna.ID); err != nil || suppressionsOf(liveUna)["una@example.com"] != "complaint" {
		t.Fatalf("live contact = %v, %v", suppressionsOf(liveUna), err)
	}
	if got, _ := s.Get(ctx, test, una.ID); suppressionsOf(got)["una@example.com"] != "unsubscribe" {
		t.Fatalf("the test contact shows the live list: %v", suppressionsOf(got))
	}

	// A channel added, and the answers of the other writes, show it too; removed from the list,
	// the address shows none.
	ch, err := s.AddChannel(ctx, test, gone.ID, email("una.other@example.com"))
	if err != nil || ch.Suppression != nil {
		t.Fatalf("added a clean address: %+v, %v", ch.Suppression, err)
	}
	if err := checks.Unsubscribe(ctx, "acme", true, "una.other@example.com", "brd_2"); err != nil {
		t.Fatal(err)
	}
	if ch, err = s.SetPrimary(ctx, test, gone.ID, ch.ID); err != nil || ch.Suppression == nil || ch.Suppression.BroadcastID != "brd_2" {
		t.Fatalf("set primary: %+v, %v", ch.Suppression, err)
	}
	updated, err := s.Update(ctx, test, gone.ID, UpdateInput{})
	if err != nil || suppressionsOf(updated)["gone@example.com"] != "hard_bounce" || suppressionsOf(updated)["una.other@example.com"] != "unsubscribe" {
		t.Fatalf("updated: %v, %v", suppressionsOf(updated), err)
	}
	if _, err := checks.Remove(ctx, "acme", true, "gone@example.com"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, test, gone.ID); suppressionsOf(got)["gone@example.com"] != "" {
		t.Fatalf("a removed entry still shows: %v", suppressionsOf(got))
	}
}
