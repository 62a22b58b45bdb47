package agent

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// ToolClient makes the HTTP calls of tool webhooks: the deliveries' client, whose address
// guard is applied at connect time (a tool's host cannot resolve to a private address later).
type ToolClient interface {
	Do(req *http.Request) (*http.Response, error)
}

// FunctionTools runs the tools functions declare (defineTool): the call is a run of the
// function with a tool event, and its return value is the answer.
type FunctionTools interface {
	CallTool(ctx context.Context, a *v1alpha1.Agent, function, tool string, args json.RawMessage, executionID, conversationID string) ToolResult
}

// Limits of a tool call.
const (
	ToolTimeout = 10 * time.Second
	// MaxToolResponse is how much of a tool's answer is read and given to the model.
	MaxToolResponse = 16 << 10
)

// Headers of a tool call. The body is the arguments object the model chose.
const (
	HeaderSignature    = "X-Service-Signature"
	HeaderAgent        = "X-Service-Agent"
	HeaderExecution    = "X-Service-Execution"
	HeaderConversation = "X-Service-Conversation"
)

// ToolResult is one call of a tool.
type ToolResult struct {
	OK         bool
	StatusCode int // 0 when no answer came
	Body       string
	Error      string
	Duration   time.Duration
}

// CallTool POSTs args to the tool's webhook, signed with its secret (hex HMAC-SHA256 of the
// body), and reads at most MaxToolResponse of the answer. A non-2xx answer is a failed call.
func (r *Runtime) CallTool(ctx context.Context, a *v1alpha1.Agent, t v1alpha1.AgentTool, args json.RawMessage,
	executionID, conversationID string) ToolResult {
	start := r.clock()
	res := r.callTool(ctx, a, t, args, executionID, conversationID)
	res.Duration = r.clock().Sub(start)
	return res
}

func (r *Runtime) callTool(ctx context.Context, a *v1alpha1.Agent, t v1alpha1.AgentTool, args json.RawMessage,
	executionID, conversationID string) ToolResult {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if t.Function != "" {
		if r.Functions == nil {
			return ToolResult{Error: "this installation runs no function"}
		}
		ctx, cancel := context.WithTimeout(ctx, ToolTimeout)
		defer cancel()
		return r.Functions.CallTool(ctx, a, t.Function, t.Name, args, executionID, conversationID)
	}
	ref := a.ToolSecretRef(t)
	secret, problem, err := r.secretKey(ctx, a.Namespace, ref.Name, ref.Key)
	if err != nil || problem != "" {
		return ToolResult{Error: "the tool's signing secret cannot be read"}
	}
	ctx, cancel := context.WithTimeout(ctx, ToolTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.WebhookURL, bytes.NewReader(args))
	if err != nil {
		return ToolResult{Error: "the tool's URL cannot be called"}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(args)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderSignature, hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set(HeaderAgent, a.Name)
	if executionID != "" {
		req.Header.Set(HeaderExecution, executionID)
	}
	if conversationID != "" {
		req.Header.Set(HeaderConversation, conversationID)
	}
	if r.Tools == nil {
		return ToolResult{Error: "this installation calls no tool"}
	}
	resp, err := r.Tools.Do(req)
	if err != nil {
		return ToolResult{Error: fmt.Sprintf("the tool could not be reached: %v", redact(err))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxToolResponse))
	res := ToolResult{StatusCode: resp.StatusCode, Body: string(body)}
	switch {
	case err != nil:
		res.Error = "the tool's answer could not be read"
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		res.Error = fmt.Sprintf("the tool answered HTTP %d", resp.StatusCode)
	default:
		res.OK = true
	}
	return res
}

// redact keeps what a transport error says without the URL it carries (the URL may hold a
// token in its query).
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
