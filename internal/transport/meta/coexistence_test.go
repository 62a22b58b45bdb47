package meta_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

// The coexistence number's contacts and chats, as its WhatsApp Business app holds them.
const (
	coexAna   = "+5511988887777"
	coexBruno = "+5511977776666"
)

var coexContacts = []metatest.SyncContact{
	{FullName: "Ana Souza", FirstName: "Ana", PhoneNumber: coexAna},
	{FullName: "Bruno Lima", FirstName: "Bruno", PhoneNumber: "5511977776666"},
	{PhoneNumber: "+5511966665555", Removed: true},
}

// coexPeer is graphPeer with graphPhoneID onboarded from the WhatsApp Business app: its app
// holds coexContacts and a chat with Ana (a text each way) and one with Bruno (an image he sent,
// the business's reply), all of today.
func coexPeer(t *testing.T) (*metatest.Server, *meta.Transport) {
	t.Helper()
	peer, tr := graphPeer(t, metatest.Options{})
	peer.SetCoexistence(graphPhoneID, coexContacts, []metatest.HistoryThreadSpec{
		{WaID: coexAna, Messages: []metatest.HistoryMessageSpec{
			{ID: "wamid.ana1", Text: "Do you deliver on Sundays?"},
			{ID: "wamid.ana2", Text: "We do, until noon.", FromBusiness: true, Status: "DELIVERED"},
		}},
		{WaID: coexBruno, Messages: []metatest.HistoryMessageSpec{
			{ID: "wamid.bruno1", Type: "image", Fields: map[string]any{"id": "880001", "mime_type": "image/jpeg", "caption": "This one"}},
			{ID: "wamid.bruno2", Text: "In stock.", FromBusiness: true},
		}},
	})
	return peer, tr
}

func TestStartSync(t *testing.T) {
	t.Parallel()
	peer, tr := coexPeer(t)
	ctx := context.Background()
	if got := peer.SyncPayloads(graphPhoneID, metatest.SyncContacts); got != nil {
		t.Errorf("before the start the peer would send %d posts", len(got))
	}
	contacts, err := tr.StartSync(ctx, "", graphPhoneID, meta.SyncContacts)
	if err != nil {
		t.Fatal(err)
	}
	peer.AddToken("EAAsender")
	history, err := tr.StartSync(ctx, "EAAsender", graphPhoneID, meta.SyncHistory)
	if err != nil {
		t.Fatal(err)
	}
	reqs := peer.SyncRequests()
	if len(reqs) != 2 {
		t.Fatalf("the peer accepted %d syncs, want 2", len(reqs))
	}
	for i, want := range []struct{ typ, id, token string }{
		{meta.SyncContacts, contacts, metatest.Token}, {meta.SyncHistory, history, "EAAsender"},
	} {
		r := reqs[i]
		if r.PhoneNumberID != graphPhoneID || r.SyncType != want.typ || r.RequestID != want.id || want.id == "" || r.Token != want.token {
			t.Errorf("sync %d: got %+v, want %s answered %q with %s", i, r, want.typ, want.id, want.token)
		}
	}
}

func TestStartSyncErrors(t *testing.T) {
	t.Parallel()
	peer, tr := coexPeer(t)
	peer.AddPhoneNumber("106540352249999", "+1 555-010-0199", graphWABA) // on the Cloud API only
	ctx := context.Background()
	failure := func(t *testing.T, err error, code, providerCode, says string) {
		t.Helper()
		f := transport.AsFailure(err)
		if f == nil || f.Code != code || f.ProviderCode != providerCode || !strings.Contains(f.Message, says) {
			t.Fatalf("got %v (%#v), want %s %q saying %q", err, f, code, providerCode, says)
		}
	}

	t.Run("an unknown number", func(t *testing.T) {
		_, err := tr.StartSync(ctx, "", "106540352240404", meta.SyncContacts)
		failure(t, err, meta.CodeInvalidRequest, "100/33", "does not exist")
	})
	t.Run("a number not onboarded from the app", func(t *testing.T) {
		_, err := tr.StartSync(ctx, "", "106540352249999", meta.SyncHistory)
		failure(t, err, meta.CodeInvalidRequest, "100", "not onboarded from the WhatsApp Business app")
	})
	t.Run("another sync type, refused before Meta", func(t *testing.T) {
		_, err := tr.StartSync(ctx, "", graphPhoneID, "contacts")
		failure(t, err, meta.CodeInvalidRequest, "", `not "contacts"`)
	})
	t.Run("an expired token", func(t *testing.T) {
		_, err := tr.StartSync(ctx, metatest.ExpiredToken, graphPhoneID, meta.SyncContacts)
		failure(t, err, meta.CodeAuthFailed, "190/463", "expired")
	})
	if n := len(peer.SyncRequests()); n != 0 {
		t.Fatalf("the peer accepted %d syncs of refused requests", n)
	}
	t.Run("a second start", func(t *testing.T) {
		if _, err := tr.StartSync(ctx, "", graphPhoneID, meta.SyncContacts); err != nil {
			t.Fatal(err)
		}
		_, err := tr.StartSync(ctx, "", graphPhoneID, meta.SyncContacts)
		failure(t, err, meta.CodeInvalidRequest, "100", "requested already")
		if n := len(peer.SyncRequests()); n != 1 {
			t.Errorf("the peer accepted %d syncs, want 1", n)
		}
	})
	t.Run("Meta's trouble", func(t *testing.T) {
		peer.FailNext(1, http.StatusServiceUnavailable, 2, 0, "Service temporarily unavailable")
		_, err := tr.StartSync(ctx, "", graphPhoneID, meta.SyncHistory)
		var tmp *transport.Temporary
		if !errors.As(err, &tmp) || tmp.ProviderCode != "2" {
			t.Fatalf("got %v, want a Temporary with Meta code 2", err)
		}
		// The failed start did not use the sync up.
		if _, err := tr.StartSync(ctx, "", graphPhoneID, meta.SyncHistory); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSMBAppDataBodies posts to the peer's smb_app_data as other clients do: a form, query
// parameters, JSON, and what Meta refuses.
func TestSMBAppDataBodies(t *testing.T) {
	t.Parallel()
	peer, _ := coexPeer(t)
	endpoint := peer.URL + "/v21.0/" + graphPhoneID + "/smb_app_data"
	post := func(t *testing.T, query, contentType, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, endpoint+query, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+metatest.Token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	form := "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		name, query, contentType, body string
		code                           float64 // Meta's error code; 0 for a success
		says                           string
	}{
		{"another sync type", "", form, "messaging_product=whatsapp&sync_type=contacts", 100, `Param sync_type must be one of {smb_app_state_sync, history} - got "contacts"`},
		{"no sync type", "", "application/json", `{"messaging_product":"whatsapp"}`, 100, "sync_type is required"},
		{"no messaging product", "", form, "sync_type=history", 100, "messaging_product is required"},
		{"a form", "", form, url.Values{"messaging_product": {"whatsapp"}, "sync_type": {"smb_app_state_sync"}}.Encode(), 0, ""},
		{"query parameters", "?messaging_product=whatsapp&sync_type=history", "", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := post(t, tc.query, tc.contentType, tc.body)
			if tc.code == 0 {
				if status != http.StatusOK || out["messaging_product"] != "whatsapp" || out["request_id"] == "" {
					t.Fatalf("got %d %v", status, out)
				}
				return
			}
			e, _ := out["error"].(map[string]any)
			data, _ := e["error_data"].(map[string]any)
			if said := fmt.Sprint(e["message"], " ", data["details"]); status != http.StatusBadRequest || e["code"] != tc.code || !strings.Contains(said, tc.says) {
				t.Fatalf("got %d %v, want error %v saying %q", status, out, tc.code, tc.says)
			}
		})
	}
	if reqs := peer.SyncRequests(); len(reqs) != 2 || reqs[0].SyncType != meta.SyncContacts || reqs[1].SyncType != meta.SyncHistory {
		t.Errorf("the peer accepted %+v", reqs)
	}
}

// coexReceiver is a webhook endpoint on loopback that checks Meta's signature and reads the
// coexistence changes of what it is posted.
type coexReceiver struct {
	url string
	mu  sync.Mutex
	got meta.Coexistence
}

func newCoexReceiver(t *testing.T) *coexReceiver {
	t.Helper()
	rc := &coexReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, meta.WebhookMaxBody))
		switch err := meta.VerifySignature([]byte(metatest.AppSecret), body, r.Header.Get(meta.WebhookSignatureHeader)); {
		case errors.Is(err, meta.ErrWebhookUnsigned):
			w.WriteHeader(http.StatusUnauthorized)
			return
		case err != nil:
			w.WriteHeader(http.StatusForbidden)
			return
		}
		c, err := meta.ParseCoexistence(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.got.ContactSyncs = append(rc.got.ContactSyncs, c.ContactSyncs...)
		rc.got.HistorySyncs = append(rc.got.HistorySyncs, c.HistorySyncs...)
		rc.got.Echoes = append(rc.got.Echoes, c.Echoes...)
		rc.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/webhooks/meta"
	return rc
}

// deliver posts each payload signed with secret and wants status.
func (rc *coexReceiver) deliver(t *testing.T, secret string, status int, payloads ...metatest.Payload) {
	t.Helper()
	for i, p := range payloads {
		got, err := metatest.WebhookPost(context.Background(), rc.url, []byte(secret), p)
		if err != nil || got != status {
			t.Fatalf("post %d: got %d, %v; want %d", i, got, err, status)
		}
	}
}

func (rc *coexReceiver) received() meta.Coexistence {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got
}

// coexWA is a WhatsApp message of the coexistence number, from one side to the other.
func coexWA(wamid, from, to, messageType, text string, c *transport.Content, at time.Time) meta.HookMessage {
	return meta.HookMessage{AccountID: graphPhoneID, Inbound: transport.Inbound{Channel: "whatsapp", From: from, To: to,
		MessageType: messageType, Text: text, Content: c, ProviderMessageID: wamid, ProviderTimestamp: &at}}
}

func TestCoexistenceWebhooks(t *testing.T) {
	t.Parallel()
	peer, tr := coexPeer(t)
	rc := newCoexReceiver(t)
	ctx := context.Background()
	business := "+15550100100" // graphDisplay in E.164
	for _, typ := range []string{meta.SyncContacts, meta.SyncHistory} {
		if _, err := tr.StartSync(ctx, "", graphPhoneID, typ); err != nil {
			t.Fatal(err)
		}
	}
	contacts := peer.SyncPayloads(graphPhoneID, metatest.SyncContacts)
	history := peer.SyncPayloads(graphPhoneID, metatest.SyncHistory)
	if len(contacts) != 1 || len(history) != 4 {
		t.Fatalf("the peer would post %d contact and %d history webhooks, want 1 and 4 (3 phases, 1 media)", len(contacts), len(history))
	}
	// A post signed with another secret is refused, and read nowhere.
	rc.deliver(t, "not the app secret", http.StatusForbidden, contacts...)
	rc.deliver(t, metatest.AppSecret, http.StatusOK, contacts...)
	rc.deliver(t, metatest.AppSecret, http.StatusOK, history...)
	got := rc.received()

	// The contacts: two added, one removed, at the start.
	if len(got.ContactSyncs) != 1 {
		t.Fatalf("got %d contact syncs", len(got.ContactSyncs))
	}
	cs := got.ContactSyncs[0]
	at := peer.SyncRequests()[0].Received.Truncate(time.Second).UTC()
	want := meta.ContactSync{PhoneNumberID: graphPhoneID, WABAID: graphWABA, Contacts: []meta.SyncedContact{
		{FullName: "Ana Souza", FirstName: "Ana", PhoneNumber: coexAna, Action: "add", Timestamp: at},
		{FullName: "Bruno Lima", FirstName: "Bruno", PhoneNumber: coexBruno, Action: "add", Timestamp: at},
		{PhoneNumber: "+5511966665555", Action: "remove", Timestamp: at},
	}}
	if !reflect.DeepEqual(cs, want) {
		t.Errorf("contacts:\ngot  %s\nwant %s", hookJSON(cs), hookJSON(want))
	}

	// The history: today's chats in phase 0, phases 1 and 2 empty, then the image's media.
	if len(got.HistorySyncs) != 4 {
		t.Fatalf("got %d history syncs", len(got.HistorySyncs))
	}
	for p, h := range got.HistorySyncs[:3] {
		if h.Phase != p || h.ChunkOrder != p+1 || h.Progress != []int{33, 66, 100}[p] || h.Declined || h.PhoneNumberID != graphPhoneID || h.WABAID != graphWABA {
			t.Errorf("chunk %d: phase %d, order %d, progress %d, declined %v, %s/%s", p, h.Phase, h.ChunkOrder, h.Progress, h.Declined, h.PhoneNumberID, h.WABAID)
		}
		if p > 0 && len(h.Threads) != 0 {
			t.Errorf("phase %d has %d threads, want none", p, len(h.Threads))
		}
	}
	threads := got.HistorySyncs[0].Threads
	if len(threads) != 2 || threads[0].WaID != "5511988887777" || threads[1].WaID != "5511977776666" {
		t.Fatalf("phase 0 threads: %s", hookJSON(threads))
	}
	stamp := func(th meta.HistoryThread) {
		for i := range th.Messages {
			if ts := th.Messages[i].ProviderTimestamp; ts == nil || time.Since(*ts) > 10*time.Minute {
				t.Errorf("%s stamped %v", th.Messages[i].ProviderMessageID, ts)
			}
		}
	}
	stamp(threads[0])
	stamp(threads[1])
	ts := func(th meta.HistoryThread, i int) time.Time { return *th.Messages[i].ProviderTimestamp }
	ana := []meta.HookMessage{
		coexWA("wamid.ana1", coexAna, business, "text", "Do you deliver on Sundays?", nil, ts(threads[0], 0)),
		coexWA("wamid.ana2", business, coexAna, "text", "We do, until noon.", nil, ts(threads[0], 1)),
	}
	placeholder := coexWA("wamid.bruno1", coexBruno, business, "", "", nil, ts(threads[1], 0))
	placeholder.Unsupported = "media_placeholder"
	bruno := []meta.HookMessage{placeholder, coexWA("wamid.bruno2", business, coexBruno, "text", "In stock.", nil, ts(threads[1], 1))}
	if !reflect.DeepEqual(threads[0].Messages, ana) || !reflect.DeepEqual(threads[1].Messages, bruno) {
		t.Errorf("messages:\ngot  %s\n     %s\nwant %s\n     %s", hookJSON(threads[0].Messages), hookJSON(threads[1].Messages), hookJSON(ana), hookJSON(bruno))
	}
	if want := map[string]string{"wamid.ana1": "READ", "wamid.ana2": "DELIVERED"}; !reflect.DeepEqual(threads[0].Statuses, want) {
		t.Errorf("statuses %v, want %v", threads[0].Statuses, want)
	}
	media := got.HistorySyncs[3]
	image := coexWA("wamid.bruno1", coexBruno, business, "image", "This one",
		&transport.Content{MediaID: "880001", MimeType: "image/jpeg"}, ts(threads[1], 0))
	image.MediaID, image.MediaMime = "880001", "image/jpeg"
	if len(media.Threads) != 0 || media.Progress != 0 || !reflect.DeepEqual(media.Media, []meta.HookMessage{image}) {
		t.Errorf("media follow-up:\ngot  %s\nwant %s", hookJSON(media), hookJSON([]meta.HookMessage{image}))
	}
}

func TestCoexistenceHistoryPhases(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	days := func(n int) time.Time { return time.Now().Add(-time.Duration(n) * 24 * time.Hour) }
	peer.SetCoexistence(graphPhoneID, nil, []metatest.HistoryThreadSpec{{WaID: coexAna, Messages: []metatest.HistoryMessageSpec{
		{ID: "wamid.old", Text: "too old", At: days(200)},
		{ID: "wamid.p2", Text: "phase 2", At: days(120)},
		{ID: "wamid.p1", Type: "document", At: days(20), FromBusiness: true}, // media too old to be named
		{ID: "wamid.p0", Type: "audio", At: time.Now().Add(-time.Hour), FromBusiness: true},
	}}})
	if _, err := tr.StartSync(context.Background(), "", graphPhoneID, meta.SyncHistory); err != nil {
		t.Fatal(err)
	}
	var got []meta.HistorySync
	for _, p := range peer.SyncPayloads(graphPhoneID, metatest.SyncHistory) {
		c, err := meta.ParseCoexistence(p.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.HistorySyncs...)
	}
	if len(got) != 4 {
		t.Fatalf("got %d history syncs, want 3 chunks and 1 media", len(got))
	}
	for p, want := range []string{"wamid.p0", "wamid.p1", "wamid.p2"} {
		if th := got[p].Threads; len(th) != 1 || len(th[0].Messages) != 1 || th[0].Messages[0].ProviderMessageID != want {
			t.Errorf("phase %d: %s, want %s alone", p, hookJSON(th), want)
		}
	}
	m := got[3].Media
	if len(m) != 1 || m[0].ProviderMessageID != "wamid.p0" || m[0].MessageType != "audio" || m[0].MediaID == "" ||
		m[0].MediaMime != "audio/ogg" || m[0].From != "+15550100100" || m[0].To != coexAna {
		t.Errorf("media: %s", hookJSON(m))
	}
}

func TestCoexistenceHistoryDeclined(t *testing.T) {
	t.Parallel()
	peer, tr := coexPeer(t)
	peer.DeclineHistory(graphPhoneID)
	if _, err := tr.StartSync(context.Background(), "", graphPhoneID, meta.SyncHistory); err != nil {
		t.Fatal(err)
	}
	payloads := peer.SyncPayloads(graphPhoneID, metatest.SyncHistory)
	if len(payloads) != 1 {
		t.Fatalf("the peer would post %d history webhooks, want 1", len(payloads))
	}
	c, err := meta.ParseCoexistence(payloads[0].Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []meta.HistorySync{{PhoneNumberID: graphPhoneID, WABAID: graphWABA, Declined: true, ErrorCode: meta.HistoryDeclinedCode,
		ErrorMessage: "History sharing is turned off by the business"}}
	if !reflect.DeepEqual(c.HistorySyncs, want) {
		t.Errorf("got %s, want %s", hookJSON(c.HistorySyncs), hookJSON(want))
	}
	// The contacts are shared all the same.
	if _, err := tr.StartSync(context.Background(), "", graphPhoneID, meta.SyncContacts); err != nil {
		t.Fatal(err)
	}
	if n := len(peer.SyncPayloads(graphPhoneID, metatest.SyncContacts)); n != 1 {
		t.Errorf("%d contact webhooks, want 1", n)
	}
}

// TestParseCoexistenceBuilders reads back what metatest's builders write.
func TestParseCoexistenceBuilders(t *testing.T) {
	t.Parallel()
	const display = "+15550783881"
	parse := func(t *testing.T, p metatest.Payload) *meta.Coexistence {
		t.Helper()
		c, err := meta.ParseCoexistence(p.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	recent := func(t *testing.T, at time.Time) {
		t.Helper()
		if d := time.Since(at); d < -time.Second || d > time.Minute {
			t.Errorf("stamped %v, not now", at)
		}
	}

	t.Run("contacts added and removed", func(t *testing.T) {
		c := parse(t, metatest.HookContactSync(hookPhoneNumberID, display,
			metatest.SyncContact{FullName: "Pablo Morales", FirstName: "Pablo", PhoneNumber: "16505551234"},
			metatest.SyncContact{PhoneNumber: "+16505550000", Removed: true}))
		if len(c.ContactSyncs) != 1 || len(c.ContactSyncs[0].Contacts) != 2 {
			t.Fatalf("got %s", hookJSON(c))
		}
		for i := range c.ContactSyncs[0].Contacts {
			recent(t, c.ContactSyncs[0].Contacts[i].Timestamp)
			c.ContactSyncs[0].Contacts[i].Timestamp = time.Time{}
		}
		want := []meta.ContactSync{{PhoneNumberID: hookPhoneNumberID, WABAID: metatest.HookWABAID, Contacts: []meta.SyncedContact{
			{FullName: "Pablo Morales", FirstName: "Pablo", PhoneNumber: "+16505551234", Action: "add"},
			{PhoneNumber: "+16505550000", Action: "remove"}}}}
		if !reflect.DeepEqual(c.ContactSyncs, want) || c.HistorySyncs != nil || c.Echoes != nil {
			t.Errorf("got %s, want %s", hookJSON(c), hookJSON(want))
		}
	})

	t.Run("a history chunk of two threads", func(t *testing.T) {
		at := time.Unix(1739230955, 0).UTC()
		c := parse(t, metatest.HookHistory(hookPhoneNumberID, display, 1, 4, 55,
			metatest.HistoryThreadSpec{WaID: hookContact, Messages: []metatest.HistoryMessageSpec{
				{ID: "wamid.h1", Text: "Hi", At: at},
				{ID: "wamid.h2", Text: "Hello!", At: at.Add(time.Minute), FromBusiness: true, Status: "PLAYED"},
				{ID: "wamid.h3", Type: "location", Fields: map[string]any{"latitude": 1.5, "longitude": -2.5}, At: at.Add(2 * time.Minute)},
			}},
			metatest.HistoryThreadSpec{WaID: "US.13491208655302741918", Messages: []metatest.HistoryMessageSpec{
				{ID: "wamid.h4", Text: "Are you open?", At: at},
				{ID: "wamid.h5", Text: "Yes", At: at, FromBusiness: true},
			}}))
		if len(c.HistorySyncs) != 1 {
			t.Fatalf("got %s", hookJSON(c))
		}
		h := c.HistorySyncs[0]
		lat, lng := 1.5, -2.5
		bsuidIn := coexWAAt(hookPhoneNumberID, "wamid.h4", "US.13491208655302741918", hookBusiness, "text", "Are you open?", at)
		bsuidIn.UserID = "US.13491208655302741918"
		bsuidOut := coexWAAt(hookPhoneNumberID, "wamid.h5", hookBusiness, "US.13491208655302741918", "text", "Yes", at)
		bsuidOut.UserID = "US.13491208655302741918"
		loc := coexWAAt(hookPhoneNumberID, "wamid.h3", hookContact, hookBusiness, "location", "", at.Add(2*time.Minute))
		loc.Content = &transport.Content{Latitude: &lat, Longitude: &lng}
		want := meta.HistorySync{PhoneNumberID: hookPhoneNumberID, WABAID: metatest.HookWABAID, Phase: 1, ChunkOrder: 4, Progress: 55,
			Threads: []meta.HistoryThread{
				{WaID: "16505551234", Messages: []meta.HookMessage{
					coexWAAt(hookPhoneNumberID, "wamid.h1", hookContact, hookBusiness, "text", "Hi", at),
					coexWAAt(hookPhoneNumberID, "wamid.h2", hookBusiness, hookContact, "text", "Hello!", at.Add(time.Minute)),
					loc,
				}, Statuses: map[string]string{"wamid.h1": "READ", "wamid.h2": "PLAYED", "wamid.h3": "READ"}},
				{WaID: "US.13491208655302741918", Messages: []meta.HookMessage{bsuidIn, bsuidOut},
					Statuses: map[string]string{"wamid.h4": "READ", "wamid.h5": "READ"}},
			}}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("got  %s\nwant %s", hookJSON(h), hookJSON(want))
		}
	})

	t.Run("a declined history", func(t *testing.T) {
		c := parse(t, metatest.HookHistoryDeclined(hookPhoneNumberID, display))
		if len(c.HistorySyncs) != 1 || !c.HistorySyncs[0].Declined || c.HistorySyncs[0].ErrorCode != 2593109 || len(c.HistorySyncs[0].Threads) != 0 {
			t.Errorf("got %s", hookJSON(c))
		}
	})

	t.Run("an echo", func(t *testing.T) {
		c := parse(t, metatest.HookEcho(hookPhoneNumberID, display, hookContact, "wamid.echo1", "See you at 5"))
		if len(c.Echoes) != 1 {
			t.Fatalf("got %s", hookJSON(c))
		}
		recent(t, *c.Echoes[0].ProviderTimestamp)
		c.Echoes[0].ProviderTimestamp = nil
		want := meta.HookMessage{AccountID: hookPhoneNumberID, Inbound: transport.Inbound{Channel: "whatsapp", From: hookBusiness,
			To: hookContact, MessageType: "text", Text: "See you at 5", ProviderMessageID: "wamid.echo1"}}
		if !reflect.DeepEqual(c.Echoes[0], want) || c.ContactSyncs != nil || c.HistorySyncs != nil {
			t.Errorf("got  %s\nwant %s", hookJSON(c.Echoes[0]), hookJSON(want))
		}
	})

	t.Run("an image echo to a business-scoped user id", func(t *testing.T) {
		c := parse(t, metatest.HookEchoMessage(hookPhoneNumberID, display, "US.13491208655302741918", "wamid.echo2", "image",
			map[string]any{"id": "990001", "mime_type": "image/png"}))
		if len(c.Echoes) != 1 {
			t.Fatalf("got %s", hookJSON(c))
		}
		e := c.Echoes[0]
		if e.From != hookBusiness || e.To != "US.13491208655302741918" || e.UserID != "US.13491208655302741918" || e.MessageType != "image" || e.MediaID != "990001" {
			t.Errorf("got %s", hookJSON(e))
		}
	})

	t.Run("a post without coexistence changes", func(t *testing.T) {
		c := parse(t, metatest.HookTextMessage(hookPhoneNumberID, display, hookContact, "wamid.x", "hi"))
		if !reflect.DeepEqual(*c, meta.Coexistence{}) {
			t.Errorf("got %s", hookJSON(c))
		}
	})

	t.Run("a batch", func(t *testing.T) {
		c := parse(t, metatest.HookBatch(metatest.HookEcho(hookPhoneNumberID, display, hookContact, "wamid.e", "a"),
			metatest.HookTextMessage(hookPhoneNumberID, display, hookContact, "wamid.x", "hi"),
			metatest.HookHistoryDeclined(hookPhoneNumberID, display)))
		if len(c.Echoes) != 1 || len(c.HistorySyncs) != 1 || len(c.ContactSyncs) != 0 {
			t.Errorf("got %s", hookJSON(c))
		}
	})
}

func coexWAAt(account, wamid, from, to, messageType, text string, at time.Time) meta.HookMessage {
	return meta.HookMessage{AccountID: account, Inbound: transport.Inbound{Channel: "whatsapp", From: from, To: to,
		MessageType: messageType, Text: text, ProviderMessageID: wamid, ProviderTimestamp: &at}}
}

func TestParseCoexistenceRefuses(t *testing.T) {
	t.Parallel()
	change := func(field, value string) string {
		return `{"object":"whatsapp_business_account","entry":[{"id":"1","time":1,"changes":[{"field":"` + field + `","value":` + value + `}]}]}`
	}
	md := `"metadata":{"display_phone_number":"15550783881","phone_number_id":"77"}`
	for _, tc := range []struct{ name, body, says string }{
		{"not JSON", `{`, "read webhook"},
		{"a contact without a number", change("smb_app_state_sync", `{`+md+`,"state_sync":[{"type":"contact","contact":{"full_name":"X"},"action":"add"}]}`), "entry 0: change 0 (smb_app_state_sync): state_sync 0"},
		{"an echo without a recipient", change("smb_message_echoes", `{`+md+`,"message_echoes":[{"from":"15550783881","id":"w","timestamp":"1","type":"text","text":{"body":"x"}}]}`), "message_echoes 0"},
		{"a history message without an id", change("history", `{`+md+`,"history":[{"metadata":{"phase":0,"chunk_order":1,"progress":100},"threads":[{"id":"1650","messages":[{"from":"1650","timestamp":"1","type":"text","text":{"body":"x"}}]}]}]}`), "thread 0: message 0: no id"},
		{"a phase of the wrong type", change("history", `{`+md+`,"history":[{"metadata":{"phase":"zero"}}]}`), "change 0 (history)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := meta.ParseCoexistence([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("got %v, want an error saying %q", err, tc.says)
			}
		})
	}
}
