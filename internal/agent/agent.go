// Package agent runs a project's agents (docs/agents.md): an inbound message on a sender an
// enabled agent answers enqueues an execution in the inbound's own transaction (Trigger); a
// worker claims it (Executor) and runs it (Runtime.Execute): it builds the context from the
// conversation, calls the agent's model (the next one on a retryable failure), runs the tools
// the model asks for, and sends the reply through the send path with the execution's id as
// idempotency key, so a retried run never answers twice. The model APIs are internal/llm's
// adapters.
package agent

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Defaults of an Agent's optional settings.
const (
	DefaultContextWindow = 10
	DefaultTokenBudget   = 20000
	// MaxSteps bounds the model calls of one execution: tools called in a loop stop here.
	MaxSteps = 6
)

// Replier sends an agent's reply in a conversation (message.Service).
type Replier interface {
	Reply(ctx context.Context, project string, testMode bool, conversationID, text, idempotencyKey string,
		metadata map[string]string) (db.Message, error)
}

// Factory makes the client of a model API for one account: kind is the Provider type (openai,
// anthropic, google, mistral), apiKey may be empty (a local OpenAI-compatible server), baseURL
// empty is the provider's public address.
type Factory func(kind v1alpha1.ProviderType, apiKey, baseURL string) (llm.Model, error)

// Runtime runs executions.
type Runtime struct {
	Pool *pgxpool.Pool
	// Reader reads Agents, their Secrets and model Providers (the informer cache).
	Reader  client.Reader
	Replies Replier
	// Models makes model clients; a kind it lacks cannot be called.
	Models Factory
	// InstallationNamespace holds the model Provider of zavu agents.
	InstallationNamespace string
	// AllowProjectEndpoints lets a project's model Provider set baseURL.
	AllowProjectEndpoints bool
	// Prices prices the installation's model (PriceList ModelPrices) and reads balances; nil
	// charges nothing.
	Prices *billing.Prices
	// Tools is the HTTP client of tool webhooks: the deliveries' address guard.
	Tools ToolClient
	// Functions runs the tools of functions (AgentTool.function); nil runs none.
	Functions FunctionTools
	// ToolAddresses are the options Tools was made with: the API refuses a tool URL naming an
	// address Tools would never reach (zero: https only, no private address).
	ToolAddresses delivery.ClientOptions
	// Knowledge retrieves from agents' knowledge bases; nil retrieves nothing.
	Knowledge Retriever
	// Partitions names the messages' partitions a conversation's history is read from (nil:
	// the partitioned table, planned at every read).
	Partitions *partition.Catalog
	Log        logr.Logger
	now        func() time.Time
}

// history is the last n messages of a conversation, newest first, from the partitions of the
// lookback.
func (r *Runtime) history(ctx context.Context, conversationID string, n int) ([]db.RecentConversationMessagesRow, error) {
	now := time.Now()
	since := now.Add(-partition.Lookback)
	return db.InSpan(r.Partitions, r.Pool, "messages", since, now.Add(7*partition.Day), time.Time{}).RecentConversationMessages(ctx,
		db.RecentConversationMessagesParams{ConversationID: &conversationID, MaxRows: int32(n), Since: since})
}

func (r *Runtime) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// Retriever gives an execution the chunks of its agent's knowledge that answer a message.
type Retriever interface {
	Retrieve(ctx context.Context, a *v1alpha1.Agent, testMode bool, query string, k int) ([]knowledge.Passage, error)
}

// ExecuteArgs is the River job an execution had before executions became a queue of their own
// (Executor). Jobs enqueued by an earlier version may still be waiting after an upgrade: Worker
// completes them, and the queue runs their executions.
type ExecuteArgs struct {
	ExecutionID string `json:"executionId"`
}

// Kind names the job kind.
func (ExecuteArgs) Kind() string { return "agent.execute" }

// Worker completes the River jobs of executions an earlier version enqueued (ExecuteArgs).
type Worker struct {
	river.WorkerDefaults[ExecuteArgs]
}

// A run holds its execution for Lease, renewed every LeaseRenewal while it runs; a run that died
// (kill -9, a lost node) lets go within Lease, and the queue claims the execution again. A run
// is bounded by JobTimeout.
const (
	JobTimeout   = 3 * time.Minute
	Lease        = 30 * time.Second
	LeaseRenewal = 10 * time.Second
)

// Work does nothing: the execution is in agent_executions, where the queue claims it.
func (w *Worker) Work(context.Context, *river.Job[ExecuteArgs]) error { return nil }
