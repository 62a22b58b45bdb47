package metatest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

const (
	phoneID = "106540352242922"
	wabaID  = "102290129340398"
	pageID  = "104000000000001"
)

func newPeer(t *testing.T, opts metatest.Options) *metatest.Server {
	t.Helper()
	s := metatest.NewServer(t, opts)
	s.AddPhoneNumber(phoneID, "+1 555-010-0100", wabaID)
	s.AddPage(pageID, "Acme")
	return s
}

// call makes a request to the peer and decodes its JSON answer.
func call(t *testing.T, s *metatest.Server, method, path, token string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	return resp.StatusCode, resp.Header, answer
}

// graphErr is the code, subcode and details of an error answer.
func graphErr(answer map[string]any) (code, subcode int, details string) {
	e, _ := answer["error"].(map[string]any)
	c, _ := e["code"].(float64)
	sc, _ := e["error_subcode"].(float64)
	d, _ := e["error_data"].(map[string]any)
	details, _ = d["details"].(string)
	return int(c), int(sc), details
}

func wa(fields map[string]any) map[string]any {
	body := map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "to": "15551234567"}
	for k, v := range fields {
		body[k] = v
	}
	return body
}

func buttons(n int) []any {
	var bs []any
	for i := range n {
		bs = append(bs, map[string]any{"type": "reply", "reply": map[string]any{"id": fmt.Sprint(i), "title": fmt.Sprint("B", i)}})
	}
	return bs
}

func TestServesLoopbackOnly(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL = %s, want 127.0.0.1", s.URL)
	}
	if s.Token != metatest.Token || s.AppSecret != metatest.AppSecret || s.AppID != metatest.AppID || s.ExpiredToken != metatest.ExpiredToken {
		t.Fatal("the Server's credentials are not the package's")
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{Tokens: []string{"EAAsender"}})
	for _, c := range []struct {
		token         string
		status        int
		code, subcode int
	}{
		{"", 400, 104, 0},
		{metatest.ExpiredToken, 401, 190, 463},
		{"EAAunknown", 401, 190, 0},
		{metatest.Token, 200, 0, 0},
		{"EAAsender", 200, 0, 0},
	} {
		status, _, answer := call(t, s, "GET", "/v21.0/me?fields=id,name", c.token, nil)
		code, subcode, _ := graphErr(answer)
		if status != c.status || code != c.code || subcode != c.subcode {
			t.Errorf("token %q: %d %v, want %d with code %d/%d", c.token, status, answer, c.status, c.code, c.subcode)
		}
	}
	s.AddToken("EAAlater")
	if status, _, _ := call(t, s, "GET", "/v21.0/me", "EAAlater", nil); status != 200 {
		t.Fatalf("an added token: %d", status)
	}
}

// TestWhatsAppValidation: the peer refuses bodies as the Cloud API does.
func TestWhatsAppValidation(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	s.SetTemplateStatus(wabaID, "otp", "en_US", "APPROVED", "AUTHENTICATION")
	var eleven []any
	for i := range 11 {
		eleven = append(eleven, map[string]any{"id": fmt.Sprint(i), "title": "r"})
	}
	cases := []struct {
		name          string
		body          map[string]any
		status        int
		code, subcode int
		details       string // a part of error_data.details
	}{
		{"unknown type", wa(map[string]any{"type": "poll", "poll": map[string]any{}}), 400, 100, 0, "Param type must be one of"},
		{"no messaging_product", map[string]any{"to": "15551234567", "type": "text", "text": map[string]any{"body": "x"}}, 400, 100, 0, "messaging_product"},
		{"no recipient", map[string]any{"messaging_product": "whatsapp", "type": "text", "text": map[string]any{"body": "x"}}, 400, 100, 0, "to is required"},
		{"text without body", wa(map[string]any{"type": "text", "text": map[string]any{}}), 400, 100, 0, "text['body']"},
		{"image with link and id", wa(map[string]any{"type": "image", "image": map[string]any{"link": "https://x.example/a.jpg", "id": "1"}}), 400, 100, 0, "not both"},
		{"unknown media id", wa(map[string]any{"type": "image", "image": map[string]any{"id": "42"}}), 400, 100, 0, "media attachment ID"},
		{"audio with caption", wa(map[string]any{"type": "audio", "audio": map[string]any{"link": "https://x.example/a.ogg", "caption": "c"}}), 400, 100, 0, "caption"},
		{"contact without formatted_name", wa(map[string]any{"type": "contacts", "contacts": []any{map[string]any{"name": map[string]any{"first_name": "A"}}}}), 400, 100, 0, "formatted_name"},
		{"four buttons", wa(map[string]any{"type": "interactive", "interactive": map[string]any{"type": "button",
			"body": map[string]any{"text": "?"}, "action": map[string]any{"buttons": buttons(4)}}}), 400, 131009, 0, "Max allowed buttons: 3"},
		{"eleven rows", wa(map[string]any{"type": "interactive", "interactive": map[string]any{"type": "list", "body": map[string]any{"text": "?"},
			"action": map[string]any{"button": "Open", "sections": []any{map[string]any{"rows": eleven}}}}}), 400, 131009, 0, "row count"},
		{"interactive without body", wa(map[string]any{"type": "interactive", "interactive": map[string]any{"type": "button",
			"action": map[string]any{"buttons": buttons(1)}}}), 400, 100, 0, "body"},
		{"unknown template", wa(map[string]any{"type": "template", "template": map[string]any{"name": "nope", "language": map[string]any{"code": "en"}}}),
			404, 132001, 0, "does not exist"},
		{"authentication template to a BSUID", map[string]any{"messaging_product": "whatsapp", "recipient": "US.13491208655302741918", "type": "template",
			"template": map[string]any{"name": "otp", "language": map[string]any{"code": "en_US"}}}, 400, 131062, 0, "phone number"},
		{"read receipt without message_id", map[string]any{"messaging_product": "whatsapp", "status": "read"}, 400, 100, 0, "message_id"},
	}
	for _, c := range cases {
		status, _, answer := call(t, s, "POST", "/v21.0/"+phoneID+"/messages", metatest.Token, c.body)
		code, subcode, details := graphErr(answer)
		if status != c.status || code != c.code || subcode != c.subcode || !strings.Contains(details, c.details) {
			t.Errorf("%s: %d %v, want %d with %d/%d and details containing %q", c.name, status, answer, c.status, c.code, c.subcode, c.details)
		}
	}
	if n := len(s.Messages()); n != 0 {
		t.Fatalf("%d refused messages recorded", n)
	}
	status, _, answer := call(t, s, "POST", "/v21.0/777/messages", metatest.Token, wa(nil))
	if code, subcode, _ := graphErr(answer); status != 400 || code != 100 || subcode != 33 {
		t.Fatalf("an unknown phone number: %d %v, want 100/33", status, answer)
	}
	status, _, answer = call(t, s, "GET", "/me", metatest.Token, nil)
	if code, _, _ := graphErr(answer); status != 400 || code != 2500 {
		t.Fatalf("a path without a version: %d %v, want 2500", status, answer)
	}
}

func TestWhatsAppAccepts(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	var ids []string
	for range 3 {
		status, _, answer := call(t, s, "POST", "/v21.0/"+phoneID+"/messages", metatest.Token,
			wa(map[string]any{"type": "text", "text": map[string]any{"body": "hi"}}))
		msgs, _ := answer["messages"].([]any)
		if status != 200 || len(msgs) != 1 {
			t.Fatalf("%d %v", status, answer)
		}
		id, _ := msgs[0].(map[string]any)["id"].(string)
		ids = append(ids, id)
	}
	if !strings.HasPrefix(ids[0], "wamid.HBgL") || ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("ids %v: want distinct wamid.HBgL… ids", ids)
	}
	got := s.Messages()
	if len(got) != 3 || got[0].ID != ids[0] || got[0].To != "15551234567" || got[0].Type != "text" || got[0].WABAID != wabaID ||
		got[0].DisplayPhoneNumber != "+1 555-010-0100" || got[0].Body["text"].(map[string]any)["body"] != "hi" {
		t.Fatalf("Messages() = %+v", got)
	}
}

func TestWindows(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	s.SetTemplateStatus(wabaID, "hello", "en", "APPROVED", "UTILITY")
	s.Window("+15551234567", false)
	status, _, answer := call(t, s, "POST", "/v21.0/"+phoneID+"/messages", metatest.Token, wa(map[string]any{"type": "text", "text": map[string]any{"body": "hi"}}))
	if code, _, _ := graphErr(answer); status != 400 || code != 131047 {
		t.Fatalf("text outside the window: %d %v", status, answer)
	}
	status, _, answer = call(t, s, "POST", "/v21.0/"+phoneID+"/messages", metatest.Token,
		wa(map[string]any{"type": "template", "template": map[string]any{"name": "hello", "language": map[string]any{"code": "en"}}}))
	if status != 200 {
		t.Fatalf("template outside the window: %d %v", status, answer)
	}
	page := func(extra map[string]any) (int, map[string]any) {
		body := map[string]any{"recipient": map[string]any{"id": "6433221234567890"}, "message": map[string]any{"text": "hi"}}
		for k, v := range extra {
			body[k] = v
		}
		status, _, answer := call(t, s, "POST", "/v21.0/"+pageID+"/messages", metatest.Token, body)
		return status, answer
	}
	s.Window("6433221234567890", false)
	if status, answer := page(map[string]any{"messaging_type": "RESPONSE"}); status != 400 {
		t.Fatalf("Send API outside the window: %d %v", status, answer)
	} else if code, subcode, _ := graphErr(answer); code != 10 || subcode != 2018278 {
		t.Fatalf("Send API outside the window: %v, want 10/2018278", answer)
	}
	if status, answer := page(map[string]any{"messaging_type": "MESSAGE_TAG", "tag": "HUMAN_AGENT"}); status != 200 || !strings.HasPrefix(answer["message_id"].(string), "m_") {
		t.Fatalf("HUMAN_AGENT outside the window: %d %v", status, answer)
	}
	if status, answer := page(nil); status != 400 {
		t.Fatalf("no messaging_type: %d %v", status, answer)
	}
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{RetryAfter: 5 * time.Second})
	s.FailNext(2, 429, 130429, 0, "Rate limit hit")
	for i := range 2 {
		status, h, answer := call(t, s, "GET", "/v21.0/me", metatest.Token, nil)
		if code, _, _ := graphErr(answer); status != 429 || code != 130429 || h.Get("Retry-After") != "5" {
			t.Fatalf("request %d: %d %v (Retry-After %q)", i, status, answer, h.Get("Retry-After"))
		}
	}
	if status, _, _ := call(t, s, "GET", "/v21.0/me", metatest.Token, nil); status != 200 {
		t.Fatalf("the third request: %d", status)
	}
	s.FailNext(1, 500, 2, 0, "Service temporarily unavailable")
	_, _, answer := call(t, s, "GET", "/v21.0/me", metatest.Token, nil)
	if e := answer["error"].(map[string]any); e["is_transient"] != true {
		t.Fatalf("a 500 is not transient: %v", answer)
	}
}

// FailNextMessage fails message sends alone: other requests in between are answered.
func TestFailNextMessage(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	s.FailNextMessage(1, 400, 131026, 0, "Message Undeliverable")
	if status, _, _ := call(t, s, "GET", "/v21.0/me", metatest.Token, nil); status != 200 {
		t.Fatalf("a request other than a send: %d", status)
	}
	text := wa(map[string]any{"type": "text", "text": map[string]any{"body": "hi"}})
	status, _, answer := call(t, s, "POST", "/v21.0/"+phoneID+"/messages", metatest.Token, text)
	if code, _, _ := graphErr(answer); status != 400 || code != 131026 {
		t.Fatalf("the send: %d %v", status, answer)
	}
	if status, _, answer := call(t, s, "POST", "/v21.0/"+phoneID+"/messages", metatest.Token, text); status != 200 {
		t.Fatalf("the next send: %d %v", status, answer)
	}
}

func TestWaitAndOnAccepted(t *testing.T) {
	t.Parallel()
	s, err := metatest.New(metatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.AddPhoneNumber(phoneID, "+1 555-010-0100", wabaID)
	var done atomic.Int32
	s.OnAccepted(func(m metatest.Message) {
		time.Sleep(50 * time.Millisecond)
		if m.PhoneNumberID == phoneID {
			done.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if _, err := s.Wait(ctx, 1); err == nil {
		t.Fatal("Wait returned before a message")
	}
	cancel()
	body, _ := json.Marshal(wa(map[string]any{"type": "text", "text": map[string]any{"body": "hi"}}))
	go func() {
		req, _ := http.NewRequest("POST", s.URL+"/v21.0/"+phoneID+"/messages", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+metatest.Token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msgs, err := s.Wait(ctx, 1)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Wait = %d, %v", len(msgs), err)
	}
	s.Close()
	if done.Load() != 1 {
		t.Fatal("Close returned before OnAccepted finished")
	}
	s.Close()
}

func TestTemplatesAndPaging(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{PageSize: 2})
	for i := range 3 {
		status, _, answer := call(t, s, "POST", "/v21.0/"+wabaID+"/message_templates", metatest.Token, map[string]any{
			"name": fmt.Sprint("t", i), "language": "en", "category": "UTILITY",
			"components": []any{map[string]any{"type": "BODY", "text": "Hello"}}})
		if status != 200 || answer["status"] != "PENDING" || answer["category"] != "UTILITY" {
			t.Fatalf("create: %d %v", status, answer)
		}
	}
	status, _, answer := call(t, s, "POST", "/v21.0/"+wabaID+"/message_templates", metatest.Token, map[string]any{
		"name": "Bad Name", "language": "en", "category": "UTILITY", "components": []any{}})
	if code, _, _ := graphErr(answer); status != 400 || code != 100 {
		t.Fatalf("a name with capitals: %d %v", status, answer)
	}
	status, _, answer = call(t, s, "GET", "/v21.0/"+wabaID+"/message_templates?fields=name,status", metatest.Token, nil)
	data, _ := answer["data"].([]any)
	paging, _ := answer["paging"].(map[string]any)
	next, _ := paging["next"].(string)
	if status != 200 || len(data) != 2 || next == "" {
		t.Fatalf("first page: %d %v", status, answer)
	}
	u, _ := url.Parse(next)
	_, _, answer = call(t, s, "GET", u.RequestURI(), metatest.Token, nil)
	data, _ = answer["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["name"] != "t2" || answer["paging"].(map[string]any)["next"] != nil {
		t.Fatalf("second page: %v", answer)
	}
	s.SetTemplateStatus(wabaID, "t0", "en", "APPROVED", "")
	if got := s.Templates(wabaID); len(got) != 3 || got[0].Status != "APPROVED" || got[0].Category != "UTILITY" || got[1].Status != "PENDING" {
		t.Fatalf("Templates() = %+v", got)
	}
}

func TestMediaDownloadNeedsTheToken(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	s.AddMedia("5550001", "image/png", []byte("png"))
	status, _, answer := call(t, s, "GET", "/v21.0/5550001", metatest.Token, nil)
	link, _ := answer["url"].(string)
	if status != 200 || answer["mime_type"] != "image/png" || answer["file_size"] != float64(3) || !strings.HasPrefix(link, s.URL) {
		t.Fatalf("media node: %d %v", status, answer)
	}
	get := func(u, token string) (int, string) {
		req, _ := http.NewRequest("GET", u, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get(link, metatest.Token); status != 200 || body != "png" {
		t.Fatalf("download with the token: %d %q", status, body)
	}
	if status, _ := get(link, ""); status != 401 {
		t.Fatalf("download without the token: %d", status)
	}
	if status, _ := get(strings.Replace(link, "hash=", "hash=x", 1), metatest.Token); status != 404 {
		t.Fatalf("download with a forged hash: %d", status)
	}
}

// TestResumableUpload: a session takes its bytes in parts from the offset it reports, the
// upload step wants the OAuth scheme, and the handle becomes a profile picture served at its URL.
func TestResumableUpload(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	status, _, answer := call(t, s, http.MethodPost, "/v21.0/"+metatest.AppID+"/uploads?file_length=10&file_type=image/png", metatest.Token, nil)
	session, _ := answer["id"].(string)
	if status != http.StatusOK || !strings.HasPrefix(session, "upload:") || !strings.Contains(session, "?sig=") {
		t.Fatalf("start = %d %v", status, answer)
	}
	part := func(scheme string, offset int, data string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v21.0/"+session, strings.NewReader(data))
		req.Header.Set("Authorization", scheme+" "+metatest.Token)
		req.Header.Set("file_offset", strconv.Itoa(offset))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if status, _ := part("Bearer", 0, "01234"); status != http.StatusBadRequest {
		t.Fatalf("an upload step with Bearer = %d, want 400", status)
	}
	if status, out := part("OAuth", 0, "01234"); status != http.StatusOK || out["file_offset"] != float64(5) {
		t.Fatalf("first part = %d %v", status, out)
	}
	if status, out := part("OAuth", 3, "56789"); status != http.StatusBadRequest {
		t.Fatalf("a part at the wrong offset = %d %v", status, out)
	}
	_, _, answer = call(t, s, http.MethodGet, "/v21.0/"+strings.SplitN(session, "?", 2)[0], metatest.Token, nil)
	if answer["file_offset"] != float64(5) {
		t.Fatalf("resume offset = %v", answer)
	}
	status, out := part("OAuth", 5, "56789")
	handle, _ := out["h"].(string)
	if status != http.StatusOK || handle == "" {
		t.Fatalf("last part = %d %v", status, out)
	}
	status, _, answer = call(t, s, http.MethodPost, "/v21.0/"+phoneID+"/whatsapp_business_profile", metatest.Token,
		map[string]any{"messaging_product": "whatsapp", "profile_picture_handle": handle})
	if status != http.StatusOK {
		t.Fatalf("set picture = %d %v", status, answer)
	}
	pic, _ := s.Profile(phoneID)["profile_picture_url"].(string)
	resp, err := http.Get(pic)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "0123456789" || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("the picture at %s = %q (%s)", pic, b, resp.Header.Get("Content-Type"))
	}
}
