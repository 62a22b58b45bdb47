package telegram_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
	"github.com/switchboard-io/switchboard/internal/transport/telegram/telegramtest"
)

// fakeAPI answers every request with what answer returns: an HTTP status and a body.
func fakeAPI(t *testing.T, answer func() (int, string)) *httptest.Server {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		status, body := answer()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// want is how a send's error classifies.
type want struct {
	failure      string        // the Failure's code; "" for a Temporary
	message      string        // the Failure's message, when checked
	retryAfter   time.Duration // the Temporary's
	providerCode string
}

func checkClass(t *testing.T, err error, w want) {
	t.Helper()
	var tmp *transport.Temporary
	f := transport.AsFailure(err)
	switch {
	case err == nil:
		t.Fatalf("no error, want %+v", w)
	case w.failure != "":
		if f == nil || f.Code != w.failure || f.ProviderCode != w.providerCode || (w.message != "" && f.Message != w.message) {
			t.Fatalf("err = %#v (%v), want failure %+v", f, err, w)
		}
	case !errors.As(err, &tmp) || f != nil:
		t.Fatalf("err = %v (%T), want *transport.Temporary", err, err)
	case tmp.RetryAfter != w.retryAfter || tmp.ProviderCode != w.providerCode:
		t.Fatalf("temporary = %+v, want retry after %v, provider code %q", tmp, w.retryAfter, w.providerCode)
	}
}

// TestErrorClassification: every refusal the Bot API answers, through Send.
func TestErrorClassification(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   want
	}{
		{"flood control", 429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 12","parameters":{"retry_after":12}}`,
			want{retryAfter: 12 * time.Second, providerCode: "429"}},
		{"flood control without a wait", 429, `{"ok":false,"error_code":429,"description":"Too Many Requests"}`,
			want{providerCode: "429"}},
		{"internal error", 500, `{"ok":false,"error_code":500,"description":"Internal Server Error"}`, want{providerCode: "500"}},
		{"gateway's HTML", 502, `<html><body>502 Bad Gateway</body></html>`, want{providerCode: "502"}},
		{"200 without JSON", 200, `<html>maintenance</html>`, want{providerCode: "200"}},
		{"unknown token", 401, `{"ok":false,"error_code":401,"description":"Unauthorized"}`, want{failure: "PROVIDER_AUTH_FAILED", providerCode: "401"}},
		{"token of the wrong shape", 404, `{"ok":false,"error_code":404,"description":"Not Found"}`, want{failure: "PROVIDER_AUTH_FAILED", providerCode: "404"}},
		{"blocked", 403, `{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`,
			want{failure: "RECIPIENT_BLOCKED", providerCode: "403", message: "Forbidden: bot was blocked by the user"}},
		{"deactivated", 403, `{"ok":false,"error_code":403,"description":"Forbidden: user is deactivated"}`, want{failure: "RECIPIENT_BLOCKED", providerCode: "403"}},
		{"kicked from a group", 403, `{"ok":false,"error_code":403,"description":"Forbidden: bot was kicked from the group chat"}`, want{failure: "RECIPIENT_BLOCKED", providerCode: "403"}},
		{"never started", 403, `{"ok":false,"error_code":403,"description":"Forbidden: bot can't initiate conversation with a user"}`,
			want{failure: "PROVIDER_REJECTED", providerCode: "403", message: "Forbidden: bot can't initiate conversation with a user"}},
		{"chat not found", 400, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`, want{failure: "RECIPIENT_NOT_FOUND", providerCode: "400"}},
		{"other bad request", 400, `{"ok":false,"error_code":400,"description":"Bad Request: message is too long"}`,
			want{failure: "PROVIDER_REJECTED", providerCode: "400", message: "Bad Request: message is too long"}},
		{"group upgraded", 400, `{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1001234}}`,
			want{failure: "PROVIDER_REJECTED", providerCode: "400"}},
		{"conflict", 409, `{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request"}`, want{failure: "PROVIDER_REJECTED", providerCode: "409"}},
		{"error_code missing", 400, `{"ok":false,"description":"Bad Request: chat not found"}`, want{failure: "RECIPIENT_NOT_FOUND", providerCode: "400"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeAPI(t, func() (int, string) { return tc.status, tc.body })
			tr := telegram.Transport{Client: telegram.Client{API: srv.URL}}
			_, err := tr.Send(context.Background(), outbound("text", "hi", nil))
			checkClass(t, err, tc.want)
			if strings.Contains(err.Error(), goodToken) || strings.Contains(err.Error(), "AAHdq") {
				t.Errorf("error %q repeats the token", err)
			}
		})
	}
}

// TestPeerRefusals: the peer's special chats and storms classify as Telegram's would.
func TestPeerRefusals(t *testing.T) {
	t.Parallel()
	to := func(chat int64) transport.Outbound {
		m := outbound("text", "hi", nil)
		m.To = strconv.FormatInt(chat, 10)
		return m
	}
	for name, tc := range map[string]struct {
		m    transport.Outbound
		want want
	}{
		"unknown chat": {to(telegramtest.UnknownChat), want{failure: "RECIPIENT_NOT_FOUND", providerCode: "400", message: "Bad Request: chat not found"}},
		"blocked":      {to(telegramtest.BlockedChat), want{failure: "RECIPIENT_BLOCKED", providerCode: "403"}},
		"deactivated":  {to(telegramtest.DeactivatedChat), want{failure: "RECIPIENT_BLOCKED", providerCode: "403"}},
		"bad media":    {outbound("image", "", &transport.Content{MediaURL: telegramtest.BadMediaURL}), want{failure: "PROVIDER_REJECTED", providerCode: "400"}},
		"empty text":   {outbound("text", "", nil), want{failure: "PROVIDER_REJECTED", providerCode: "400", message: "Bad Request: message text is empty"}},
		"unknown token": {func() transport.Outbound {
			m := outbound("text", "hi", nil)
			m.AccountToken = "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX"
			return m
		}(), want{failure: "PROVIDER_AUTH_FAILED", providerCode: "401"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr, _ := newTransport(t)
			_, err := tr.Send(context.Background(), tc.m)
			checkClass(t, err, tc.want)
		})
	}

	t.Run("storms", func(t *testing.T) {
		t.Parallel()
		tr, srv := newTransport(t)
		srv.Storm(2, http.StatusTooManyRequests)
		for range 2 {
			_, err := tr.Send(context.Background(), outbound("text", "hi", nil))
			checkClass(t, err, want{retryAfter: telegramtest.StormRetryAfter * time.Second, providerCode: "429"})
		}
		srv.Storm(1, http.StatusInternalServerError)
		_, err := tr.Send(context.Background(), outbound("text", "hi", nil))
		checkClass(t, err, want{providerCode: "500"})
		res, err := tr.Send(context.Background(), outbound("text", "hi", nil))
		if err != nil || res.ProviderMessageID != "42:1" {
			t.Fatalf("after the storm: %+v, %v", res, err)
		}
		if n := len(srv.Calls()); n != 4 {
			t.Errorf("the peer answered %d calls, want 4", n)
		}
	})
}

// TestErrorsNeverCarryTheToken: no error of any call repeats the bot token, which is in every URL.
func TestErrorsNeverCarryTheToken(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) }) // runs first: Close waits for the handlers
	garbage := fakeAPI(t, func() (int, string) { return 200, `{"ok":true,"result":"not a message"}` })
	clients := map[string]telegram.Client{
		"nothing listens": {API: "http://127.0.0.1:1"},
		"timeout":         {API: hang.URL, HTTP: &http.Client{Timeout: 50 * time.Millisecond}},
		"bad result":      {API: garbage.URL},
		"bad address":     {API: "http://[::1"},
	}
	ctx := context.Background()
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err1 := c.GetMe(ctx, goodToken)
			_, err2 := telegram.Transport{Client: c}.Send(ctx, outbound("text", "hi", nil))
			err3 := c.SetWebhook(ctx, goodToken, "https://hooks.acme.example/telegram", "s3cret")
			err4 := c.DeleteWebhook(ctx, goodToken)
			for i, err := range []error{err1, err2, err3, err4} {
				if err == nil && (i < 2 || name != "bad result") { // a webhook call reads no result
					t.Fatalf("call %d: no error", i)
				}
				if err == nil {
					continue
				}
				if strings.Contains(err.Error(), goodToken) || strings.Contains(err.Error(), "AAHdq") {
					t.Errorf("call %d: error %q repeats the token", i, err)
				}
			}
			if name == "nothing listens" || name == "timeout" {
				var tmp *transport.Temporary
				if !errors.As(err2, &tmp) {
					t.Errorf("network error %v is not temporary", err2)
				}
			}
		})
	}
}
