package agent

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Stats sum an agent's finished executions (messaging only: calls are counted as calls).
type Stats struct {
	Invocations, Successes, Errors, Tokens int64
	CostUSD                                float64
	AvgLatencyMs                           *float64
}

// Stats returns the agent's stats in the key's mode, over all its executions.
func (s *Service) Stats(ctx context.Context, project string, testMode bool, agent string) (Stats, error) {
	row, err := db.Planned(s.pool).AgentStats(ctx, db.AgentStatsParams{Project: project, TestMode: testMode, Agent: agent})
	if err != nil {
		return Stats{}, fmt.Errorf("read the stats of agent %s: %w", agent, err)
	}
	st := Stats{Invocations: row.Invocations, Successes: row.Successes, Errors: row.Errors, Tokens: row.Tokens,
		CostUSD: billing.Micros(row.CostMicros).USD()}
	if row.Invocations > 0 {
		avg := row.AvgLatencyMs
		st.AvgLatencyMs = &avg
	}
	return st, nil
}

// CreatedAtAnnotation keeps the time the API created an agent to the microsecond: the resource's
// own creation time is in whole seconds, and lists are ordered by creation.
const CreatedAtAnnotation = "messaging.switchboard.io/created-at"

// CreatedAt is when the agent was created: the API's annotation, else the resource's time.
func CreatedAt(a *v1alpha1.Agent) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, a.Annotations[CreatedAtAnnotation]); err == nil {
		return t.UTC()
	}
	return a.CreationTimestamp.UTC()
}

// UpdatedAt is the last time the agent's resource was written (its managed fields' latest).
func UpdatedAt(a *v1alpha1.Agent) time.Time {
	t := CreatedAt(a)
	for _, f := range a.ManagedFields {
		if f.Time != nil && f.Time.UTC().After(t) {
			t = f.Time.UTC()
		}
	}
	return t
}

// VoiceView is the client's VoiceConfig of v.
func VoiceView(v *v1alpha1.AgentVoice) *Voice {
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	out := &Voice{Enabled: &v.Enabled, Greeting: str(v.Greeting), Greetings: v.Greetings, Interruptible: v.Interruptible,
		Language: str(v.Language), MaxCallDurationMinutes: v.MaxCallDurationMinutes, MaxIdleSeconds: v.MaxIdleSeconds,
		Model: str(v.Model), RecordCalls: &v.RecordCalls, STTModel: str(v.STTModel), STTProvider: str(v.STTProvider),
		TTSProvider: str(v.TTSProvider), TTSVoiceID: str(v.TTSVoiceID), TransferPhoneNumber: str(v.TransferPhoneNumber),
		VoicemailAction: str(v.VoicemailAction), VoicemailMessage: str(v.VoicemailMessage)}
	if sp, err := strconv.ParseFloat(v.VoiceSpeed, 64); err == nil {
		out.VoiceSpeed = &sp
	}
	return out
}
