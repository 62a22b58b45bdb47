// Package telegram talks to the Telegram Bot API (https://core.telegram.org/bots/api). A bot
// token is part of every request's URL, so no error from this package ever carries the URL.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// DefaultAPI is the Bot API's address.
const DefaultAPI = "https://api.telegram.org"

// ErrInvalidToken: Telegram does not know the token, or it is not shaped like one.
var ErrInvalidToken = errors.New("telegram: the bot token was rejected")

// tokenShape is "<bot id>:<secret>" as BotFather issues it.
var tokenShape = regexp.MustCompile(`^[0-9]{3,20}:[A-Za-z0-9_-]{30,64}$`)

// Client calls the Bot API.
type Client struct {
	// API is the Bot API's address; tests point it at a local server.
	API  string
	HTTP *http.Client
}

// Bot is what getMe says of a bot.
type Bot struct {
	ID       int64
	Username string
}

// GetMe checks token and returns its bot.
func (c Client) GetMe(ctx context.Context, token string) (Bot, error) {
	if !tokenShape.MatchString(token) {
		return Bot{}, ErrInvalidToken
	}
	api := c.API
	if api == "" {
		api = DefaultAPI
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(api, "/")+"/bot"+token+"/getMe", nil)
	if err != nil {
		return Bot{}, errors.New("telegram: build getMe request")
	}
	resp, err := hc.Do(req)
	if err != nil {
		// url.Error repeats the URL, and the URL holds the token: keep only the cause.
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap()
		}
		return Bot{}, fmt.Errorf("telegram: getMe: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		OK          bool   `json:"ok"`
		ErrorCode   int    `json:"error_code"`
		Description string `json:"description"`
		Result      struct {
			ID       int64  `json:"id"`
			IsBot    bool   `json:"is_bot"`
			Username string `json:"username"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return Bot{}, fmt.Errorf("telegram: getMe answered %d with no JSON", resp.StatusCode)
	}
	if !body.OK {
		if body.ErrorCode == http.StatusUnauthorized || body.ErrorCode == http.StatusNotFound {
			return Bot{}, ErrInvalidToken
		}
		return Bot{}, fmt.Errorf("telegram: getMe: %d %s", body.ErrorCode, body.Description)
	}
	if !body.Result.IsBot {
		return Bot{}, ErrInvalidToken
	}
	return Bot{ID: body.Result.ID, Username: body.Result.Username}, nil
}
