package broadcast

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// ReviewResult is what the review said of a broadcast.
type ReviewResult struct {
	Categories     []string  `json:"categories,omitempty"`
	FlaggedContent []string  `json:"flaggedContent"`
	Reasoning      string    `json:"reasoning,omitempty"`
	ReviewedAt     time.Time `json:"reviewedAt"`
	Score          *float64  `json:"score,omitempty"`
}

// Broadcast is a broadcast as the API shows it (WIRE.md §4). Costs are USD.
type Broadcast struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Status         string            `json:"status"`
	Channel        string            `json:"channel"`
	MessageType    string            `json:"messageType"`
	TotalContacts  int32             `json:"totalContacts"`
	CreatedAt      time.Time         `json:"createdAt"`
	UpdatedAt      time.Time         `json:"updatedAt"`
	Text           *string           `json:"text,omitempty"`
	Content        *Content          `json:"content,omitempty"`
	EmailSubject   *string           `json:"emailSubject,omitempty"`
	UnsubscribeURL *string           `json:"unsubscribeUrl,omitempty"`
	SenderID       *string           `json:"senderId,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	ScheduledAt    *time.Time        `json:"scheduledAt,omitempty"`
	StartedAt      *time.Time        `json:"startedAt,omitempty"`
	CompletedAt    *time.Time        `json:"completedAt,omitempty"`
	PendingCount   int32             `json:"pendingCount"`
	SendingCount   int32             `json:"sendingCount"`
	SentCount      int32             `json:"sentCount"`
	DeliveredCount int32             `json:"deliveredCount"`
	FailedCount    int32             `json:"failedCount"`
	SkippedCount   int32             `json:"skippedCount"`
	EstimatedCost  *float64          `json:"estimatedCost"`
	ReservedAmount *float64          `json:"reservedAmount"`
	ActualCost     *float64          `json:"actualCost"`
	ReviewAttempts *int32            `json:"reviewAttempts"`
	ReviewResult   *ReviewResult     `json:"reviewResult"`
	// queued are the recipients in SendingCount whose message has not left yet.
	queued int32
}

func usd(m *int64) *float64 {
	if m == nil {
		return nil
	}
	v := billing.Micros(*m).USD()
	return &v
}

func viewOf(b db.Broadcast) Broadcast {
	f := fieldsOf(b)
	v := Broadcast{ID: b.ID, Name: b.Name, Status: b.Status, Channel: b.Channel, MessageType: b.MessageType,
		TotalContacts: b.TotalContacts, CreatedAt: b.CreatedAt.UTC(), UpdatedAt: b.UpdatedAt.UTC(), Text: b.Text, Content: f.content,
		EmailSubject: b.EmailSubject, UnsubscribeURL: b.UnsubscribeUrl, SenderID: b.SenderID, Metadata: f.metadata, ScheduledAt: utc(b.ScheduledAt),
		StartedAt: utc(b.StartedAt), CompletedAt: utc(b.CompletedAt), PendingCount: b.PendingCount,
		SendingCount: b.QueuedCount + b.SendingCount, SentCount: b.SendingCount + b.DeliveredCount, DeliveredCount: b.DeliveredCount,
		FailedCount: b.FailedCount, SkippedCount: b.SkippedCount, queued: b.QueuedCount,
		EstimatedCost: usd(b.EstimatedCostMicros), ReservedAmount: usd(b.ReservedMicros), ActualCost: usd(b.ActualCostMicros)}
	if b.ReviewAttempts > 0 {
		n := b.ReviewAttempts
		v.ReviewAttempts = &n
	}
	if len(b.ReviewResult) > 0 {
		v.ReviewResult = &ReviewResult{}
		_ = json.Unmarshal(b.ReviewResult, v.ReviewResult)
	}
	return v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Progress is a broadcast's progress (WIRE.md §4's bare BroadcastProgress).
type Progress struct {
	BroadcastID           string     `json:"broadcastId"`
	Status                string     `json:"status"`
	Total                 int32      `json:"total"`
	Pending               int32      `json:"pending"`
	Sending               int32      `json:"sending"`
	Delivered             int32      `json:"delivered"`
	Failed                int32      `json:"failed"`
	Skipped               int32      `json:"skipped"`
	PercentComplete       float64    `json:"percentComplete"`
	EstimatedCost         *float64   `json:"estimatedCost"`
	ReservedAmount        *float64   `json:"reservedAmount"`
	ActualCost            *float64   `json:"actualCost"`
	StartedAt             *time.Time `json:"startedAt,omitempty"`
	EstimatedCompletionAt *time.Time `json:"estimatedCompletionAt,omitempty"`
}

// progressOf is b's progress at now: the share of recipients whose message has left (sent,
// delivered or failed) or who were skipped, and, while it sends, when it will get there at the
// pace so far.
func progressOf(b Broadcast, now time.Time) Progress {
	p := Progress{BroadcastID: b.ID, Status: b.Status, Total: b.TotalContacts, Pending: b.PendingCount, Sending: b.SendingCount,
		Delivered: b.DeliveredCount, Failed: b.FailedCount, Skipped: b.SkippedCount, EstimatedCost: b.EstimatedCost,
		ReservedAmount: b.ReservedAmount, ActualCost: b.ActualCost, StartedAt: b.StartedAt}
	done := b.TotalContacts - b.PendingCount - b.queued
	if b.TotalContacts > 0 {
		p.PercentComplete = math.Round(float64(done)*10000/float64(b.TotalContacts)) / 100
	}
	if b.Status == StatusSending && b.StartedAt != nil && done > 0 && done < b.TotalContacts {
		elapsed := now.Sub(*b.StartedAt)
		eta := b.StartedAt.Add(time.Duration(float64(elapsed) * float64(b.TotalContacts) / float64(done))).UTC()
		p.EstimatedCompletionAt = &eta
	}
	return p
}

// Progress returns a broadcast's progress.
func (s *Service) Progress(b Broadcast) Progress { return progressOf(b, s.now()) }

// Contact is a recipient of a broadcast as the API shows it.
type Contact struct {
	ID                      string            `json:"id"`
	CreatedAt               time.Time         `json:"createdAt"`
	Recipient               string            `json:"recipient"`
	RecipientType           string            `json:"recipientType"`
	Status                  string            `json:"status"`
	Cost                    *float64          `json:"cost"`
	ErrorCode               *string           `json:"errorCode,omitempty"`
	ErrorMessage            *string           `json:"errorMessage,omitempty"`
	MessageID               *string           `json:"messageId,omitempty"`
	ProcessedAt             *time.Time        `json:"processedAt,omitempty"`
	TemplateVariables       map[string]string `json:"templateVariables,omitempty"`
	TemplateHeaderVariables map[string]string `json:"templateHeaderVariables,omitempty"`
	TemplateButtonVariables map[string]string `json:"templateButtonVariables,omitempty"`
}

func contactOf(c db.BroadcastContact) Contact {
	v := Contact{ID: c.ID, CreatedAt: c.CreatedAt.UTC(), Recipient: c.Recipient, RecipientType: c.RecipientType, Status: c.Status,
		Cost: usd(c.CostMicros), ErrorCode: c.ErrorCode, ErrorMessage: c.ErrorMessage, MessageID: c.MessageID, ProcessedAt: utc(c.ProcessedAt)}
	_ = json.Unmarshal(c.TemplateVariables, &v.TemplateVariables)
	_ = json.Unmarshal(c.TemplateHeaderVariables, &v.TemplateHeaderVariables)
	_ = json.Unmarshal(c.TemplateButtonVariables, &v.TemplateButtonVariables)
	return v
}

// viewIn is row as the API shows it, with its changes not folded yet (unfolded).
func viewIn(ctx context.Context, q *db.Queries, row db.Broadcast) (Broadcast, error) {
	rows := []db.Broadcast{row}
	if err := unfolded(ctx, q, rows); err != nil {
		return Broadcast{}, err
	}
	return viewOf(rows[0]), nil
}

// unfolded adds to rows the changes to their counters recorded but not folded into them yet
// (fold), so that a read's counters are exact at every moment.
func unfolded(ctx context.Context, q *db.Queries, rows []db.Broadcast) error {
	var ids []string
	for _, r := range rows {
		if r.StartedAt != nil { // only a broadcast that has sent has changes
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sums, err := q.BroadcastDeltaSums(ctx, ids)
	if err != nil {
		return fmt.Errorf("read broadcasts' counters: %w", err)
	}
	for _, d := range sums {
		for i := range rows {
			r := &rows[i]
			if r.ID != d.BroadcastID {
				continue
			}
			r.PendingCount += d.Pending
			r.QueuedCount += d.Queued
			r.SendingCount += d.Sending
			r.DeliveredCount += d.Delivered
			r.FailedCount += d.Failed
			r.SkippedCount += d.Skipped
			if d.Cost != 0 {
				r.ActualCostMicros = ptr(deref64(r.ActualCostMicros) + d.Cost)
			}
			if r.ReservedMicros != nil {
				r.ReservedMicros = ptr(*r.ReservedMicros - d.Released)
			}
		}
	}
	return nil
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
