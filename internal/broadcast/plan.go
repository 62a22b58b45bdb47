package broadcast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/unsubscribe"
)

// smartOrder is the order smart tries a sender's channels in when their prices tie: WhatsApp is
// not charged per message, then SMS, then one-way SMS. Channels that cannot reach a phone
// number (Telegram, Instagram, Messenger, email) are never tried.
var smartOrder = []string{"whatsapp", "sms", "sms_oneway"}

// plan is how a broadcast's recipients become messages: its sender, the channels tried, and the
// pace of each channel's address.
type plan struct {
	s        *Service
	b        db.Broadcast
	f        fields
	snd      *v1alpha1.Sender
	sndErr   error // why there is no sender: every recipient fails with it
	channels []string
	list     *v1alpha1.PriceList // nil: nothing is priced
	paces    map[string]pace     // by channel
	rates    map[string]float64  // messages per second by paced address
	// next is where each paced address's pace stands, locked for this chunk (allowance).
	next map[string]time.Time
}

// pace is an address's pace: the key its sends share and its messages per second (0: none).
type pace struct {
	key       string
	perSecond float64
}

// plan reads what b's recipients need once per chunk.
func (s *Service) plan(ctx context.Context, b db.Broadcast) (*plan, error) {
	p := &plan{s: s, b: b, f: fieldsOf(b), paces: map[string]pace{}, rates: map[string]float64{}}
	p.snd, p.sndErr = s.send.BulkSender(ctx, b.Project, b.SenderID)
	var ae *apperror.Error
	if p.sndErr != nil && !errors.As(p.sndErr, &ae) {
		return nil, p.sndErr
	}
	p.channels = []string{b.Channel}
	if b.Channel == "smart" {
		p.channels = nil
		if p.snd != nil {
			sendable := p.snd.SendableChannels()
			for _, ch := range smartOrder {
				if slices.Contains(sendable, v1alpha1.Channel(ch)) {
					p.channels = append(p.channels, ch)
				}
			}
		}
	}
	if s.money != nil { // what smart compares, and what the chunk releases and charges
		list, err := s.money.PriceList(ctx, b.Project)
		if err != nil {
			return nil, err
		}
		p.list = list
	}
	if p.snd != nil && s.pacer != nil {
		for _, ch := range p.channels {
			key, rate, err := s.pacer.Pace(ctx, b.TestMode, p.snd, ch)
			if err != nil {
				return nil, err
			}
			p.paces[ch] = pace{key: key, perSecond: rate}
			if rate > 0 {
				p.rates[key] = rate
			}
		}
	}
	return p, nil
}

// allowance locks the paces of the broadcast's paced addresses (in one order) and returns how
// many recipients the chunk may take now: what each address's messages per second allow from
// where its pace stands to paceWindow from now; -1 when none is paced.
func (p *plan) allowance(ctx context.Context, q *db.Queries, now time.Time) (int, error) {
	keys := slices.Sorted(maps.Keys(p.rates))
	limit := -1
	p.next = map[string]time.Time{}
	for _, key := range keys {
		if err := q.EnsurePace(ctx, db.EnsurePaceParams{PaceKey: key, Now: now}); err != nil {
			return 0, fmt.Errorf("pace %s: %w", key, err)
		}
		next, err := q.LockPace(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("pace %s: %w", key, err)
		}
		if next.Before(now) {
			next = now
		}
		p.next[key] = next
		n := int(p.rates[key] * now.Add(paceWindow).Sub(next).Seconds())
		if limit == -1 || n < limit {
			limit = max(n, 0)
		}
	}
	return limit, nil
}

// advance moves each paced address's pace past the chunk's messages from it.
func (p *plan) advance(ctx context.Context, q *db.Queries, outs []outbound) error {
	sent := map[string]int{}
	for _, o := range outs {
		if pc := p.paces[o.Channel]; pc.perSecond > 0 {
			sent[pc.key]++
		}
	}
	for key, n := range sent {
		next := p.next[key].Add(time.Duration(float64(n) / p.rates[key] * float64(time.Second)))
		if err := q.SetPace(ctx, db.SetPaceParams{PaceKey: key, NextAt: next}); err != nil {
			return fmt.Errorf("pace %s: %w", key, err)
		}
	}
	return nil
}

// outbound is one recipient's message and which result it is.
type outbound struct {
	message.Outbound
	index int
}

func batchOf(outs []outbound) []message.Outbound {
	batch := make([]message.Outbound, len(outs))
	for i := range outs {
		batch[i] = outs[i].Outbound
	}
	return batch
}

// messages makes each recipient's message through the accept policies; a recipient refused
// fails with why (its result), and the others are returned to be accepted.
func (p *plan) messages(ctx context.Context, contacts []db.BroadcastContact) ([]outbound, []result, error) {
	results := make([]result, len(contacts))
	var outs []outbound
	for i, c := range contacts {
		results[i] = result{id: c.ID, status: "failed", cost: -1}
		o, err := p.message(ctx, c)
		var ae *apperror.Error
		switch {
		case err == nil:
			outs = append(outs, outbound{Outbound: *o, index: i})
		case errors.As(err, &ae):
			results[i].code, results[i].reason = strings.ToUpper(ae.Code), ae.Message
		default:
			return nil, nil, err
		}
	}
	return outs, results, nil
}

// message is the message to one recipient, on the first channel whose policies take it (the
// cheapest first for smart).
func (p *plan) message(ctx context.Context, c db.BroadcastContact) (*message.Outbound, error) {
	if p.sndErr != nil {
		return nil, p.sndErr
	}
	vars, header, buttons := decodeVars(c.TemplateVariables), decodeVars(c.TemplateHeaderVariables), decodeVars(c.TemplateButtonVariables)
	text, missing := fillAll(deref(p.b.Text), vars)
	subject, missingSubject := fillAll(deref(p.b.EmailSubject), vars)
	html, missingHTML := fillAll(deref(p.b.EmailHtmlBody), vars)
	if m := append(append(missing, missingSubject...), missingHTML...); len(m) > 0 {
		return nil, &apperror.Error{Kind: apperror.Invalid, Code: "variable_missing",
			Message: fmt.Sprintf("The recipient has no value for %s; give it in templateVariables.", strings.Join(m, ", "))}
	}
	channels := p.channels
	if len(channels) == 0 {
		return nil, apperror.New(apperror.Conflict, "no_channel", fmt.Sprintf("Sender %s has no active WhatsApp, SMS or one-way SMS channel to reach %s.", p.snd.Name, c.Recipient))
	}
	if p.b.Channel == "smart" && p.list != nil {
		channels = p.cheapestFirst(c.Recipient, text)
	}
	metadata := map[string]string{"broadcastId": p.b.ID}
	for k, v := range p.f.metadata {
		metadata[k] = v
	}
	var last error
	for _, ch := range channels {
		o := &message.Outbound{Project: p.b.Project, TestMode: p.b.TestMode, Sender: p.snd.Name, Channel: ch,
			MessageType: p.b.MessageType, To: c.Recipient, Text: text, Content: p.content(vars, header, buttons),
			Metadata: metadata, BroadcastContactID: c.ID}
		if ch == "email" {
			if subject != "" {
				o.Subject = &subject
			}
			o.Options.HTMLBody = html
			if p.b.UnsubscribeUrl != nil {
				o.UnsubscribeURL = unsubscribe.ExpandURL(*p.b.UnsubscribeUrl,
					unsubscribe.Recipient{ID: c.ID, Broadcast: p.b.ID, Address: c.Recipient})
			}
		}
		err := p.s.send.CheckBulk(ctx, o, p.snd)
		var ae *apperror.Error
		if err == nil {
			return o, nil
		}
		if !errors.As(err, &ae) {
			return nil, err
		}
		last = err
	}
	return nil, last
}

// cheapestFirst orders smart's channels by their price to the recipient (stable: ties keep
// smartOrder).
func (p *plan) cheapestFirst(to, text string) []string {
	price := map[string]billing.Micros{}
	for _, ch := range p.channels {
		if billing.Charged[ch] {
			if q, ok, err := billing.QuoteOf(p.list, ch, to, text); err == nil && ok {
				price[ch] = q.Price
			}
		}
	}
	out := slices.Clone(p.channels)
	slices.SortStableFunc(out, func(a, b string) int { return int(price[a] - price[b]) })
	return out
}

// content is the broadcast's content for one recipient: its template variables over the
// broadcast's.
func (p *plan) content(vars, header, buttons map[string]string) *transport.Content {
	c := p.f.content
	if c == nil {
		return nil
	}
	out := &transport.Content{MediaURL: deref(c.MediaURL), MediaID: deref(c.MediaID), MimeType: deref(c.MimeType),
		Filename: deref(c.Filename), TemplateID: deref(c.TemplateID)}
	if out.TemplateID != "" {
		out.TemplateVars, out.TemplateHeader, out.TemplateButtons = merged(c.TemplateVariables, vars),
			merged(c.TemplateHeaderVariables, header), merged(c.TemplateButtonVariables, buttons)
	}
	return out
}

func decodeVars(raw []byte) map[string]string {
	var m map[string]string
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

// merged is over laid on base (nil when both are empty).
func merged(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// fillAll fills text's placeholders with vars and names those without a value.
func fillAll(text string, vars map[string]string) (string, []string) {
	out := fill(text, vars)
	var missing []string
	for _, m := range variable.FindAllStringSubmatch(out, -1) {
		if ph := "{{" + m[1] + "}}"; !slices.Contains(missing, ph) {
			missing = append(missing, ph)
		}
	}
	return out, missing
}
