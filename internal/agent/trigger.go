package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Trigger enqueues, in an inbound message's own transaction, the execution of the agent that
// answers on its sender (message.InboundHook); the executors are woken when it commits.
type Trigger struct {
	// Reader reads the project's Agents (the informer cache).
	Reader client.Reader
}

// Inbound enqueues the execution when an enabled agent answers m: it holds m's sender, m's
// channel and type are among those it answers, and the conversation is not with a human.
// Whether it is open hours, and what the message says, the execution decides.
func (t *Trigger) Inbound(ctx context.Context, tx pgx.Tx, m db.Message) error {
	if m.ConversationID == nil {
		return nil
	}
	a, err := AnsweringAgent(ctx, t.Reader, m.Project, m.Sender)
	if err != nil || a == nil || !Answers(a, m.Channel, m.MessageType) {
		return err
	}
	q := db.Planned(tx)
	handed, err := q.IsHandedOff(ctx, *m.ConversationID)
	if err != nil || handed {
		return err
	}
	id, err := randid.Prefixed("aex_", 24)
	if err != nil {
		return err
	}
	_, err = q.InsertAgentExecution(ctx, db.InsertAgentExecutionParams{ID: id, Project: m.Project, TestMode: m.TestMode,
		Agent: a.Name, Sender: m.Sender, ConversationID: *m.ConversationID, InboundMessageID: m.ID, CreatedAt: time.Now().UTC(),
		Channel: NotifyChannel})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // already enqueued
	}
	if err != nil {
		return fmt.Errorf("enqueue the execution of agent %s: %w", a.Name, err)
	}
	return nil
}

// AnsweringAgent is the agent that answers on a project's sender: the oldest naming it; nil
// when none does.
func AnsweringAgent(ctx context.Context, r client.Reader, project, sender string) (*v1alpha1.Agent, error) {
	var list v1alpha1.AgentList
	if err := r.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list agents of %s: %w", project, err)
	}
	holder, ok := v1alpha1.SenderHolders(list.Items)[sender]
	if !ok {
		return nil, nil
	}
	for i := range list.Items {
		if list.Items[i].Name == holder {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// Answers says whether an agent answers an inbound message of that channel and type: it is
// enabled, and the channel and type are among its triggers (no channels: every one; no types:
// text only).
func Answers(a *v1alpha1.Agent, channel, messageType string) bool {
	if !a.Spec.Enabled || !a.DeletionTimestamp.IsZero() {
		return false
	}
	if len(a.Spec.TriggerOnChannels) > 0 && !slices.Contains(a.Spec.TriggerOnChannels, v1alpha1.Channel(channel)) {
		return false
	}
	types := a.Spec.TriggerOnMessageTypes
	if len(types) == 0 {
		types = []string{"text"}
	}
	return slices.Contains(types, messageType)
}
