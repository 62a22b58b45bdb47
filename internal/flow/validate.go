package flow

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Limits Validate enforces.
const (
	MaxSteps          = 100
	MaxTextLength     = 4096 // message text, question, retry message, prompt, transfer message, argument
	MaxKeywords       = 20
	MaxKeywordLength  = 100
	MaxIntentLength   = 500
	MaxBranches       = 20
	MaxBranchValue    = 500
	MaxPatternLength  = 200
	MaxArguments      = 50
	MaxAttemptsLimit  = 10
	MaxNameLength     = 200
	MaxDescription    = 2000
	MaxPriority       = 1000
	MaxTimeoutMinutes = 43200
)

var (
	flowID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	stepID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

const fieldNameRule = "must start with a letter and hold only letters, digits and _ (at most 64)"

// Validate checks flows against the agent's tools; each problem is a FieldError with a JSON
// path like "flows[0].steps[2].config.tool". Checks that need the step graph (reachability,
// loops, runs without waiting) are skipped for a flow whose steps or links are themselves
// invalid, since its graph is not known.
func Validate(flows []v1alpha1.AgentFlow, tools []v1alpha1.AgentTool) []apperror.FieldError {
	v := &validator{tools: map[string]v1alpha1.AgentTool{}}
	for _, t := range tools {
		v.tools[t.Name] = t
	}
	ids, names := map[string]bool{}, map[string]bool{}
	for i := range flows {
		f := &flows[i]
		p := fmt.Sprintf("flows[%d]", i)
		switch {
		case !flowID.MatchString(f.ID):
			v.add(p+".id", "must be 1 to 63 lower-case letters, digits, _ or -, starting with a letter or digit")
		case ids[f.ID]:
			v.add(p+".id", fmt.Sprintf("another flow has the id %q", f.ID))
		}
		ids[f.ID] = true
		switch {
		case strings.TrimSpace(f.Name) == "":
			v.add(p+".name", "is required")
		case utf8.RuneCountInString(f.Name) > MaxNameLength:
			v.add(p+".name", fmt.Sprintf("is longer than %d characters", MaxNameLength))
		case names[f.Name]:
			v.add(p+".name", fmt.Sprintf("another flow is named %q", f.Name))
		}
		names[f.Name] = true
		if utf8.RuneCountInString(f.Description) > MaxDescription {
			v.add(p+".description", fmt.Sprintf("is longer than %d characters", MaxDescription))
		}
		if f.Priority < 0 || f.Priority > MaxPriority {
			v.add(p+".priority", fmt.Sprintf("must be between 0 and %d", MaxPriority))
		}
		if f.TimeoutMinutes != nil && (*f.TimeoutMinutes < 1 || *f.TimeoutMinutes > MaxTimeoutMinutes) {
			v.add(p+".timeoutMinutes", fmt.Sprintf("must be between 1 and %d", MaxTimeoutMinutes))
		}
		v.trigger(p+".trigger", f.Trigger)
		v.steps(p, f)
	}
	return v.errs
}

type validator struct {
	tools map[string]v1alpha1.AgentTool
	errs  []apperror.FieldError
}

func (v *validator) add(path, message string) {
	v.errs = append(v.errs, apperror.FieldError{Path: path, Message: message})
}

// text checks a text field: required or not, and its length.
func (v *validator) text(path, s string, required bool) {
	switch {
	case required && strings.TrimSpace(s) == "":
		v.add(path, "is required")
	case utf8.RuneCountInString(s) > MaxTextLength:
		v.add(path, fmt.Sprintf("is longer than %d characters", MaxTextLength))
	}
}

func (v *validator) field(path, name string, required bool) {
	switch {
	case name == "" && required:
		v.add(path, "is required")
	case name != "" && !fieldName.MatchString(name):
		v.add(path, fieldNameRule)
	}
}

func (v *validator) trigger(p string, t v1alpha1.FlowTrigger) {
	switch t.Type {
	case "keyword":
		switch {
		case len(t.Keywords) == 0:
			v.add(p+".keywords", "a keyword trigger needs at least one keyword")
		case len(t.Keywords) > MaxKeywords:
			v.add(p+".keywords", fmt.Sprintf("has %d keywords (at most %d)", len(t.Keywords), MaxKeywords))
		}
		for k, kw := range t.Keywords {
			switch {
			case fold(kw) == "":
				v.add(fmt.Sprintf("%s.keywords[%d]", p, k), "must not be blank")
			case utf8.RuneCountInString(kw) > MaxKeywordLength:
				v.add(fmt.Sprintf("%s.keywords[%d]", p, k), fmt.Sprintf("is longer than %d characters", MaxKeywordLength))
			}
		}
	case "intent":
		switch {
		case strings.TrimSpace(t.Intent) == "":
			v.add(p+".intent", "an intent trigger needs the intent")
		case utf8.RuneCountInString(t.Intent) > MaxIntentLength:
			v.add(p+".intent", fmt.Sprintf("is longer than %d characters", MaxIntentLength))
		}
	case "always", "manual":
	default:
		v.add(p+".type", "must be one of keyword, intent, always, manual")
	}
}

// graph is a flow's steps as numbered nodes: edges[i] are the steps step i may enter next.
type graph struct {
	edges   [][]int
	collect []bool
}

func (v *validator) steps(p string, f *v1alpha1.AgentFlow) {
	switch {
	case len(f.Steps) == 0:
		v.add(p+".steps", "needs at least one step")
		return
	case len(f.Steps) > MaxSteps:
		v.add(p+".steps", fmt.Sprintf("has %d steps (at most %d)", len(f.Steps), MaxSteps))
		return
	}
	index := map[string]int{}
	graphKnown := true
	for j, s := range f.Steps {
		if _, dup := index[s.ID]; dup {
			v.add(fmt.Sprintf("%s.steps[%d].id", p, j), fmt.Sprintf("another step has the id %q", s.ID))
			graphKnown = false
			continue
		}
		index[s.ID] = j
	}
	g := graph{edges: make([][]int, len(f.Steps)), collect: make([]bool, len(f.Steps))}
	for j, s := range f.Steps {
		sp := fmt.Sprintf("%s.steps[%d]", p, j)
		// link records an edge from step j, or the reference's error.
		link := func(path, target string) {
			if target == "" {
				return
			}
			k, ok := index[target]
			if !ok {
				v.add(path, fmt.Sprintf("no step %q in this flow", target))
				graphKnown = false
				return
			}
			if !slices.Contains(g.edges[j], k) {
				g.edges[j] = append(g.edges[j], k)
			}
		}
		if !stepID.MatchString(s.ID) {
			v.add(sp+".id", "must be 1 to 64 letters, digits, _ or -")
		}
		switch s.Type {
		case StepCondition:
			if s.NextStepID != "" {
				v.add(sp+".nextStepId", "a condition step goes where its branches say: use config.elseStepId instead")
			}
		case StepTransfer:
			if s.NextStepID != "" {
				v.add(sp+".nextStepId", "a transfer step ends the flow: remove nextStepId")
			}
		case StepMessage, StepCollect, StepTool, StepLLM:
			link(sp+".nextStepId", s.NextStepID)
		default:
			v.add(sp+".type", "must be one of message, collect, condition, tool, llm, transfer")
			graphKnown = false
			continue
		}
		g.collect[j] = s.Type == StepCollect
		cfg, cerr := parseConfig(s, true)
		if cerr != nil {
			v.add(joinPath(sp+".config", cerr.path), cerr.message)
			graphKnown = false
			continue
		}
		cp := sp + ".config"
		switch c := cfg.(type) {
		case *MessageConfig:
			v.text(cp+".text", c.Text, true)
		case *CollectConfig:
			v.text(cp+".question", c.Question, true)
			v.field(cp+".field", c.Field, true)
			switch c.Validation {
			case "", ValidateText, ValidateEmail, ValidatePhone, ValidateNumber, ValidateDate, ValidateYesNo:
			default:
				v.add(cp+".validation", "must be one of text, email, phone, number, date, yes_no")
			}
			v.text(cp+".retryMessage", c.RetryMessage, false)
			if c.MaxAttempts != nil && (*c.MaxAttempts < 1 || *c.MaxAttempts > MaxAttemptsLimit) {
				v.add(cp+".maxAttempts", fmt.Sprintf("must be between 1 and %d", MaxAttemptsLimit))
			}
		case *ConditionConfig:
			switch {
			case len(c.Branches) == 0:
				v.add(cp+".branches", "needs at least one branch")
			case len(c.Branches) > MaxBranches:
				v.add(cp+".branches", fmt.Sprintf("has %d branches (at most %d)", len(c.Branches), MaxBranches))
			}
			for k, b := range c.Branches {
				bp := fmt.Sprintf("%s.branches[%d]", cp, k)
				v.branch(bp, b)
				if b.NextStepID == "" {
					v.add(bp+".nextStepId", "is required")
				}
				link(bp+".nextStepId", b.NextStepID)
			}
			link(cp+".elseStepId", c.ElseStepID)
		case *ToolConfig:
			v.tool(cp, c)
			link(cp+".onErrorStepId", c.OnErrorStepID)
		case *LLMConfig:
			v.text(cp+".prompt", c.Prompt, true)
			v.field(cp+".resultField", c.ResultField, false)
		case *TransferConfig:
			v.text(cp+".message", c.Message, false)
		}
	}
	if graphKnown {
		v.graph(p, f, g)
	}
}

func (v *validator) branch(bp string, b Branch) {
	switch {
	case b.Field == "":
		v.add(bp+".field", "is required")
	case !reference.MatchString(b.Field):
		v.add(bp+".field", "must be a field name, or field.key for a key of a tool's JSON result")
	}
	switch b.Op {
	case OpExists, OpNotExists:
		if b.Value != "" {
			v.add(bp+".value", fmt.Sprintf("%s takes no value", b.Op))
		}
	case OpEquals, OpNotEquals, OpContains:
		switch {
		case b.Value == "":
			v.add(bp+".value", "is required")
		case utf8.RuneCountInString(b.Value) > MaxBranchValue:
			v.add(bp+".value", fmt.Sprintf("is longer than %d characters", MaxBranchValue))
		}
	case OpGt, OpLt:
		if _, ok := parseNumber(b.Value); !ok {
			v.add(bp+".value", fmt.Sprintf("%s compares numbers: the value must be a number", b.Op))
		}
	case OpMatches:
		switch {
		case b.Value == "":
			v.add(bp+".value", "is required")
		case utf8.RuneCountInString(b.Value) > MaxPatternLength:
			v.add(bp+".value", fmt.Sprintf("is longer than %d characters", MaxPatternLength))
		default:
			if _, err := regexp.Compile(b.Value); err != nil {
				v.add(bp+".value", "is not a valid regular expression: "+err.Error())
			}
		}
	default:
		v.add(bp+".op", "must be one of equals, not_equals, contains, exists, not_exists, gt, lt, matches")
	}
}

func (v *validator) tool(cp string, c *ToolConfig) {
	v.field(cp+".resultField", c.ResultField, false)
	if len(c.Arguments) > MaxArguments {
		v.add(cp+".arguments", fmt.Sprintf("has %d arguments (at most %d)", len(c.Arguments), MaxArguments))
	}
	keys := make([]string, 0, len(c.Arguments))
	for k := range c.Arguments {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" {
			v.add(cp+".arguments", "an argument name must not be empty")
			continue
		}
		v.text(cp+".arguments."+k, c.Arguments[k], false)
	}
	if c.Tool == "" {
		v.add(cp+".tool", "is required")
		return
	}
	t, ok := v.tools[c.Tool]
	if !ok {
		v.add(cp+".tool", fmt.Sprintf("no tool %q on this agent", c.Tool))
		return
	}
	// The tool's parameters are a JSON Schema: the webhook expects its required arguments, and
	// no others when it says additionalProperties: false. A schema that does not parse is the
	// tool's problem, reported where tools are validated.
	var schema struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if len(t.Parameters.Raw) == 0 || json.Unmarshal(t.Parameters.Raw, &schema) != nil {
		return
	}
	for _, r := range schema.Required {
		if _, ok := c.Arguments[r]; !ok {
			v.add(cp+".arguments", fmt.Sprintf("misses the argument %q the tool requires", r))
		}
	}
	if schema.AdditionalProperties != nil && !*schema.AdditionalProperties {
		for _, k := range keys {
			if _, ok := schema.Properties[k]; !ok && k != "" {
				v.add(cp+".arguments."+k, fmt.Sprintf("tool %q takes no argument %q", c.Tool, k))
			}
		}
	}
}

// graph checks that every step is reached, that every loop waits for the contact, and that no
// run enters more than MaxStepsWithoutWait steps between waits (the runtime would end it).
func (v *validator) graph(p string, f *v1alpha1.AgentFlow, g graph) {
	stepPath := func(j int) string { return fmt.Sprintf("%s.steps[%d]", p, j) }

	reached := make([]bool, len(g.edges))
	queue := []int{0}
	reached[0] = true
	for len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		for _, k := range g.edges[j] {
			if !reached[k] {
				reached[k] = true
				queue = append(queue, k)
			}
		}
	}
	for j, ok := range reached {
		if !ok {
			v.add(stepPath(j), fmt.Sprintf("step %q is never reached from the first step", f.Steps[j].ID))
		}
	}

	spinning := false
	for _, component := range stronglyConnected(g.edges) {
		j := component[0]
		loops := len(component) > 1 || slices.Contains(g.edges[j], j)
		if !loops || slices.ContainsFunc(component, func(k int) bool { return g.collect[k] }) {
			continue
		}
		spinning = true
		ids := make([]string, len(component))
		for n, k := range component {
			ids[n] = fmt.Sprintf("%q", f.Steps[k].ID)
		}
		v.add(stepPath(j), fmt.Sprintf("steps %s loop without a collect step: the flow would never wait for the contact", strings.Join(ids, ", ")))
	}
	if spinning {
		return
	}

	// A run between waits starts at the first step or after a collect's answer, and ends at a
	// collect (which asks) or at the end. Without collect-free loops these paths are acyclic.
	longest := make([]int, len(g.edges))
	var walk func(j int) int
	walk = func(j int) int {
		if longest[j] > 0 {
			return longest[j]
		}
		n := 0
		if !g.collect[j] {
			for _, k := range g.edges[j] {
				n = max(n, walk(k))
			}
		}
		longest[j] = n + 1
		return longest[j]
	}
	starts := []int{0}
	for j, isCollect := range g.collect {
		if isCollect && reached[j] {
			starts = append(starts, g.edges[j]...)
		}
	}
	slices.Sort(starts)
	for _, s := range slices.Compact(starts) {
		if n := walk(s); n > MaxStepsWithoutWait {
			v.add(stepPath(s), fmt.Sprintf("from step %q a run can enter %d steps without waiting for the contact (at most %d): add a collect step or shorten it", f.Steps[s].ID, n, MaxStepsWithoutWait))
			return
		}
	}
}

// stronglyConnected returns the strongly connected components of the graph (Tarjan), each
// sorted, in the order of their first step.
func stronglyConnected(edges [][]int) [][]int {
	n := len(edges)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var components [][]int
	next := 0
	var visit func(j int)
	visit = func(j int) {
		index[j], low[j] = next, next
		next++
		stack = append(stack, j)
		onStack[j] = true
		for _, k := range edges[j] {
			if index[k] < 0 {
				visit(k)
				low[j] = min(low[j], low[k])
			} else if onStack[k] {
				low[j] = min(low[j], index[k])
			}
		}
		if low[j] != index[j] {
			return
		}
		var component []int
		for {
			k := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[k] = false
			component = append(component, k)
			if k == j {
				break
			}
		}
		slices.Sort(component)
		components = append(components, component)
	}
	for j := range edges {
		if index[j] < 0 {
			visit(j)
		}
	}
	slices.SortFunc(components, func(a, b []int) int { return a[0] - b[0] })
	return components
}
