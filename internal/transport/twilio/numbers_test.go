package twilio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

func TestFindIncomingNumber(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	// Twilio's filter matches part of a number: the longer one matches too, and is listed first.
	peer.AddIncomingNumber("+141555501009")
	pn := peer.AddIncomingNumberWith(twiliotest.IncomingNumber{PhoneNumber: "+14155550100", SMS: true})

	got, found, err := tr.FindIncomingNumber(ctx, "+14155550100")
	if err != nil || !found || got.SID != pn || !got.SMS || got.MMS || got.Voice {
		t.Fatalf("FindIncomingNumber = %+v, %v, %v; want %s with sms only", got, found, err, pn)
	}
	if _, found, err := tr.FindIncomingNumber(ctx, "+14155559999"); err != nil || found {
		t.Fatalf("a number of no account: found %v, %v", found, err)
	}
	// Released, the number is no longer the account's.
	peer.ReleaseIncomingNumber("+14155550100")
	if _, found, err := tr.FindIncomingNumber(ctx, "+14155550100"); err != nil || found {
		t.Fatalf("a released number: found %v, %v", found, err)
	}
}

func TestFindIncomingNumberFollowsPages(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	// 1,000 longer numbers match the filter before the number itself: it is on the second page.
	for i := range 1000 {
		peer.AddIncomingNumber(fmt.Sprintf("+14155550100%03d", i))
	}
	pn := peer.AddIncomingNumber("+14155550100")
	lists := peer.IncomingNumberLists()
	got, found, err := tr.FindIncomingNumber(context.Background(), "+14155550100")
	if err != nil || !found || got.SID != pn {
		t.Fatalf("FindIncomingNumber = %+v, %v, %v; want %s", got, found, err, pn)
	}
	if n := peer.IncomingNumberLists() - lists; n != 2 {
		t.Errorf("%d pages read, want 2", n)
	}
}

func TestFindIncomingNumberErrors(t *testing.T) {
	t.Parallel()
	peer, _ := newTransport(t)
	peer.AddIncomingNumber("+14155550100")
	ctx := context.Background()

	bad := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: "wrongwrongwrong"})
	_, found, err := bad.FindIncomingNumber(ctx, "+14155550100")
	if f := transport.AsFailure(err); f == nil || f.Code != twilio.CodeProviderAuthFailed || found {
		t.Errorf("bad credentials: %v (%T), found %v; want PROVIDER_AUTH_FAILED", err, err, found)
	}
	if err != nil && strings.Contains(err.Error(), "wrongwrongwrong") {
		t.Errorf("the error repeats the auth token")
	}

	peer2, tr := newTransport(t)
	peer2.Storm(1, http.StatusServiceUnavailable)
	var tmp *transport.Temporary
	if _, found, err := tr.FindIncomingNumber(ctx, "+14155550100"); !errors.As(err, &tmp) || found {
		t.Errorf("a 503: %v (%T), found %v; want *transport.Temporary", err, err, found)
	}
}

// The peer's list answers as Twilio does: pages named by next_page_uri, Twilio's error body for
// what Twilio would refuse.
func TestPeerIncomingNumbersList(t *testing.T) {
	t.Parallel()
	peer, _ := newTransport(t)
	for i := range 5 {
		peer.AddIncomingNumber(fmt.Sprintf("+1415555010%d", i))
	}
	peer.AddIncomingNumber("+442071838750")
	get := func(query string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, peer.URL+"/2010-04-01/Accounts/"+twiliotest.AccountSID+"/IncomingPhoneNumbers.json"+query, nil)
		req.SetBasicAuth(twiliotest.AccountSID, twiliotest.AuthToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	numbers := func(body map[string]any) []string {
		var out []string
		list, _ := body["incoming_phone_numbers"].([]any)
		for _, n := range list {
			out = append(out, n.(map[string]any)["phone_number"].(string))
		}
		return out
	}

	// "*" stands for one digit; pages of two, each naming the next.
	status, body := get("?PhoneNumber=%2B1415555010*&PageSize=2")
	if status != 200 || fmt.Sprint(numbers(body)) != "[+14155550100 +14155550101]" || body["page"].(float64) != 0 || body["previous_page_uri"] != nil {
		t.Fatalf("first page = %d %v", status, body)
	}
	var seen []string
	for next, _ := body["next_page_uri"].(string); next != ""; next, _ = body["next_page_uri"].(string) {
		status, body = get(strings.TrimPrefix(next, "/2010-04-01/Accounts/"+twiliotest.AccountSID+"/IncomingPhoneNumbers.json"))
		if status != 200 {
			t.Fatalf("page %s = %d %v", next, status, body)
		}
		seen = append(seen, numbers(body)...)
	}
	if fmt.Sprint(seen) != "[+14155550102 +14155550103 +14155550104]" {
		t.Errorf("later pages = %v", seen)
	}

	for _, query := range []string{"?PageSize=0", "?PageSize=x", "?Page=-1", "?PageToken=PAnope", "?PageToken=nope"} {
		status, body := get(query)
		if status != 400 || body["code"] != float64(20001) || body["more_info"] == nil {
			t.Errorf("%s = %d %v, want Twilio's 400 with code 20001", query, status, body)
		}
	}
	// More than 1,000 a page is taken as 1,000.
	if status, body := get("?PageSize=5000"); status != 200 || body["page_size"] != float64(1000) || len(numbers(body)) != 6 {
		t.Errorf("PageSize=5000 = %d %v", status, body)
	}
}
