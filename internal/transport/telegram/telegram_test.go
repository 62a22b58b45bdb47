package telegram

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const goodToken = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// botAPI answers getMe as the Bot API documents it, for one known token.
func botAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/bot"+goodToken+"/getMe" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"ok":false,"error_code":401,"description":"Unauthorized"}`))
			return
		}
		_, _ = w.Write([]byte(`{"ok":true,"result":{"id":123456789,"is_bot":true,"first_name":"Acme","username":"acme_bot"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGetMe(t *testing.T) {
	t.Parallel()
	c := Client{API: botAPI(t).URL}
	bot, err := c.GetMe(context.Background(), goodToken)
	if err != nil || bot.ID != 123456789 || bot.Username != "acme_bot" {
		t.Fatalf("GetMe = %+v, %v", bot, err)
	}
	for name, token := range map[string]string{
		"unknown":   "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX",
		"malformed": "not-a-token",
		"empty":     "",
	} {
		if _, err := c.GetMe(context.Background(), token); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s token: %v, want ErrInvalidToken", name, err)
		}
	}
}

func TestErrorsNeverCarryTheToken(t *testing.T) {
	t.Parallel()
	c := Client{API: "http://127.0.0.1:1"} // nothing listens
	_, err := c.GetMe(context.Background(), goodToken)
	if err == nil || strings.Contains(err.Error(), goodToken) || strings.Contains(err.Error(), "AAHdq") {
		t.Fatalf("error %q must not repeat the token", err)
	}
}
