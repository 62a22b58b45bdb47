package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
)

// invitationEvents are the invitation.status_changed data the receiver got for an invitation.
func (h *hookReceiver) invitationEvents(id string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, ev := range h.events {
		if data, _ := ev["data"].(map[string]any); ev["event"] == "invitation.status_changed" && data["invitationId"] == id {
			out = append(out, data)
		}
	}
	return out
}

// invitationsProject is a project whose invitations webhook goes to rcv, with a full key.
func invitationsProject(t *testing.T, in *instance, rcv *hookReceiver) (string, string) {
	t.Helper()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	if r := in.post("/v1/invitations/webhook", key, `{"url":"`+rcv.URL+`/invitations"}`); r.status != 201 {
		t.Fatalf("invitations webhook = %d %v", r.status, r.body)
	}
	return acme, key
}

// TestInvitations creates, reads, lists and cancels invitations on v1: the WIRE object, a link
// whose token the resource never holds, expiry read from the date, and one event per stored change.
func TestInvitations(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, rcv.trusted(), func(c *app.Config) { c.DashboardURL = "https://connect.acme.example" })
	acme, key := invitationsProject(t, in, rcv)

	// No body at all: a WhatsApp invitation for 7 days.
	r := in.do("POST", "/v1/invitations", key, nil)
	if r.status != 201 {
		t.Fatalf("create without a body = %d %v", r.status, r.body)
	}
	plain := r.body["invitation"].(map[string]any)
	id, token := plain["id"].(string), plain["token"].(string)
	created, _ := time.Parse(time.RFC3339, plain["createdAt"].(string))
	expires, _ := time.Parse(time.RFC3339, plain["expiresAt"].(string))
	if plain["status"] != "pending" || plain["connectionType"] != "whatsapp_waba" || plain["url"] != "https://connect.acme.example/invitations/"+token ||
		len(token) < 40 || expires.Sub(created) != 7*24*time.Hour || plain["senderId"] != nil || plain["connectedAccount"] != nil || len(plain) != 19 {
		t.Errorf("invitation = %v", plain)
	}

	// The resource keeps the token's hash, never the token.
	var inv v1alpha1.Invitation
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: id}, &inv); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(token))
	raw, _ := json.Marshal(inv)
	if inv.Status.TokenHash != hex.EncodeToString(sum[:]) || strings.Contains(string(raw), token) || inv.Stored() != v1alpha1.InvitationPending {
		t.Errorf("resource = %s", raw)
	}

	r = in.post("/v1/invitations", key, `{"clientName":"Ana's Bakery","clientEmail":"ana@bakery.example","clientPhone":"+5511999990000",
		"connectionType":"messenger","expiresInDays":30}`)
	page := r.body["invitation"].(map[string]any)
	if r.status != 201 || page["connectionType"] != "messenger" || page["clientName"] != "Ana's Bakery" || page["phoneNumberId"] != nil ||
		page["clientPhone"] != "+5511999990000" || page["token"] == token {
		t.Errorf("messenger invitation = %d %v", r.status, r.body)
	}
	r = in.post("/v1/invitations", key, `{"phoneNumberId":"106540352242922","allowedPhoneCountries":["br","MX"],"expiresInDays":1}`)
	wa := r.body["invitation"].(map[string]any)
	if r.status != 201 || wa["phoneNumberId"] != "106540352242922" {
		t.Errorf("whatsapp invitation = %d %v", r.status, r.body)
	}
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: wa["id"].(string)}, &inv); err != nil ||
		!slices.Equal(inv.Spec.AllowedPhoneCountries, []string{"BR", "MX"}) {
		t.Errorf("allowed countries = %v %v", inv.Spec.AllowedPhoneCountries, err)
	}

	// Reading: the same object; the list oldest first, filtered, in pages.
	if r := in.get("/v1/invitations/"+id, key); r.status != 200 || fmt.Sprint(r.body["invitation"]) != fmt.Sprint(plain) {
		t.Errorf("get = %d %v, want %v", r.status, r.body, plain)
	}
	if r := in.get("/v1/invitations/inv-nothere", key); r.status != 404 {
		t.Errorf("get unknown = %d %v", r.status, r.body)
	}
	ids := func(path string) []string {
		var out []string
		for _, it := range in.get(path, key).body["items"].([]any) {
			out = append(out, it.(map[string]any)["id"].(string))
		}
		return out
	}
	// Oldest first, then by id (creation times are whole seconds).
	made := []map[string]any{plain, page, wa}
	slices.SortStableFunc(made, func(a, b map[string]any) int {
		return strings.Compare(a["createdAt"].(string)+a["id"].(string), b["createdAt"].(string)+b["id"].(string))
	})
	var all []string
	for _, m := range made {
		all = append(all, m["id"].(string))
	}
	if got := ids("/v1/invitations"); !slices.Equal(got, all) {
		t.Errorf("list = %v, want %v", got, all)
	}
	first := in.get("/v1/invitations?limit=2", key).body
	if next := first["nextCursor"].(string); next == "" || !slices.Equal(ids("/v1/invitations?limit=2&cursor="+next), all[2:]) {
		t.Errorf("pages = %v", first)
	}
	if r := in.get("/v1/invitations?status=bogus", key); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"status"}) {
		t.Errorf("bad status filter = %d %v", r.status, r.body)
	}

	// Cancel: the link stops working, one event; a second cancel is refused and changes nothing.
	r = in.post("/v1/invitations/"+id+"/cancel", key, "")
	if r.status != 200 || r.body["invitation"].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("cancel = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return len(rcv.invitationEvents(id)) == 1 })
	if ev := rcv.invitationEvents(id)[0]; ev["previousStatus"] != "pending" || ev["currentStatus"] != "cancelled" ||
		ev["connectionType"] != "whatsapp_waba" || ev["clientName"] != nil {
		t.Errorf("event = %v", ev)
	}
	r = in.post("/v1/invitations/"+id+"/cancel", key, "")
	if details, _ := r.body["details"].(map[string]any); r.status != 400 || r.body["code"] != "invalid_request" || details["status"] != "cancelled" {
		t.Errorf("second cancel = %d %v", r.status, r.body)
	}
	if got := ids("/v1/invitations?status=cancelled"); !slices.Equal(got, []string{id}) {
		t.Errorf("cancelled = %v", got)
	}

	// Expiry is read from the date: no stored change, no event; an expired invitation cannot be cancelled.
	expiring := wa["id"].(string)
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: expiring}, &inv); err != nil {
		t.Fatal(err)
	}
	inv.Status.ExpiresAt = &metav1.Time{Time: time.Now().Add(-time.Minute)}
	if err := in.k8s.Status().Update(context.Background(), &inv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.get("/v1/invitations/"+expiring, key).body["invitation"].(map[string]any)["status"] == "expired"
	})
	if got := ids("/v1/invitations?status=expired"); !slices.Equal(got, []string{expiring}) {
		t.Errorf("expired = %v", got)
	}
	if r := in.post("/v1/invitations/"+expiring+"/cancel", key, ""); r.status != 400 {
		t.Errorf("cancel of an expired invitation = %d %v", r.status, r.body)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(rcv.invitationEvents(expiring)); n != 0 {
		t.Errorf("%d events for an expiry", n)
	}

	// Invitations hold the client's contact details: reading, creating and cancelling take a
	// full key.
	narrow := newKey(t, in, acme, apikey.Live, "messages:read")
	if r := in.get("/v1/invitations", narrow); r.status != 403 {
		t.Errorf("list with a narrow key = %d", r.status)
	}
	if r := in.post("/v1/invitations", narrow, `{}`); r.status != 403 {
		t.Errorf("create with a narrow key = %d", r.status)
	}
	if r := in.post("/v1/invitations/"+page["id"].(string)+"/cancel", narrow, ""); r.status != 403 {
		t.Errorf("cancel with a narrow key = %d", r.status)
	}
}

// TestInvitationBadInput refuses what the spec refuses, with the field's path, creating nothing.
func TestInvitationBadInput(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	for name, c := range map[string]struct{ body, path string }{
		"a name of 101 characters":         {`{"clientName":"` + strings.Repeat("a", 101) + `"}`, "clientName"},
		"0 days":                           {`{"expiresInDays":0}`, "expiresInDays"},
		"31 days":                          {`{"expiresInDays":31}`, "expiresInDays"},
		"a country of 3 characters":        {`{"allowedPhoneCountries":["BR","BRA"]}`, "allowedPhoneCountries[1]"},
		"phoneNumberId on messenger":       {`{"connectionType":"messenger","phoneNumberId":"106540352242922"}`, "phoneNumberId"},
		"allowed countries on messenger":   {`{"connectionType":"messenger","allowedPhoneCountries":["BR"]}`, "allowedPhoneCountries"},
		"a phone that is not E.164":        {`{"clientPhone":"11 99999-0000"}`, "clientPhone"},
		"an email that is not one":         {`{"clientEmail":"ana at bakery"}`, "clientEmail"},
		"an unknown connection type":       {`{"connectionType":"sms"}`, "connectionType"},
		"a phone number id that is a name": {`{"phoneNumberId":"my-number"}`, "phoneNumberId"},
		"days as a string":                 {`{"expiresInDays":"7"}`, "expiresInDays"},
	} {
		r := in.post("/v1/invitations", key, c.body)
		if r.status != 400 || r.body["code"] != "invalid_request" || !slices.Contains(fieldPaths(r), c.path) {
			t.Errorf("%s: %d %v, want 400 on %s", name, r.status, r.body, c.path)
		}
	}
	if r := in.post("/v1/invitations", key, `{"clientName":`); r.status != 400 {
		t.Errorf("broken JSON = %d %v", r.status, r.body)
	}
	var list v1alpha1.InvitationList
	if err := in.k8s.List(context.Background(), &list, client.InNamespace(acme)); err != nil || len(list.Items) != 0 {
		t.Errorf("refused requests left %d invitations (%v)", len(list.Items), err)
	}
}

// TestInvitationEventsGoToTheCreatingProject: a sub-account's invitation is announced to the
// sub-account's invitations webhook, never to its parent's.
func TestInvitationEventsGoToTheCreatingProject(t *testing.T) {
	parentHooks, subHooks := newHookReceiver(t), newHookReceiver(t)
	in := start(t, parentHooks.trusted())
	_, key := invitationsProject(t, in, parentHooks)
	r := in.post("/v1/sub-accounts", key, `{"name":"Client"}`)
	if r.status != 201 {
		t.Fatalf("sub-account = %d %v", r.status, r.body)
	}
	sa := r.body["subAccount"].(map[string]any)
	subKey := "Bearer " + sa["apiKey"].(string)
	waitFor(t, func() bool { return in.get("/v1/me", subKey).status == 200 })
	if r := in.post("/v1/invitations/webhook", subKey, `{"url":"`+subHooks.URL+`/invitations"}`); r.status != 201 {
		t.Fatalf("sub-account's webhook = %d %v", r.status, r.body)
	}
	id := in.post("/v1/invitations", subKey, `{}`).body["invitation"].(map[string]any)["id"].(string)
	in.post("/v1/invitations/"+id+"/cancel", subKey, "")
	waitFor(t, func() bool { return len(subHooks.invitationEvents(id)) == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := len(parentHooks.invitationEvents(id)); n != 0 {
		t.Errorf("the parent received %d events of its sub-account's invitation", n)
	}
}
