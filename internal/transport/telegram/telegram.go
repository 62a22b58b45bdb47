// Package telegram talks to the Telegram Bot API (https://core.telegram.org/bots/api): it sends
// messages (Transport), registers webhooks (Client.SetWebhook) and reads the updates Telegram
// posts to them (ParseUpdate). A bot token is part of every request's URL, so no error from this
// package ever carries the URL.
package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// DefaultAPI is the Bot API's address.
const DefaultAPI = "https://api.telegram.org"

// ErrInvalidToken: Telegram does not know the token, or it is not shaped like one.
var ErrInvalidToken = errors.New("telegram: the bot token was rejected")

// tokenShape is "<bot id>:<secret>" as BotFather issues it.
var tokenShape = regexp.MustCompile(`^[0-9]{3,20}:[A-Za-z0-9_-]{30,64}$`)

// defaultHTTP is the client of a Client without one. Sending media by URL makes Telegram fetch
// it before it answers, hence more than a few seconds.
var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// maxAnswer bounds the Bot API answer read (a Message is a few kilobytes).
const maxAnswer = 1 << 20

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

// GetMe checks token and returns its bot. A token Telegram does not know (or that is not shaped
// like one) is ErrInvalidToken; other errors are those of Transport.Send.
func (c Client) GetMe(ctx context.Context, token string) (Bot, error) {
	if !tokenShape.MatchString(token) {
		return Bot{}, ErrInvalidToken
	}
	var me struct {
		ID       int64  `json:"id"`
		IsBot    bool   `json:"is_bot"`
		Username string `json:"username"`
	}
	if err := c.call(ctx, token, "getMe", nil, &me); err != nil {
		return Bot{}, tokenError(err)
	}
	if !me.IsBot {
		return Bot{}, ErrInvalidToken
	}
	return Bot{ID: me.ID, Username: me.Username}, nil
}

// tokenError makes an authentication failure ErrInvalidToken, for the calls made with a token
// that is being attached rather than a message being sent.
func tokenError(err error) error {
	if f := transport.AsFailure(err); f != nil && f.Code == CodeAuthFailed {
		return ErrInvalidToken
	}
	return err
}

// answer is every Bot API answer: {ok, result} or {ok:false, error_code, description,
// parameters}.
type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call posts params as JSON to method and decodes the answer's result into out (when not nil).
// Its errors are classified (classify): *transport.Failure, *transport.Temporary.
func (c Client) call(ctx context.Context, token, method string, params, out any) error {
	body := []byte("{}")
	if params != nil {
		var err error
		if body, err = json.Marshal(params); err != nil {
			return fmt.Errorf("telegram: encode %s: %w", method, err)
		}
	}
	api := c.API
	if api == "" {
		api = DefaultAPI
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(api, "/")+"/bot"+token+"/"+method, bytes.NewReader(body))
	if err != nil {
		// The error repeats the URL.
		return fmt.Errorf("telegram: build %s request", method)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return networkError(method, token, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return networkError(method, token, err)
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		if resp.StatusCode == http.StatusOK {
			return temporary(method, resp.StatusCode, "answered with no JSON", 0)
		}
		return classify(method, resp.StatusCode, http.StatusText(resp.StatusCode), 0)
	}
	if !a.OK {
		code := a.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return classify(method, code, a.Description, a.Parameters.RetryAfter)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			return fmt.Errorf("telegram: decode %s result: %w", method, err)
		}
	}
	return nil
}

// networkError is trouble on the way to the Bot API, tried again. url.Error repeats the URL, and
// the URL holds the token: only its cause is kept, and the token is cut from whatever remains.
func networkError(method, token string, err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap()
	}
	if token != "" && strings.Contains(err.Error(), token) {
		err = errors.New(strings.ReplaceAll(err.Error(), token, "<token>"))
	}
	return newTemporary(fmt.Errorf("telegram: %s: %w", method, err), 0, "")
}
