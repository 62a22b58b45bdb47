package twiliotest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNotLoopback: the peer posts only to loopback addresses, never to the network.
var ErrNotLoopback = errors.New("twiliotest: refusing to post to a non-loopback address")

// loopbackClient posts only to loopback addresses: the dialer refuses any other, whatever a
// name resolves to, and no proxy is used.
func loopbackClient() *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return ErrNotLoopback
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return ErrNotLoopback
		}
		return nil
	}}
	return &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{Proxy: nil, DialContext: d.DialContext, MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// checkLoopback refuses a URL whose host is not localhost or a loopback address.
func checkLoopback(raw string) error {
	return checkLoopbackURL(raw, "http", "https")
}

// checkLoopbackURL is checkLoopback for a URL of one of schemes.
func checkLoopbackURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil || !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("twiliotest: %q is not a %s URL", raw, strings.Join(schemes, " or "))
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return ErrNotLoopback
}

// spawn runs f in a goroutine that the server's close waits for; nothing after close (false).
func (s *Server) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// wait sleeps the callback delay; false when the server stopped meanwhile.
func (s *Server) wait() bool {
	s.mu.Lock()
	d := s.delay
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// messageCallbacks posts a message's status callbacks: sent, then delivered (or undelivered
// with the ErrorCode FailDelivery set), with the parameters Twilio documents.
func (s *Server) messageCallbacks(m Message) {
	s.mu.Lock()
	failCode, fails := s.deliveryFails[m.To]
	s.mu.Unlock()
	from := m.From
	if from == "" {
		from = PoolNumber
	}
	final := "delivered"
	if fails {
		final = "undelivered"
	}
	for _, status := range []string{"sent", final} {
		if !s.wait() {
			return
		}
		p := url.Values{
			"AccountSid": {AccountSID}, "ApiVersion": {apiVersion}, "From": {from}, "To": {m.To},
			"MessageSid": {m.SID}, "SmsSid": {m.SID}, "MessageStatus": {status}, "SmsStatus": {status},
		}
		if m.MessagingServiceSID != "" {
			p.Set("MessagingServiceSid", m.MessagingServiceSID)
		}
		code := 0
		if status == "undelivered" {
			code = failCode
			p.Set("ErrorCode", strconv.Itoa(failCode))
		}
		s.setMessageStatus(m.SID, status, code)
		if m.StatusCallback != "" {
			s.post(m.StatusCallback, p)
		}
	}
}

// post posts a signed callback and records it.
func (s *Server) post(target string, p url.Values) {
	cb := Callback{URL: target, Params: p}
	if err := checkLoopback(target); err != nil {
		cb.Err = err
	} else {
		cb.Status, _, cb.Err = s.postSigned(s.ctx, target, p)
	}
	s.mu.Lock()
	s.callbacks = append(s.callbacks, cb)
	s.mu.Unlock()
}

func (s *Server) postSigned(ctx context.Context, target string, p url.Values) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(p.Encode()))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", Sign(AuthToken, target, p))
	req.Header.Set("I-Twilio-Idempotency-Token", strings.TrimPrefix(sid("ID"), "ID"))
	req.Header.Set("User-Agent", "TwilioProxy/1.1")
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), nil
}

// SendInbound posts an inbound SMS (an MMS with media) to webhookURL as Twilio's messaging
// webhook does, signed, and returns the webhook's HTTP status and body.
func (s *Server) SendInbound(ctx context.Context, webhookURL, from, to, body string, media ...Media) (int, string, error) {
	if err := checkLoopback(webhookURL); err != nil {
		return 0, "", err
	}
	msid := sid("SM")
	if len(media) > 0 {
		msid = sid("MM")
	}
	p := url.Values{
		"AccountSid": {AccountSID}, "ApiVersion": {apiVersion}, "From": {from}, "To": {to}, "Body": {body},
		"MessageSid": {msid}, "SmsSid": {msid}, "SmsMessageSid": {msid}, "SmsStatus": {"received"},
		"NumMedia": {strconv.Itoa(len(media))}, "NumSegments": {segments(body)},
	}
	for i, m := range media {
		p.Set(fmt.Sprintf("MediaUrl%d", i), m.URL)
		p.Set(fmt.Sprintf("MediaContentType%d", i), m.ContentType)
	}
	return s.postSigned(ctx, webhookURL, p)
}
