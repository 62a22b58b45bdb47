package risk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/pkg/webhook"
)

// DefaultExternalTimeout bounds an external review unless the policy says.
const DefaultExternalTimeout = 5 * time.Second

// External is the installation's moderation service as a reviewer.
type External struct {
	URL     string
	Timeout time.Duration
	// Secret signs the requests (X-Service-Signature, v2); nil sends them unsigned.
	Secret []byte
	// OnFailure is the outcome of a send the service did not decide: Hold or Approve.
	OnFailure Outcome
	HTTP      *http.Client
}

// ExternalRequest is what the service is asked (the body of the POST).
type ExternalRequest struct {
	MessageID string          `json:"messageId"`
	Message   externalMessage `json:"message"`
	Project   externalProject `json:"project"`
}

type externalLink struct {
	URL       string `json:"url"`
	Host      string `json:"host"`
	Domain    string `json:"domain"`
	Shortener bool   `json:"shortener"`
}

type externalMessage struct {
	Channel          string         `json:"channel"`
	To               string         `json:"to"`
	Text             string         `json:"text"`
	Subject          string         `json:"subject,omitempty"`
	RecipientCountry string         `json:"recipientCountry"`
	Links            []externalLink `json:"links"`
	CapitalsShare    float64        `json:"capitalsShare"`
}

type externalProject struct {
	ID                    string `json:"id"`
	Plan                  string `json:"plan"`
	Verification          string `json:"verification"`
	NewRecipientsLastHour int64  `json:"newRecipientsLastHour"`
}

// externalAnswer is the service's answer.
type externalAnswer struct {
	Decision Outcome `json:"decision"`
	Reason   string  `json:"reason"`
}

// maxAnswer bounds the answer read.
const maxExternalAnswer = 64 << 10

// Review asks the service about the send messageID: its answer's decision (approve, hold,
// refuse or block), or OnFailure when it does not give one in time.
func (e *External) Review(ctx context.Context, messageID string, m Message, p Project) Decision {
	d, err := e.ask(ctx, messageID, m, p)
	if err != nil {
		out := e.OnFailure
		if out != Approve {
			out = Hold
		}
		return Decision{Outcome: out, Rule: "external", Reason: "the external reviewer did not decide: " + err.Error()}
	}
	return d
}

func (e *External) ask(ctx context.Context, messageID string, m Message, p Project) (Decision, error) {
	req := ExternalRequest{MessageID: messageID,
		Message: externalMessage{Channel: m.Channel, To: m.To, Text: m.Text, Subject: m.Subject, RecipientCountry: m.RecipientCountry,
			Links: []externalLink{}, CapitalsShare: m.CapitalsShare},
		Project: externalProject{ID: p.ID, Plan: p.Plan, Verification: p.Verification, NewRecipientsLastHour: p.NewRecipientsLastHour}}
	for _, l := range m.Links {
		req.Message.Links = append(req.Message.Links, externalLink{URL: l.URL, Host: l.Host, Domain: l.Domain, Shortener: l.Shortener})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Decision{}, err
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExternalTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return Decision{}, fmt.Errorf("build request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if len(e.Secret) > 0 {
		sig, err := webhook.Sign(e.Secret, body, time.Now(), webhook.V2)
		if err != nil {
			return Decision{}, err
		}
		hr.Header.Set(webhook.SignatureHeader, sig)
	}
	hc := e.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return Decision{}, fmt.Errorf("no answer within %s", timeout)
		}
		return Decision{}, fmt.Errorf("unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Decision{}, fmt.Errorf("it answered HTTP %d", resp.StatusCode)
	}
	var a externalAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxExternalAnswer)).Decode(&a); err != nil {
		return Decision{}, fmt.Errorf("its answer is not JSON")
	}
	if _, ok := severity[a.Decision]; !ok {
		return Decision{}, fmt.Errorf("its decision %q is not approve, hold, refuse or block", a.Decision)
	}
	d := Decision{Outcome: a.Decision, Reason: a.Reason}
	if a.Decision != Approve {
		d.Rule = "external"
		if d.Reason == "" {
			d.Reason = "the external reviewer decided so"
		}
	}
	return d, nil
}
