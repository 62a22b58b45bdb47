package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/optional"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// The REST API's tools and executions of an agent (docs/agents.md, "Tools and executions over
// the API"). A tool lives in the Agent's spec.tools; its signing secret in the agent's own
// Secret, key tool-<id>, unless the tool names another (secretRef, kubectl's). The times the
// client shows for a tool are kept in an annotation of the Agent, ToolTimesAnnotation.

// ToolTimesAnnotation holds, as JSON, when the REST API created and last changed each tool of
// the agent: {"<id>": {"createdAt", "updatedAt"}}. A tool it does not name (made with kubectl)
// shows the agent's own times.
const ToolTimesAnnotation = "messaging.switchboard.io/tool-times"

// Limits of tools.
const (
	MaxTools = 50
	// MaxToolParameters bounds a tool's JSON Schema, serialized: 50 of them live in the Agent.
	MaxToolParameters = 16 << 10
	// MaxToolSecret bounds a signing secret a caller chooses.
	MaxToolSecret = 256
	// MaxToolRunResponse is how much of a test run's answer is kept.
	MaxToolRunResponse = 4 << 10
)

// ExecutionStatuses are the statuses of a finished execution, the values of the list filter.
var ExecutionStatuses = []string{StatusSuccess, StatusError, StatusFiltered, StatusRateLimited, StatusBalanceInsufficient}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ToolInput is a tool's create or update body (the client's ToolCreateParams and
// ToolUpdateParams): a field left out changes nothing. webhookSecret null (update) makes a new
// secret, shown in that answer only.
type ToolInput struct {
	Name          optional.Value[string]          `json:"name"`
	Description   optional.Value[string]          `json:"description"`
	Parameters    optional.Value[json.RawMessage] `json:"parameters"`
	WebhookURL    optional.Value[string]          `json:"webhookUrl"`
	Enabled       optional.Value[bool]            `json:"enabled"`
	WebhookSecret optional.Value[string]          `json:"webhookSecret"`
}

func (in ToolInput) empty() bool {
	return !in.Name.Set && !in.Description.Set && !in.Parameters.Set && !in.WebhookURL.Set && !in.Enabled.Set && !in.WebhookSecret.Set
}

// Tool is a tool of an agent as the API shows it.
type Tool struct {
	v1alpha1.AgentTool
	AgentID              string
	CreatedAt, UpdatedAt time.Time
	// Secret is the signing secret, only in the answer of the request that set it: a create,
	// or an update that asked for a new one.
	Secret string
}

// ToolRun is a manual run of a tool's webhook (POST …/tools/{id}/test).
type ToolRun struct {
	ID, ToolID string
	CreatedAt  time.Time
	DurationMs int32
	Success    bool
	Error      *string
	Params     json.RawMessage
	Response   *string
	StatusCode *int32
}

// Execution is a finished execution as the API shows it.
type Execution struct {
	ID, AgentID, Status       string
	InputTokens, OutputTokens int64
	LatencyMs                 int32
	CostUSD                   float64
	CreatedAt                 time.Time
	InboundMessageID          string
	ResponseMessageID         *string
	ResponseText              *string
	ErrorCode, ErrorMessage   *string
	KnowledgeChunks           *int32
	// Knowledge lists the chunks retrieval gave the model: [{chunkId, documentId, knowledgeBaseId, score}].
	Knowledge json.RawMessage
	ToolCalls int32
	Steps     json.RawMessage
}

// Tools returns the agent's tools, newest first (then by id); only the enabled or disabled ones
// when enabled is set.
func (s *Service) Tools(a *v1alpha1.Agent, enabled *bool) []Tool {
	var out []Tool
	for _, t := range a.Spec.Tools {
		if enabled == nil || t.ToolEnabled() == *enabled {
			out = append(out, toolOf(a, t))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out
}

// Tool returns the agent's tool id; 404 when the agent has none of that id.
func (s *Service) Tool(a *v1alpha1.Agent, id string) (Tool, error) {
	t, ok := findTool(a, id)
	if !ok {
		return Tool{}, noTool(id)
	}
	return toolOf(a, *t), nil
}

// CreateTool adds a tool to the agent: 400 listing every invalid or missing field (nothing is
// written then). Its signing secret (the one given, or a new one) is written to the agent's
// Secret before the tool exists, and is in the answer.
func (s *Service) CreateTool(ctx context.Context, a *v1alpha1.Agent, in ToolInput) (Tool, error) {
	var t v1alpha1.AgentTool
	errs := in.apply(&t, s.toolAddresses())
	for path, set := range map[string]bool{"name": in.Name.Set, "description": in.Description.Set,
		"parameters": in.Parameters.Set, "webhookUrl": in.WebhookURL.Set} {
		if !set {
			errs = append(errs, apperror.FieldError{Path: path, Message: "is required"})
		}
	}
	secret, _, bad := in.secret()
	errs = append(errs, bad...)
	generated := secret == "" // omitted or null: Switchboard makes one
	errs = append(errs, fits(a, t, "")...)
	if len(errs) > 0 {
		return Tool{}, apperror.InvalidFields(sortFields(errs)...)
	}
	if generated {
		var err error
		if secret, err = newToolSecret(); err != nil {
			return Tool{}, err
		}
	}
	id, err := randid.Name("tool-", 12)
	if err != nil {
		return Tool{}, err
	}
	t.ID = id
	key := v1alpha1.ToolSecretKey(id)
	if err := s.SetSecrets(ctx, a, map[string]string{key: secret}); err != nil {
		return Tool{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	updated, err := s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		if errs := fits(a, t, ""); len(errs) > 0 {
			return apperror.InvalidFields(errs...)
		}
		a.Spec.Tools = append(a.Spec.Tools, t)
		setToolTimes(a, id, &now, now)
		return nil
	})
	if err != nil {
		// The tool was not written: its secret goes too.
		_ = s.dropSecretKey(ctx, a, key)
		return Tool{}, err
	}
	s.waitSecret(ctx, updated, key, secret)
	out := toolOf(updated, t)
	out.Secret = secret
	return out, nil
}

// UpdateTool changes the fields in gives; the rest stay. webhookSecret sets the tool's secret,
// null makes a new one (in the answer); a tool whose secret is another Secret's (secretRef)
// has its secret changed there: 409.
func (s *Service) UpdateTool(ctx context.Context, a *v1alpha1.Agent, id string, in ToolInput) (Tool, error) {
	cur, ok := findTool(a, id)
	if !ok {
		return Tool{}, noTool(id)
	}
	if in.empty() {
		return toolOf(a, *cur), nil
	}
	t := *cur.DeepCopy()
	errs := in.apply(&t, s.toolAddresses())
	secret, generated, bad := in.secret()
	errs = append(append(errs, bad...), fits(a, t, id)...)
	if len(errs) > 0 {
		return Tool{}, apperror.InvalidFields(sortFields(errs)...)
	}
	if in.WebhookSecret.Set && cur.SecretRef != nil {
		return Tool{}, secretElsewhere()
	}
	if generated {
		var err error
		if secret, err = newToolSecret(); err != nil {
			return Tool{}, err
		}
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	updated, err := s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		i := slices.IndexFunc(a.Spec.Tools, func(t v1alpha1.AgentTool) bool { return t.ID == id })
		if i < 0 {
			return noTool(id)
		}
		// Applied again to the tool as it is now: what another writer changed meanwhile stays.
		t := a.Spec.Tools[i]
		errs := in.apply(&t, s.toolAddresses())
		if errs = append(errs, fits(a, t, id)...); len(errs) > 0 {
			return apperror.InvalidFields(sortFields(errs)...)
		}
		a.Spec.Tools[i] = t
		setToolTimes(a, id, nil, now)
		return nil
	})
	if err != nil {
		return Tool{}, err
	}
	if secret != "" {
		key := v1alpha1.ToolSecretKey(id)
		if err := s.SetSecrets(ctx, updated, map[string]string{key: secret}); err != nil {
			return Tool{}, err
		}
		s.waitSecret(ctx, updated, key, secret)
	}
	out, _ := findTool(updated, id)
	view := toolOf(updated, *out)
	if generated {
		view.Secret = secret
	}
	return view, nil
}

// DeleteTool removes the tool from the agent, then its secret and its test runs.
func (s *Service) DeleteTool(ctx context.Context, a *v1alpha1.Agent, id string) error {
	t, ok := findTool(a, id)
	if !ok {
		return noTool(id)
	}
	ownSecret := t.SecretRef == nil
	updated, err := s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		a.Spec.Tools = slices.DeleteFunc(a.Spec.Tools, func(t v1alpha1.AgentTool) bool { return t.ID == id })
		setToolTimes(a, "", nil, time.Time{})
		return nil
	})
	if err != nil {
		return err
	}
	if ownSecret {
		if err := s.dropSecretKey(ctx, updated, v1alpha1.ToolSecretKey(id)); err != nil {
			return err
		}
	}
	if err := db.Planned(s.pool).DeleteToolRuns(ctx, db.DeleteToolRunsParams{Project: a.Namespace, Agent: a.Name, ToolID: id}); err != nil {
		return fmt.Errorf("delete the test runs of tool %s: %w", id, err)
	}
	return nil
}

// RotateToolSecret gives the tool a new signing secret and returns it. The old one signs no
// call from the answer on: this process's reads see the new one before it answers.
func (s *Service) RotateToolSecret(ctx context.Context, a *v1alpha1.Agent, id string) (string, error) {
	t, ok := findTool(a, id)
	if !ok {
		return "", noTool(id)
	}
	if t.SecretRef != nil {
		return "", secretElsewhere()
	}
	secret, err := newToolSecret()
	if err != nil {
		return "", err
	}
	key := v1alpha1.ToolSecretKey(id)
	if err := s.SetSecrets(ctx, a, map[string]string{key: secret}); err != nil {
		return "", err
	}
	s.waitSecret(ctx, a, key, secret)
	return secret, nil
}

// TestTool calls the tool's real webhook with params (an object), as the agent would, and
// records the run. A tool that fails is a run with Success false, not an error.
func (s *Service) TestTool(ctx context.Context, testMode bool, a *v1alpha1.Agent, id string, params optional.Value[json.RawMessage]) (ToolRun, error) {
	t, ok := findTool(a, id)
	if !ok {
		return ToolRun{}, noTool(id)
	}
	switch {
	case !params.Set:
		return ToolRun{}, apperror.InvalidFields(apperror.FieldError{Path: "testParams", Message: "is required"})
	case params.Null || !isObject(params.Value):
		return ToolRun{}, apperror.InvalidFields(apperror.FieldError{Path: "testParams", Message: "must be an object"})
	}
	if s.Runtime == nil {
		return ToolRun{}, errors.New("test tool: this installation runs no tools")
	}
	res := s.Runtime.CallTool(ctx, a, *t, params.Value, "", "")
	runID, err := randid.Prefixed("ttr_", 24)
	if err != nil {
		return ToolRun{}, err
	}
	row := db.AgentToolRun{ID: runID, Project: a.Namespace, TestMode: testMode, Agent: a.Name, ToolID: id,
		Params: params.Value, Success: res.OK, DurationMs: int32(res.Duration.Milliseconds()), CreatedAt: time.Now().UTC()}
	if res.StatusCode != 0 {
		code := int32(res.StatusCode)
		row.StatusCode = &code
	}
	if res.Body != "" {
		body := keepText(res.Body, MaxToolRunResponse)
		row.Response = &body
	}
	if res.Error != "" {
		e := keepText(res.Error, MaxToolRunResponse)
		row.Error = &e
	}
	if err := db.Planned(s.pool).InsertToolRun(ctx, db.InsertToolRunParams{ID: row.ID, Project: row.Project, TestMode: row.TestMode,
		Agent: row.Agent, ToolID: row.ToolID, Params: row.Params, Success: row.Success, StatusCode: row.StatusCode,
		Response: row.Response, Error: row.Error, DurationMs: row.DurationMs, CreatedAt: row.CreatedAt}); err != nil {
		return ToolRun{}, fmt.Errorf("record a test run of tool %s: %w", id, err)
	}
	return toolRunOf(row), nil
}

// ToolRuns returns the tool's latest limit test runs, newest first (both modes: a test run
// calls the project's one webhook whatever the key).
func (s *Service) ToolRuns(ctx context.Context, a *v1alpha1.Agent, id string, limit int) ([]ToolRun, error) {
	if _, ok := findTool(a, id); !ok {
		return nil, noTool(id)
	}
	rows, err := db.Planned(s.pool).ListToolRuns(ctx, db.ListToolRunsParams{Project: a.Namespace, Agent: a.Name, ToolID: id, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list the test runs of tool %s: %w", id, err)
	}
	out := make([]ToolRun, len(rows))
	for i, r := range rows {
		out[i] = toolRunOf(r)
	}
	return out, nil
}

// Executions returns up to limit finished executions of the agent in the key's mode, newest
// first, before (beforeTime, beforeID) when given; status "" is every status, another value
// not among ExecutionStatuses a 400.
func (s *Service) Executions(ctx context.Context, testMode bool, a *v1alpha1.Agent, status string,
	beforeTime *time.Time, beforeID *string, limit int) ([]Execution, error) {
	p := db.ListAgentExecutionsParams{Project: a.Namespace, TestMode: testMode, Agent: a.Name, BeforeTime: beforeTime,
		BeforeID: beforeID, MaxRows: int32(limit)}
	if status != "" {
		if !slices.Contains(ExecutionStatuses, status) {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "status", Message: "must be one of " + strings.Join(ExecutionStatuses, ", ")})
		}
		p.Status = &status
	}
	rows, err := db.Planned(s.pool).ListAgentExecutions(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list the executions of agent %s: %w", a.Name, err)
	}
	out := make([]Execution, len(rows))
	for i, r := range rows {
		out[i] = executionOf(r)
	}
	return out, nil
}

// Execution returns one finished execution of the agent in the key's mode; 404 when there is
// none of that id (an execution not finished yet is not shown).
func (s *Service) Execution(ctx context.Context, testMode bool, a *v1alpha1.Agent, id string) (Execution, error) {
	row, err := db.Planned(s.pool).GetAgentExecution(ctx, db.GetAgentExecutionParams{ID: id, Project: a.Namespace, TestMode: testMode, Agent: a.Name})
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (row.Status == "pending" || row.Status == "running")) {
		return Execution{}, apperror.NotFoundf("No execution %s.", id)
	}
	if err != nil {
		return Execution{}, fmt.Errorf("read execution %s: %w", id, err)
	}
	return executionOf(row), nil
}

// apply sets the fields in gives on t; it returns every field that cannot be.
func (in ToolInput) apply(t *v1alpha1.AgentTool, addresses delivery.ClientOptions) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if v := in.Name; v.Set {
		switch {
		case v.Null:
			bad("name", "must not be null")
		case !toolName.MatchString(v.Value):
			bad("name", "must be 1 to 64 letters, digits, _ or -")
		case v.Value == HandoffTool:
			bad("name", HandoffTool+" is the handoff tool's name")
		default:
			t.Name = v.Value
		}
	}
	if v := in.Description; v.Set {
		switch {
		case v.Null:
			bad("description", "must not be null")
		case strings.TrimSpace(v.Value) == "":
			bad("description", "is required")
		case utf8.RuneCountInString(v.Value) > 1024:
			bad("description", "must be at most 1024 characters")
		default:
			t.Description = v.Value
		}
	}
	if v := in.Parameters; v.Set {
		if v.Null {
			bad("parameters", "must not be null")
		} else if perrs := checkParameters(v.Value); len(perrs) > 0 {
			errs = append(errs, perrs...)
		} else {
			t.Parameters = apiextensionsv1.JSON{Raw: compact(v.Value)}
		}
	}
	if v := in.WebhookURL; v.Set {
		if v.Null {
			bad("webhookUrl", "must not be null")
		} else if msg := checkToolURL(v.Value, addresses); msg != "" {
			bad("webhookUrl", msg)
		} else {
			t.WebhookURL = v.Value
		}
	}
	if v := in.Enabled; v.Set {
		if v.Null {
			bad("enabled", "must not be null")
		} else {
			on := v.Value
			t.Enabled = &on
		}
	}
	return errs
}

// secret reads webhookSecret: the secret given, or generated when null (a new one is wanted).
func (in ToolInput) secret() (secret string, generated bool, errs []apperror.FieldError) {
	v := in.WebhookSecret
	switch {
	case !v.Set:
		return "", false, nil
	case v.Null:
		return "", true, nil
	case v.Value == "":
		return "", false, []apperror.FieldError{{Path: "webhookSecret", Message: "must not be empty (null makes a new one)"}}
	case len(v.Value) > MaxToolSecret:
		return "", false, []apperror.FieldError{{Path: "webhookSecret", Message: fmt.Sprintf("must be at most %d characters", MaxToolSecret)}}
	}
	return v.Value, false, nil
}

// checkParameters checks a tool's JSON Schema has the shape the client's ToolParameters has:
// {type: "object", properties: {<name>: object}, required: [string]}.
func checkParameters(raw json.RawMessage) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil || p == nil {
		return []apperror.FieldError{{Path: "parameters", Message: "must be an object: {type: \"object\", properties, required}"}}
	}
	if len(compact(raw)) > MaxToolParameters {
		bad("parameters", fmt.Sprintf("must be at most %d bytes of JSON", MaxToolParameters))
	}
	var typ string
	if err := json.Unmarshal(p["type"], &typ); err != nil || typ != "object" {
		bad("parameters.type", `must be "object"`)
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(p["properties"], &props); err != nil || props == nil {
		bad("parameters.properties", "must be an object of the arguments' schemas")
	} else {
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !isObject(props[name]) {
				bad("parameters.properties."+name, "must be an object (a JSON Schema)")
			}
		}
	}
	var required []string
	if err := json.Unmarshal(p["required"], &required); err != nil || required == nil {
		bad("parameters.required", "must be an array of strings")
	}
	return errs
}

// checkToolURL says why raw cannot be a tool's webhook URL ("" when it can): https, as the
// deliveries' URL policy takes it, and not an IP address the tool client would refuse. The
// client's guard at connect time stays the protection against names that resolve there.
func checkToolURL(raw string, addresses delivery.ClientOptions) string {
	u, err := addresses.URLPolicy().Check(raw)
	if err != nil {
		var ue *delivery.URLError
		if errors.As(err, &ue) {
			return ue.Reason
		}
		return "must be an absolute https URL"
	}
	if u.Scheme != "https" {
		return "must be https"
	}
	host := u.Hostname()
	ip, err := netip.ParseAddr(host)
	if err != nil && (strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")) {
		ip, err = netip.MustParseAddr("127.0.0.1"), nil
	}
	if err == nil && !addresses.Allows(ip) {
		return "must not name a private, loopback, link-local or reserved address"
	}
	return ""
}

// fits checks t can be among a's tools in place of the one of id ("" for a new tool): its name
// is not another tool's, and a new tool makes at most MaxTools.
func fits(a *v1alpha1.Agent, t v1alpha1.AgentTool, id string) []apperror.FieldError {
	var errs []apperror.FieldError
	for _, other := range a.Spec.Tools {
		if other.ID != id && t.Name != "" && other.Name == t.Name {
			errs = append(errs, apperror.FieldError{Path: "name", Message: fmt.Sprintf("is the name of another tool of this agent (%s)", other.ID)})
		}
	}
	if id == "" && len(a.Spec.Tools) >= MaxTools {
		errs = append(errs, apperror.FieldError{Path: "", Message: fmt.Sprintf("an agent has at most %d tools", MaxTools)})
	}
	return errs
}

func findTool(a *v1alpha1.Agent, id string) (*v1alpha1.AgentTool, bool) {
	for i := range a.Spec.Tools {
		if a.Spec.Tools[i].ID == id {
			return &a.Spec.Tools[i], true
		}
	}
	return nil, false
}

func noTool(id string) error { return apperror.NotFoundf("No tool %s.", id) }

func secretElsewhere() error {
	return apperror.New(apperror.Conflict, "secret_managed_elsewhere",
		"This tool signs with a Secret you manage (spec.tools[].secretRef); change it there.")
}

func newToolSecret() (string, error) { return randid.Prefixed("whsec_", 32) }

// itemTime is when the REST API created and last changed a tool or a flow of an agent.
type itemTime struct {
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// itemTimes reads an annotation of itemTimes by id.
func itemTimes(a *v1alpha1.Agent, annotation string) map[string]itemTime {
	times := map[string]itemTime{}
	if v := a.Annotations[annotation]; v != "" {
		_ = json.Unmarshal([]byte(v), &times) // an annotation edited by hand: the agent's times
	}
	return times
}

// setItemTimes records in annotation that item id ("" for none) was changed at updated (and
// created at created, when given), and forgets the items a no longer has.
func setItemTimes(a *v1alpha1.Agent, annotation, id string, created *time.Time, updated time.Time, has func(id string) bool) {
	times := itemTimes(a, annotation)
	if id != "" {
		tt, ok := times[id]
		if created != nil {
			tt.CreatedAt = *created
		} else if !ok {
			tt.CreatedAt = a.CreationTimestamp.UTC()
		}
		tt.UpdatedAt = updated
		times[id] = tt
	}
	for k := range times {
		if !has(k) {
			delete(times, k)
		}
	}
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	if len(times) == 0 {
		delete(a.Annotations, annotation)
		return
	}
	b, _ := json.Marshal(times)
	a.Annotations[annotation] = string(b)
}

func toolTimes(a *v1alpha1.Agent) map[string]itemTime { return itemTimes(a, ToolTimesAnnotation) }

func setToolTimes(a *v1alpha1.Agent, id string, created *time.Time, updated time.Time) {
	setItemTimes(a, ToolTimesAnnotation, id, created, updated, func(k string) bool { _, ok := findTool(a, k); return ok })
}

func toolOf(a *v1alpha1.Agent, t v1alpha1.AgentTool) Tool {
	out := Tool{AgentTool: t, AgentID: a.Name, CreatedAt: a.CreationTimestamp.UTC(), UpdatedAt: UpdatedAt(a)}
	if tt, ok := toolTimes(a)[t.ID]; ok {
		out.CreatedAt, out.UpdatedAt = tt.CreatedAt.UTC(), tt.UpdatedAt.UTC()
	}
	return out
}

func toolRunOf(r db.AgentToolRun) ToolRun {
	return ToolRun{ID: r.ID, ToolID: r.ToolID, CreatedAt: r.CreatedAt.UTC(), DurationMs: r.DurationMs, Success: r.Success,
		Error: r.Error, Params: r.Params, Response: r.Response, StatusCode: r.StatusCode}
}

func executionOf(r db.AgentExecution) Execution {
	return Execution{ID: r.ID, AgentID: r.Agent, Status: r.Status, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		LatencyMs: r.LatencyMs, CostUSD: billing.Micros(r.CostMicros).USD(), CreatedAt: r.CreatedAt.UTC(),
		InboundMessageID: r.InboundMessageID, ResponseMessageID: r.ResponseMessageID, ResponseText: r.ResponseText,
		ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, KnowledgeChunks: r.KnowledgeChunks, Knowledge: r.Knowledge, ToolCalls: r.ToolCalls,
		Steps: r.Steps}
}

// dropSecretKey removes key from the agent's own Secret, when it is there.
func (s *Service) dropSecretKey(ctx context.Context, a *v1alpha1.Agent, key string) error {
	var secret corev1.Secret
	err := s.live.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.OwnSecretName()}, &secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the secret of agent %s: %w", a.Name, err)
	}
	if _, ok := secret.Data[key]; !ok {
		return nil
	}
	return s.SetSecrets(ctx, a, map[string]string{key: ""})
}

// secretWait bounds how long a write of a tool's secret waits for this process's reads to see
// it; watch events come within milliseconds.
const secretWait = 3 * time.Second

// waitSecret waits until the informer cache (what tool calls read) holds value under key of the
// agent's Secret, so the answer comes when the next call signs with it.
func (s *Service) waitSecret(ctx context.Context, a *v1alpha1.Agent, key, value string) {
	ctx, cancel := context.WithTimeout(ctx, secretWait)
	defer cancel()
	for {
		var secret corev1.Secret
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.OwnSecretName()}, &secret); err == nil &&
			string(secret.Data[key]) == value {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *Service) toolAddresses() delivery.ClientOptions {
	if s.Runtime == nil {
		return delivery.ClientOptions{}
	}
	return s.Runtime.ToolAddresses
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// keepText is s as valid UTF-8 without NUL (what Postgres text holds), at most max bytes.
func keepText(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
