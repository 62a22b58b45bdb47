// Package flow runs an agent's flows: scripted conversations decided step by step, with no I/O.
// The runtime keeps a conversation's State, performs each Action Next returns (sends a text,
// calls a tool, asks the model, hands over to a human), persists the State Next returned, and
// calls Next again with what the action produced, until the action is Wait, End, EndFailed or
// Transfer. Next is deterministic: the same flow, state and input give the same action and
// state, so a worker killed between performing an action and persisting the state decides the
// same action again, with the same Seq, and the runtime (which keys each send by Seq) sends
// nothing twice.
//
// # States
//
// A State is in one of four places:
//   - before step StepID (not Waiting, not Pending): Next(nil) enters it;
//   - Waiting at the collect step StepID: its question was asked and Next expects the
//     contact's message;
//   - Pending at the tool or llm step StepID: its CallTool or Generate was handed to the
//     runtime and Next expects its outcome;
//   - finished (StepID empty): Next(nil) returns End.
//
// # Transitions
//
// Entering a step (the first from Start, then the next one after each action):
//   - message: Send the interpolated text, then before NextStepID. A text that interpolates
//     to blanks is skipped: there is nothing to send.
//   - collect: Ask the interpolated question; Waiting, Attempts 0.
//   - condition: no action; the first branch that holds names the step entered next, else
//     elseStepId; neither: the flow finishes (End).
//   - tool: CallTool with the interpolated arguments; Pending.
//   - llm: Generate with the interpolated prompt; Pending.
//   - transfer: Transfer with the interpolated message (may be ""); finished.
//   - none (an empty StepID): End.
//
// Answering (Waiting, Input.Message set): a valid answer returns Store of the normalised value
// (also set in Vars) and the state moves before the collect's NextStepID. A wrong one returns
// Ask with the retry text and Attempts+1, or EndFailed once Attempts reaches maxAttempts.
// Waiting with no message returns Wait and changes nothing.
//
// Outcomes (Pending): Input.ToolResult OK stores resultField (and its resultField.key
// variables) and enters NextStepID, returning that step's action; not OK enters onErrorStepId,
// or returns EndFailed. Input.Generated stores resultField and returns Send of the text (a blank
// answer is not sent), then before NextStepID. Pending with no input returns the same
// CallTool or Generate again with its original Seq: its outcome was lost, and the runtime
// either replays the one it recorded under that Seq or performs it again.
//
// Every action but Wait consumes a Seq. A state that entered MaxStepsWithoutWait steps since
// it last waited for the contact ends with EndFailed, so a cycle that never asks cannot spin;
// Validate refuses flows where that could happen. A step that disappeared, or whose config no
// longer parses, ends the run with EndFailed too: the flow was edited under it.
//
// Interpolation: {{field}} (spaces inside the braces allowed) is replaced by the variable's
// value, and by "" when no step set it; Validate does not refuse such references, since a
// branch may legitimately skip the step that sets a variable. Values are inserted once and never
// expanded again, so a contact who types {{x}} gets it back literally.
package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// State is a conversation's place in a flow, stored as JSON by the runtime.
type State struct {
	FlowID string `json:"flowId"`
	// StepID is the step entered next, or the one waiting or pending; empty: the flow finished.
	StepID string `json:"stepId"`
	// Waiting: the collect step StepID asked and waits for an answer.
	Waiting bool `json:"waiting"`
	// Attempts counts the wrong answers to it so far.
	Attempts int `json:"attempts"`
	// Pending: the tool or llm step StepID handed its action to the runtime and waits for its
	// outcome.
	Pending bool              `json:"pending,omitempty"`
	Vars    map[string]string `json:"vars"`
	// Seq counts the actions taken so far: the runtime keys each send by it, so a resumed run
	// sends nothing twice.
	Seq int `json:"seq"`
	// StepsSinceWait counts the steps entered since the flow last asked the contact; past
	// MaxStepsWithoutWait the run ends.
	StepsSinceWait int `json:"stepsSinceWait,omitempty"`
}

// MaxStepsWithoutWait bounds the steps one run enters without waiting for the contact.
const MaxStepsWithoutWait = 50

// Kind is what the runtime does for an Action.
type Kind string

const (
	Send      Kind = "send"
	Ask       Kind = "ask" // send the question, then wait
	CallTool  Kind = "tool"
	Generate  Kind = "generate"
	Transfer  Kind = "transfer"
	Store     Kind = "store" // a collected answer: the runtime writes it to the contact
	End       Kind = "end"
	EndFailed Kind = "end_failed"
	Wait      Kind = "wait"
)

// Action is what Next decided.
type Action struct {
	Kind   Kind
	StepID string
	// Seq is the state's Seq when the action was decided (unique within a run of a flow; a
	// Wait shares it with the action after it, since nothing is sent for a Wait).
	Seq int
	// Text is Send/Ask: the text; Generate: the interpolated prompt; Transfer: the message (may
	// be ""); EndFailed: why.
	Text      string
	Tool      string            // CallTool: the tool's name
	Arguments map[string]string // CallTool
	// Field and Value are a Store's.
	Field, Value string
}

// Input is what the runtime brings back to Next: the contact's message (when the state waits),
// or the outcome of the last CallTool/Generate action. At most one is set.
type Input struct {
	Message    *string
	ToolResult *ToolResult
	Generated  *string
}

// ToolResult is the outcome of a CallTool: whether the call succeeded and the response body.
type ToolResult struct {
	OK   bool
	Body string
}

// ErrFlowMismatch: the state belongs to another flow.
var ErrFlowMismatch = errors.New("flow: the state belongs to another flow")

// ErrUnexpectedInput: the input does not fit the state (a message while the flow does not wait
// for one, a tool result while no tool call is pending, more than one input…).
var ErrUnexpectedInput = errors.New("flow: input does not fit the state")

// Step types.
const (
	StepMessage   = "message"
	StepCollect   = "collect"
	StepCondition = "condition"
	StepTool      = "tool"
	StepLLM       = "llm"
	StepTransfer  = "transfer"
)

// MessageConfig is a message step's config.
type MessageConfig struct {
	Text string `json:"text"`
}

// CollectConfig is a collect step's config.
type CollectConfig struct {
	Question     string `json:"question"`
	Field        string `json:"field"`
	Validation   string `json:"validation,omitempty"`
	RetryMessage string `json:"retryMessage,omitempty"`
	MaxAttempts  *int   `json:"maxAttempts,omitempty"`
}

// Answer validations of a collect step.
const (
	ValidateText   = "text"
	ValidateEmail  = "email"
	ValidatePhone  = "phone"
	ValidateNumber = "number"
	ValidateDate   = "date"
	ValidateYesNo  = "yes_no"
)

// DefaultMaxAttempts is a collect step's maxAttempts when unset.
const DefaultMaxAttempts = 3

func (c *CollectConfig) maxAttempts() int {
	if c.MaxAttempts == nil || *c.MaxAttempts < 1 {
		return DefaultMaxAttempts
	}
	return *c.MaxAttempts
}

// ConditionConfig is a condition step's config.
type ConditionConfig struct {
	Branches   []Branch `json:"branches"`
	ElseStepID string   `json:"elseStepId,omitempty"`
}

// Branch is one test of a condition step. Value is literal (never interpolated).
type Branch struct {
	Field      string `json:"field"`
	Op         string `json:"op"`
	Value      string `json:"value,omitempty"`
	NextStepID string `json:"nextStepId"`
}

// Branch operators.
const (
	OpEquals    = "equals"
	OpNotEquals = "not_equals"
	OpContains  = "contains"
	OpExists    = "exists"
	OpNotExists = "not_exists"
	OpGt        = "gt"
	OpLt        = "lt"
	OpMatches   = "matches"
)

// ToolConfig is a tool step's config.
type ToolConfig struct {
	Tool          string            `json:"tool"`
	Arguments     map[string]string `json:"arguments,omitempty"`
	ResultField   string            `json:"resultField,omitempty"`
	OnErrorStepID string            `json:"onErrorStepId,omitempty"`
}

// LLMConfig is an llm step's config.
type LLMConfig struct {
	Prompt      string `json:"prompt"`
	ResultField string `json:"resultField,omitempty"`
}

// TransferConfig is a transfer step's config.
type TransferConfig struct {
	Message string `json:"message,omitempty"`
}

// Start is the state at the flow's first step (Vars empty, Seq 0).
func Start(f *v1alpha1.AgentFlow) State {
	st := State{FlowID: f.ID, Vars: map[string]string{}}
	if len(f.Steps) > 0 {
		st.StepID = f.Steps[0].ID
	}
	return st
}

// Next decides the next action from state st with input in, and returns the state after it
// (see the package doc for the transitions). It never changes st itself. The error is only
// ErrFlowMismatch or ErrUnexpectedInput: problems of the flow end the run with EndFailed.
func Next(f *v1alpha1.AgentFlow, st State, in Input) (Action, State, error) {
	if st.FlowID != f.ID {
		return Action{}, st, fmt.Errorf("%w: state of %q, flow %q", ErrFlowMismatch, st.FlowID, f.ID)
	}
	inputs := 0
	for _, set := range []bool{in.Message != nil, in.ToolResult != nil, in.Generated != nil} {
		if set {
			inputs++
		}
	}
	if inputs > 1 {
		return Action{}, st, fmt.Errorf("%w: more than one input", ErrUnexpectedInput)
	}
	r := &run{flow: f, st: st}
	r.st.Vars = cloneVars(st.Vars)
	switch {
	case st.Waiting:
		if in.ToolResult != nil || in.Generated != nil {
			return Action{}, st, fmt.Errorf("%w: step %q waits for the contact's answer", ErrUnexpectedInput, st.StepID)
		}
		if in.Message == nil {
			return Action{Kind: Wait, StepID: st.StepID, Seq: st.Seq}, st, nil
		}
		a, next := r.answer(*in.Message)
		return a, next, nil
	case st.Pending:
		return r.outcome(in)
	default:
		if inputs > 0 {
			return Action{}, st, fmt.Errorf("%w: step %q expects no input", ErrUnexpectedInput, st.StepID)
		}
		a, next := r.enter(st.StepID)
		return a, next, nil
	}
}

// run is one call of Next: the flow and the state it changes.
type run struct {
	flow *v1alpha1.AgentFlow
	st   State
}

func (r *run) step(id string) (v1alpha1.FlowStep, bool) {
	for _, s := range r.flow.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return v1alpha1.FlowStep{}, false
}

// emit numbers a and returns it with the state after it.
func (r *run) emit(a Action) (Action, State) {
	a.Seq = r.st.Seq
	r.st.Seq++
	return a, r.st
}

// finish ends the run: the state is finished, and a is its last action.
func (r *run) finish(a Action) (Action, State) {
	r.st.StepID, r.st.Waiting, r.st.Pending, r.st.Attempts = "", false, false, 0
	return r.emit(a)
}

func (r *run) fail(stepID, why string) (Action, State) {
	return r.finish(Action{Kind: EndFailed, StepID: stepID, Text: why})
}

// enter runs steps from id until one produces an action.
func (r *run) enter(id string) (Action, State) {
	for {
		if id == "" {
			return r.finish(Action{Kind: End})
		}
		if r.st.StepsSinceWait >= MaxStepsWithoutWait {
			return r.fail(id, fmt.Sprintf("entered %d steps without waiting for the contact", MaxStepsWithoutWait))
		}
		r.st.StepsSinceWait++
		step, ok := r.step(id)
		if !ok {
			return r.fail(id, fmt.Sprintf("step %q does not exist", id))
		}
		cfg, cerr := parseConfig(step, false)
		if cerr != nil {
			return r.fail(id, fmt.Sprintf("step %q: config: %s", id, cerr))
		}
		r.st.StepID, r.st.Waiting, r.st.Pending, r.st.Attempts = id, false, false, 0
		switch c := cfg.(type) {
		case *MessageConfig:
			text := Interpolate(c.Text, r.st.Vars)
			if strings.TrimSpace(text) == "" {
				id = step.NextStepID
				continue
			}
			r.st.StepID = step.NextStepID
			return r.emit(Action{Kind: Send, StepID: id, Text: text})
		case *CollectConfig:
			r.st.Waiting = true
			r.st.StepsSinceWait = 0
			return r.emit(Action{Kind: Ask, StepID: id, Text: Interpolate(c.Question, r.st.Vars)})
		case *ConditionConfig:
			id = c.route(r.st.Vars)
		case *ToolConfig:
			r.st.Pending = true
			return r.emit(toolCall(id, c, r.st.Vars))
		case *LLMConfig:
			r.st.Pending = true
			return r.emit(Action{Kind: Generate, StepID: id, Text: Interpolate(c.Prompt, r.st.Vars)})
		case *TransferConfig:
			return r.finish(Action{Kind: Transfer, StepID: id, Text: Interpolate(c.Message, r.st.Vars)})
		}
	}
}

func toolCall(stepID string, c *ToolConfig, vars map[string]string) Action {
	args := make(map[string]string, len(c.Arguments))
	for k, v := range c.Arguments {
		args[k] = Interpolate(v, vars)
	}
	return Action{Kind: CallTool, StepID: stepID, Tool: c.Tool, Arguments: args}
}

// answer handles the contact's message to the waiting collect step.
func (r *run) answer(msg string) (Action, State) {
	id := r.st.StepID
	step, ok := r.step(id)
	if !ok || step.Type != StepCollect {
		return r.fail(id, fmt.Sprintf("step %q is no longer a collect step", id))
	}
	cfg, cerr := parseConfig(step, false)
	if cerr != nil {
		return r.fail(id, fmt.Sprintf("step %q: config: %s", id, cerr))
	}
	c := cfg.(*CollectConfig)
	if value, ok := NormalizeAnswer(c.Validation, msg); ok {
		r.st.Vars[c.Field] = value
		r.st.StepID, r.st.Waiting, r.st.Attempts = step.NextStepID, false, 0
		return r.emit(Action{Kind: Store, StepID: id, Field: c.Field, Value: value})
	}
	r.st.Attempts++
	if r.st.Attempts >= c.maxAttempts() {
		return r.fail(id, fmt.Sprintf("no valid answer to step %q after %d attempts", id, r.st.Attempts))
	}
	retry := c.RetryMessage
	if retry == "" {
		retry = "Sorry, I didn't get that. " + c.Question
	}
	r.st.StepsSinceWait = 0
	return r.emit(Action{Kind: Ask, StepID: id, Text: Interpolate(retry, r.st.Vars)})
}

// outcome handles what the runtime brings back for the pending tool or llm step.
func (r *run) outcome(in Input) (Action, State, error) {
	id := r.st.StepID
	step, ok := r.step(id)
	if !ok {
		a, st := r.fail(id, fmt.Sprintf("step %q does not exist", id))
		return a, st, nil
	}
	cfg, cerr := parseConfig(step, false)
	if cerr != nil {
		a, st := r.fail(id, fmt.Sprintf("step %q: config: %s", id, cerr))
		return a, st, nil
	}
	switch c := cfg.(type) {
	case *ToolConfig:
		if in.Message != nil || in.Generated != nil {
			return Action{}, r.st, fmt.Errorf("%w: step %q waits for its tool result", ErrUnexpectedInput, id)
		}
		if in.ToolResult == nil {
			a := toolCall(id, c, r.st.Vars)
			a.Seq = r.st.Seq - 1
			return a, r.st, nil
		}
		r.st.Pending = false
		if !in.ToolResult.OK {
			if c.OnErrorStepID == "" {
				a, st := r.fail(id, fmt.Sprintf("tool %q failed", c.Tool))
				return a, st, nil
			}
			a, st := r.enter(c.OnErrorStepID)
			return a, st, nil
		}
		if c.ResultField != "" {
			storeResult(r.st.Vars, c.ResultField, in.ToolResult.Body)
		}
		a, st := r.enter(step.NextStepID)
		return a, st, nil
	case *LLMConfig:
		if in.Message != nil || in.ToolResult != nil {
			return Action{}, r.st, fmt.Errorf("%w: step %q waits for the model's answer", ErrUnexpectedInput, id)
		}
		if in.Generated == nil {
			a := Action{Kind: Generate, StepID: id, Seq: r.st.Seq - 1, Text: Interpolate(c.Prompt, r.st.Vars)}
			return a, r.st, nil
		}
		r.st.Pending = false
		text := *in.Generated
		if c.ResultField != "" {
			r.st.Vars[c.ResultField] = text
		}
		if strings.TrimSpace(text) == "" {
			a, st := r.enter(step.NextStepID)
			return a, st, nil
		}
		r.st.StepID = step.NextStepID
		a, st := r.emit(Action{Kind: Send, StepID: id, Text: text})
		return a, st, nil
	default:
		a, st := r.fail(id, fmt.Sprintf("step %q is no longer a tool or llm step", id))
		return a, st, nil
	}
}

// storeResult sets field to a tool's response body and, when the body is a JSON object, each
// top-level scalar as field.key. The previous result's keys go first, so a step run twice
// leaves no stale field.key from the first run.
func storeResult(vars map[string]string, field, body string) {
	prefix := field + "."
	for k := range vars {
		if strings.HasPrefix(k, prefix) {
			delete(vars, k)
		}
	}
	vars[field] = body
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil {
		return
	}
	for k, v := range obj {
		switch v := v.(type) {
		case string:
			vars[prefix+k] = v
		case json.Number:
			vars[prefix+k] = v.String()
		case bool:
			vars[prefix+k] = strconv.FormatBool(v)
		case nil:
			vars[prefix+k] = ""
		}
	}
}

func cloneVars(vars map[string]string) map[string]string {
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// route is the step a condition goes to: the first branch that holds, else ElseStepID.
func (c *ConditionConfig) route(vars map[string]string) string {
	for _, b := range c.Branches {
		if b.holds(vars) {
			return b.NextStepID
		}
	}
	return c.ElseStepID
}

// holds tests the branch on vars; a missing variable reads as "".
func (b Branch) holds(vars map[string]string) bool {
	v, set := vars[b.Field]
	switch b.Op {
	case OpExists:
		return set && strings.TrimSpace(v) != ""
	case OpNotExists:
		return !set || strings.TrimSpace(v) == ""
	case OpEquals:
		return strings.EqualFold(strings.TrimSpace(v), strings.TrimSpace(b.Value))
	case OpNotEquals:
		return !strings.EqualFold(strings.TrimSpace(v), strings.TrimSpace(b.Value))
	case OpContains:
		return strings.Contains(strings.ToLower(v), strings.ToLower(b.Value))
	case OpGt, OpLt:
		x, okX := parseNumber(v)
		y, okY := parseNumber(b.Value)
		if !okX || !okY {
			return false
		}
		if b.Op == OpGt {
			return x > y
		}
		return x < y
	case OpMatches:
		re, err := regexp.Compile(b.Value)
		return err == nil && re.MatchString(v)
	}
	return false
}

// parseNumber reads a finite decimal number ("NaN" and "Inf" are not numbers a contact means).
func parseNumber(s string) (float64, bool) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

// referencePattern is a variable a flow may read: a field, or field.key of a tool's JSON result.
const referencePattern = `[a-zA-Z][a-zA-Z0-9_]{0,63}(?:\.[a-zA-Z0-9_-]{1,64})?`

var (
	fieldName    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,63}$`)
	reference    = regexp.MustCompile(`^` + referencePattern + `$`)
	placeholders = regexp.MustCompile(`\{\{\s*(` + referencePattern + `)\s*\}\}`)
)

// Interpolate replaces {{field}} by vars[field] ("" when unset), in one pass.
func Interpolate(s string, vars map[string]string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return placeholders.ReplaceAllStringFunc(s, func(m string) string {
		return vars[placeholders.FindStringSubmatch(m)[1]]
	})
}

// NormalizeAnswer checks a contact's answer against a collect validation and returns the value
// to store:
//   - text (or ""): any non-blank message, trimmed;
//   - email: one address, lower-cased;
//   - phone: an international number (a leading + or 00, then 7 to 15 digits, spaces, dashes,
//     dots and parentheses allowed) as + and digits; without the country code a number is
//     ambiguous, so it is refused;
//   - number: an optional sign, digits and an optional decimal point, stored as given;
//   - date: YYYY-MM-DD (or with / or .), "December 3, 2026", "3 December 2026", "Dec 3rd
//     2026", "3 de diciembre de 2026" (English and Spanish month names, case and accents
//     ignored), stored as YYYY-MM-DD; all-numeric day/month forms like 03/12/2026 are refused as
//     ambiguous;
//   - yes_no: yes/y/si/sí → "yes", no/n → "no" (case ignored, surrounding ¡!¿?. dropped).
func NormalizeAnswer(validation, msg string) (string, bool) {
	s := strings.TrimSpace(msg)
	if s == "" {
		return "", false
	}
	switch validation {
	case "", ValidateText:
		return s, true
	case ValidateEmail:
		if len(s) > 254 || !emailAddress.MatchString(s) {
			return "", false
		}
		return strings.ToLower(s), true
	case ValidatePhone:
		return normalizePhone(s)
	case ValidateNumber:
		if decimalNumber.MatchString(s) {
			return s, true
		}
	case ValidateDate:
		return normalizeDate(s)
	case ValidateYesNo:
		switch strings.Trim(fold(s), "¡!¿?.") {
		case "yes", "y", "si":
			return "yes", true
		case "no", "n":
			return "no", true
		}
	}
	return "", false
}

var (
	emailAddress  = regexp.MustCompile(`^[^\s@<>(),;:"\[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$`)
	decimalNumber = regexp.MustCompile(`^[+-]?(?:\d+(?:\.\d+)?|\.\d+)$`)
	isoDate       = regexp.MustCompile(`^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$`)
	dayOfMonth    = regexp.MustCompile(`^(\d{1,2})(?:st|nd|rd|th|º)?$`)
	year          = regexp.MustCompile(`^\d{4}$`)
)

func normalizePhone(s string) (string, bool) {
	var digits strings.Builder
	plus := false
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits.WriteRune(c)
		case c == '+' && i == 0:
			plus = true
		case c == ' ' || c == '-' || c == '(' || c == ')' || c == '.':
		default:
			return "", false
		}
	}
	d := digits.String()
	if !plus {
		var ok bool
		if d, ok = strings.CutPrefix(d, "00"); !ok {
			return "", false
		}
	}
	if len(d) < 7 || len(d) > 15 || d[0] == '0' {
		return "", false
	}
	return "+" + d, true
}

var months = map[string]time.Month{
	"january": time.January, "jan": time.January, "enero": time.January, "ene": time.January,
	"february": time.February, "feb": time.February, "febrero": time.February,
	"march": time.March, "mar": time.March, "marzo": time.March,
	"april": time.April, "apr": time.April, "abril": time.April, "abr": time.April,
	"may": time.May, "mayo": time.May,
	"june": time.June, "jun": time.June, "junio": time.June,
	"july": time.July, "jul": time.July, "julio": time.July,
	"august": time.August, "aug": time.August, "agosto": time.August, "ago": time.August,
	"september": time.September, "sep": time.September, "sept": time.September, "septiembre": time.September, "setiembre": time.September,
	"october": time.October, "oct": time.October, "octubre": time.October,
	"november": time.November, "nov": time.November, "noviembre": time.November,
	"december": time.December, "dec": time.December, "diciembre": time.December, "dic": time.December,
}

func normalizeDate(s string) (string, bool) {
	if m := isoDate.FindStringSubmatch(s); m != nil {
		month, _ := strconv.Atoi(m[2])
		return calendarDate(m[1], time.Month(month), m[3])
	}
	var words []string
	for _, w := range strings.Fields(strings.NewReplacer(",", " ", ".", " ").Replace(fold(s))) {
		if w != "de" && w != "del" && w != "of" && w != "the" {
			words = append(words, w)
		}
	}
	if len(words) != 3 || !year.MatchString(words[2]) {
		return "", false
	}
	if month, ok := months[words[0]]; ok { // December 3, 2026
		if d := dayOfMonth.FindStringSubmatch(words[1]); d != nil {
			return calendarDate(words[2], month, d[1])
		}
	}
	if month, ok := months[words[1]]; ok { // 3 December 2026
		if d := dayOfMonth.FindStringSubmatch(words[0]); d != nil {
			return calendarDate(words[2], month, d[1])
		}
	}
	return "", false
}

// calendarDate formats a date that exists: time.Date would turn 31 April into 1 May.
func calendarDate(y string, month time.Month, d string) (string, bool) {
	yy, _ := strconv.Atoi(y)
	dd, _ := strconv.Atoi(d)
	t := time.Date(yy, month, dd, 0, 0, 0, 0, time.UTC)
	if yy < 1 || month < time.January || month > time.December || t.Day() != dd || t.Month() != month {
		return "", false
	}
	return t.Format(time.DateOnly), true
}

// fold lower-cases s, drops its accents and collapses its spaces, so "  Sí " reads "si".
func fold(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		out = s
	}
	return strings.Join(strings.Fields(strings.ToLower(out)), " ")
}

// Matches says whether a flow's trigger starts it on a conversation's message (whether the flow
// is enabled is Pick's concern): keyword, when the message, trimmed, case- and
// accent-insensitively, equals one of Keywords or starts with one followed by a space (runs of
// spaces count as one); always, on the conversation's first message. intent and manual never
// match here (the model starts intent flows).
func Matches(f *v1alpha1.AgentFlow, text string, first bool) bool {
	switch f.Trigger.Type {
	case "always":
		return first
	case "keyword":
		msg := fold(text)
		if msg == "" {
			return false
		}
		for _, k := range f.Trigger.Keywords {
			kw := fold(k)
			if kw != "" && (msg == kw || strings.HasPrefix(msg, kw+" ")) {
				return true
			}
		}
	}
	return false
}

// Pick returns the enabled flow that starts on the message: highest Priority, then name order
// (then id, so the choice never depends on the list's order); nil when none.
func Pick(flows []v1alpha1.AgentFlow, text string, first bool) *v1alpha1.AgentFlow {
	var best *v1alpha1.AgentFlow
	for i := range flows {
		f := &flows[i]
		if !f.FlowEnabled() || !Matches(f, text, first) {
			continue
		}
		if best == nil || f.Priority > best.Priority ||
			f.Priority == best.Priority && (f.Name < best.Name || f.Name == best.Name && f.ID < best.ID) {
			best = f
		}
	}
	return best
}

// configError is a step config that does not parse: path is under "config" ("" for the config
// itself).
type configError struct {
	path, message string
}

func (e *configError) Error() string {
	if e.path == "" {
		return e.message
	}
	return e.path + ": " + e.message
}

// parseConfig decodes a step's config into its type's struct. Strict (Validate) refuses unknown
// keys; the runtime does not, so a key added by a newer version does not stop a running flow.
func parseConfig(step v1alpha1.FlowStep, strict bool) (any, *configError) {
	raw := bytes.TrimSpace(step.Config.Raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, &configError{message: "must be a JSON object"}
	}
	switch step.Type {
	case StepMessage:
		var c MessageConfig
		return &c, decode(raw, &c, strict, "")
	case StepCollect:
		var c CollectConfig
		return &c, decode(raw, &c, strict, "")
	case StepCondition:
		return parseCondition(raw, strict)
	case StepTool:
		return parseTool(raw, strict)
	case StepLLM:
		var c LLMConfig
		return &c, decode(raw, &c, strict, "")
	case StepTransfer:
		var c TransferConfig
		return &c, decode(raw, &c, strict, "")
	}
	return nil, &configError{message: fmt.Sprintf("no config for step type %q", step.Type)}
}

// parseCondition decodes branches one by one, so an error names its branch.
func parseCondition(raw []byte, strict bool) (any, *configError) {
	var shape struct {
		Branches   []json.RawMessage `json:"branches"`
		ElseStepID string            `json:"elseStepId,omitempty"`
	}
	if err := decode(raw, &shape, strict, ""); err != nil {
		return nil, err
	}
	c := &ConditionConfig{ElseStepID: shape.ElseStepID, Branches: make([]Branch, len(shape.Branches))}
	for i, b := range shape.Branches {
		prefix := fmt.Sprintf("branches[%d]", i)
		if bytes.TrimSpace(b)[0] != '{' {
			return nil, &configError{path: prefix, message: "must be an object"}
		}
		if err := decode(b, &c.Branches[i], strict, prefix); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseTool decodes arguments one by one, so an error names its argument.
func parseTool(raw []byte, strict bool) (any, *configError) {
	var shape struct {
		Tool          string                     `json:"tool"`
		Arguments     map[string]json.RawMessage `json:"arguments,omitempty"`
		ResultField   string                     `json:"resultField,omitempty"`
		OnErrorStepID string                     `json:"onErrorStepId,omitempty"`
	}
	if err := decode(raw, &shape, strict, ""); err != nil {
		return nil, err
	}
	c := &ToolConfig{Tool: shape.Tool, ResultField: shape.ResultField, OnErrorStepID: shape.OnErrorStepID}
	if shape.Arguments != nil {
		c.Arguments = make(map[string]string, len(shape.Arguments))
	}
	keys := make([]string, 0, len(shape.Arguments))
	for k := range shape.Arguments {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var v string
		if json.Unmarshal(shape.Arguments[k], &v) != nil {
			return nil, &configError{path: "arguments." + k, message: "must be a string"}
		}
		c.Arguments[k] = v
	}
	return c, nil
}

func decode(raw []byte, dst any, strict bool, prefix string) *configError {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(dst)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return &configError{path: joinPath(prefix, typeErr.Field), message: "must be " + describe(typeErr.Type)}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &configError{path: prefix, message: "unknown field " + name}
	}
	return &configError{path: prefix, message: "is not valid JSON"}
}

func joinPath(prefix, field string) string {
	if prefix == "" || field == "" {
		return prefix + field
	}
	return prefix + "." + field
}

func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describe(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.Kind().String()
}
