// Package call holds voice calls (docs/calls.md): a call is a conversation with the sender's
// agent held by voice. A telephony provider (Twilio's ConversationRelay, or the sandbox's
// scripted caller for test keys) recognises the caller's speech and reads out the agent's
// answers; this package keeps the call's state in Postgres (moved by the provider's status
// callbacks, the relay and the sweeper, each change with its webhook event in one transaction),
// runs the relay session that gives each prompt to the agent runtime and streams its answer
// back, keeps the transcript turn by turn, and settles the call's money when it ends.
package call

import (
	"encoding/json"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// The statuses of a call (spec: Call).
const (
	StatusQueued     = "queued"
	StatusRinging    = "ringing"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusBusy       = "busy"
	StatusNoAnswer   = "no_answer"
	StatusCanceled   = "canceled"
)

// Active says whether a call with status s may still change.
func Active(s string) bool {
	return s == StatusQueued || s == StatusRinging || s == StatusInProgress
}

// Why calls end (endReason).
const (
	// EndHangup: the person on the phone hung up.
	EndHangup = "hangup"
	// EndAgent: the agent ended the call (its end_call tool).
	EndAgent = "agent_ended"
	// EndMaxDuration: the call reached maxDurationMinutes.
	EndMaxDuration = "max_duration"
	// EndIdle: the caller said nothing for the agent's maxIdleSeconds.
	EndIdle = "idle_timeout"
	// EndTransfer: the agent handed the call to its transferPhoneNumber.
	EndTransfer = "transfer"
	// EndAPI: POST /v1/calls/{id}/hangup.
	EndAPI = "api_hangup"
	// EndVoicemail: an answering machine picked up (the agent's voicemailAction).
	EndVoicemail = "voicemail"
	// EndError: the model or the relay failed mid-call; the caller heard an apology.
	EndError = "error"
	// EndRelayLost: the process holding the call's relay died and nobody took it over.
	EndRelayLost = "relay_lost"
	// EndBusy, EndNoAnswer, EndCanceled, EndFailed: the call was never answered.
	EndBusy     = "busy"
	EndNoAnswer = "no_answer"
	EndCanceled = "canceled"
	EndFailed   = "failed"
	// EndRiskRejected: risk review stopped the call before it was placed.
	EndRiskRejected = "risk_rejected"
	// EndInsufficientBalance: the balance could not pay for an incoming call.
	EndInsufficientBalance = "insufficient_balance"
)

// The directions of a call.
const (
	Inbound  = "inbound"
	Outbound = "outbound"
)

// ProviderSandbox is the provider of test keys' calls.
const ProviderSandbox = "sandbox"

// Call is a call as the API shows it.
type Call struct {
	ID              string            `json:"id"`
	CreatedAt       time.Time         `json:"createdAt"`
	UpdatedAt       *time.Time        `json:"updatedAt,omitempty"`
	Direction       string            `json:"direction"`
	From            string            `json:"from"`
	To              string            `json:"to"`
	Status          string            `json:"status"`
	AnsweredAt      *time.Time        `json:"answeredAt"`
	EndedAt         *time.Time        `json:"endedAt"`
	DurationSeconds *int32            `json:"durationSeconds"`
	Cost            *float64          `json:"cost"`
	EndReason       *string           `json:"endReason"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	TurnCount       *int32            `json:"turnCount"`
	Transcript      []Turn            `json:"transcript,omitempty"`
}

// Turn is one entry of a call's transcript.
type Turn struct {
	Role      string     `json:"role"`
	Seq       int32      `json:"seq"`
	Text      string     `json:"text"`
	StartedAt *time.Time `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"`
	// Interrupted and LatencyMs are Switchboard's own: the caller spoke over the answer (Text
	// is what they heard), and the time from the caller's prompt to the answer's first words.
	Interrupted bool   `json:"interrupted,omitempty"`
	LatencyMs   *int32 `json:"latencyMs,omitempty"`
}

// view is the API's call of a row, with its transcript when turns is not nil.
func view(c db.Call, turns []db.CallTurn) Call {
	out := Call{ID: c.ID, CreatedAt: c.CreatedAt, UpdatedAt: &c.UpdatedAt, Direction: c.Direction, From: c.FromNumber,
		To: c.ToNumber, Status: c.Status, AnsweredAt: c.AnsweredAt, EndedAt: c.EndedAt, DurationSeconds: c.DurationSeconds,
		EndReason: c.EndReason, TurnCount: &c.TurnCount}
	if c.CostMicros != nil {
		usd := float64(*c.CostMicros) / 1e6
		out.Cost = &usd
	}
	if len(c.Metadata) > 2 {
		_ = json.Unmarshal(c.Metadata, &out.Metadata)
	}
	if turns != nil {
		out.Transcript = make([]Turn, len(turns))
		for i, t := range turns {
			out.Transcript[i] = Turn{Role: t.Role, Seq: t.Seq, Text: t.Text, StartedAt: t.StartedAt, EndedAt: t.EndedAt,
				Interrupted: t.Interrupted, LatencyMs: t.LatencyMs}
		}
	}
	return out
}
