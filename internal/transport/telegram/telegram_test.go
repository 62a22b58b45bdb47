package telegram_test

import (
	"context"
	"errors"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport/telegram"
	"github.com/switchboard-io/switchboard/internal/transport/telegram/telegramtest"
)

const goodToken = telegramtest.Token

func TestGetMe(t *testing.T) {
	t.Parallel()
	c := telegram.Client{API: telegramtest.NewServer(t).URL}
	bot, err := c.GetMe(context.Background(), goodToken)
	if err != nil || bot.ID != 123456789 || bot.Username != "acme_bot" {
		t.Fatalf("GetMe = %+v, %v", bot, err)
	}
	for name, token := range map[string]string{
		"unknown":   "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX",
		"malformed": "not-a-token",
		"empty":     "",
	} {
		if _, err := c.GetMe(context.Background(), token); !errors.Is(err, telegram.ErrInvalidToken) {
			t.Errorf("%s token: %v, want telegram.ErrInvalidToken", name, err)
		}
	}
}
