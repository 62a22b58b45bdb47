// Package telegramtest runs a local Telegram Bot API server for tests: it answers getMe as the
// Bot API documents it, for one known bot token.
package telegramtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Token is the token the server knows; any other is Unauthorized.
const Token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// Bot id and username the server reports for Token.
const (
	BotID       = 123456789
	BotUsername = "acme_bot"
)

// NewServer starts the server on loopback; it stops when t ends. Its URL is the Bot API address.
func NewServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/bot"+Token+"/getMe" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"ok":false,"error_code":401,"description":"Unauthorized"}`))
			return
		}
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"id":%d,"is_bot":true,"first_name":"Acme","username":%q}}`, BotID, BotUsername)
	}))
	t.Cleanup(srv.Close)
	return srv
}
