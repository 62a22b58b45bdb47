package flow_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/flow"
)

func agentTools() []v1alpha1.AgentTool {
	return []v1alpha1.AgentTool{{
		ID: "booking", Name: "book_appointment", Description: "Books an appointment.",
		Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type": "object", "properties": {"date": {"type": "string"}, "name": {"type": "string"}}, "required": ["date", "name"], "additionalProperties": false}`)},
		WebhookURL: "https://example.com/book",
	}}
}

// validFlows are flows[0], the booking flow (ask_name, ask_date, book, confirm), and flows[1],
// a support flow (ask_topic, route, summary, handoff).
func validFlows() []v1alpha1.AgentFlow {
	support := v1alpha1.AgentFlow{
		ID: "support", Name: "Support",
		Trigger: v1alpha1.FlowTrigger{Type: "intent", Intent: "the contact needs help"},
		Steps: []v1alpha1.FlowStep{
			step("ask_topic", "collect", `{"question": "Is it about billing?", "field": "billing", "validation": "yes_no", "maxAttempts": 2}`, "route"),
			step("route", "condition", `{"branches": [{"field": "billing", "op": "equals", "value": "yes", "nextStepId": "summary"}], "elseStepId": "handoff"}`, ""),
			step("summary", "llm", `{"prompt": "Summarise the billing question.", "resultField": "summary"}`, "handoff"),
			step("handoff", "transfer", `{"message": "A person will take it from here."}`, ""),
		},
	}
	return []v1alpha1.AgentFlow{*bookingFlow(), support}
}

func setConfig(s *v1alpha1.FlowStep, config string) {
	s.Config = apiextensionsv1.JSON{Raw: []byte(config)}
}

func TestValidateAcceptsValidFlows(t *testing.T) {
	loopWithCollect := v1alpha1.AgentFlow{
		ID: "quiz", Name: "Quiz", Trigger: v1alpha1.FlowTrigger{Type: "always"},
		Steps: []v1alpha1.FlowStep{
			step("intro", "message", `{"text": "Guess the number."}`, "guess"),
			step("guess", "collect", `{"question": "Your guess?", "field": "guess", "validation": "number"}`, "check"),
			step("check", "condition", `{"branches": [{"field": "guess", "op": "lt", "value": "7", "nextStepId": "higher"}, {"field": "guess", "op": "gt", "value": "7", "nextStepId": "guess"}]}`, ""),
			step("higher", "message", `{"text": "Higher!"}`, "guess"),
		},
	}
	longest := *chain(flow.MaxStepsWithoutWait)
	flows := append(validFlows(), loopWithCollect, longest)
	if errs := flow.Validate(flows, agentTools()); len(errs) != 0 {
		t.Fatalf("Validate = %v", errs)
	}
	if errs := flow.Validate(nil, nil); len(errs) != 0 {
		t.Fatalf("Validate(nil) = %v", errs)
	}
}

func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow
		path    string
		message string
	}{
		// flows
		{"duplicate flow id", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[1].ID = "booking"; return f },
			"flows[1].id", `another flow has the id "booking"`},
		{"flow id pattern", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].ID = "Booking!"; return f },
			"flows[0].id", "lower-case"},
		{"duplicate flow name", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[1].Name = "Booking"; return f },
			"flows[1].name", `another flow is named "Booking"`},
		{"blank flow name", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[1].Name = " "; return f },
			"flows[1].name", "is required"},
		{"priority", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].Priority = 1001; return f },
			"flows[0].priority", "between 0 and 1000"},
		{"timeout", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			zero := int32(0)
			f[0].TimeoutMinutes = &zero
			return f
		},
			"flows[0].timeoutMinutes", "between 1 and 43200"},

		// triggers
		{"trigger type", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].Trigger.Type = "regex"; return f },
			"flows[0].trigger.type", "must be one of"},
		{"keyword trigger without keywords", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].Trigger.Keywords = nil; return f },
			"flows[0].trigger.keywords", "at least one keyword"},
		{"blank keyword", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			f[0].Trigger.Keywords = []string{"book", "  "}
			return f
		}, "flows[0].trigger.keywords[1]", "must not be blank"},
		{"21 keywords", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			f[0].Trigger.Keywords = nil
			for i := range 21 {
				f[0].Trigger.Keywords = append(f[0].Trigger.Keywords, fmt.Sprint("k", i))
			}
			return f
		}, "flows[0].trigger.keywords", "at most 20"},
		{"intent trigger without intent", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[1].Trigger.Intent = ""; return f },
			"flows[1].trigger.intent", "needs the intent"},

		// steps
		{"no steps", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].Steps = nil; return f },
			"flows[0].steps", "at least one step"},
		{"101 steps", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0] = *chain(101); return f },
			"flows[0].steps", "at most 100"},
		{"duplicate step id", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			f[0].Steps = append(f[0].Steps, step("book", "message", `{"text": "again"}`, ""))
			return f
		}, "flows[0].steps[4].id", `another step has the id "book"`},
		{"step id pattern", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			f[0].Steps[3].ID = "con firm"
			f[0].Steps[2].NextStepID = "con firm"
			return f
		}, "flows[0].steps[3].id", "letters, digits"},
		{"step type", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].Steps[3].Type = "email"; return f },
			"flows[0].steps[3].type", "must be one of"},
		{"unknown nextStepId", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].Steps[0].NextStepID = "nowhere"; return f },
			"flows[0].steps[0].nextStepId", `no step "nowhere" in this flow`},
		{"condition with nextStepId", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[1].Steps[1].NextStepID = "handoff"; return f },
			"flows[1].steps[1].nextStepId", "use config.elseStepId"},
		{"transfer with nextStepId", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[1].Steps[3].NextStepID = "ask_topic"; return f },
			"flows[1].steps[3].nextStepId", "ends the flow"},

		// configs: strict parsing
		{"unknown config key", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[3], `{"text": "Booked", "txt": "typo"}`)
			return f
		}, "flows[0].steps[3].config", `unknown field "txt"`},
		{"unknown branch key", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "exists", "next": "summary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0]", `unknown field "next"`},
		{"config not an object", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { setConfig(&f[0].Steps[3], `"Booked"`); return f },
			"flows[0].steps[3].config", "must be a JSON object"},
		{"wrong value type", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"question": "Name?", "field": "name", "maxAttempts": "3"}`)
			return f
		}, "flows[0].steps[0].config.maxAttempts", "must be a whole number"},
		{"argument not a string", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"tool": "book_appointment", "arguments": {"date": 20261203, "name": "{{name}}"}}`)
			return f
		}, "flows[0].steps[2].config.arguments.date", "must be a string"},

		// message
		{"message without text", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { setConfig(&f[0].Steps[3], `{}`); return f },
			"flows[0].steps[3].config.text", "is required"},
		{"message too long", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[3], fmt.Sprintf(`{"text": %q}`, strings.Repeat("é", 4097)))
			return f
		}, "flows[0].steps[3].config.text", "longer than 4096"},

		// collect
		{"collect without question", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"field": "name"}`)
			return f
		}, "flows[0].steps[0].config.question", "is required"},
		{"collect without field", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"question": "Name?"}`)
			return f
		}, "flows[0].steps[0].config.field", "is required"},
		{"collect field starting with a digit", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"question": "Name?", "field": "2name"}`)
			return f
		}, "flows[0].steps[0].config.field", "must start with a letter"},
		{"collect field with a dot", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"question": "Name?", "field": "contact.name"}`)
			return f
		}, "flows[0].steps[0].config.field", "must start with a letter"},
		{"collect validation", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"question": "Zip?", "field": "zip", "validation": "zip"}`)
			return f
		}, "flows[0].steps[0].config.validation", "must be one of"},
		{"maxAttempts 0", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"question": "Name?", "field": "name", "maxAttempts": 0}`)
			return f
		}, "flows[0].steps[0].config.maxAttempts", "between 1 and 10"},
		{"maxAttempts 11", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], `{"question": "Name?", "field": "name", "maxAttempts": 11}`)
			return f
		}, "flows[0].steps[0].config.maxAttempts", "between 1 and 10"},
		{"retry message too long", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[0], fmt.Sprintf(`{"question": "Name?", "field": "name", "retryMessage": %q}`, strings.Repeat("a", 4097)))
			return f
		}, "flows[0].steps[0].config.retryMessage", "longer than 4096"},

		// condition
		{"condition without branches", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [], "elseStepId": "summary"}`)
			return f
		}, "flows[1].steps[1].config.branches", "at least one branch"},
		{"branch op", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "is", "value": "yes", "nextStepId": "summary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].op", "must be one of"},
		{"branch field", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "bill ing", "op": "exists", "nextStepId": "summary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].field", "must be a field name"},
		{"branch without nextStepId", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "exists"}], "elseStepId": "summary"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].nextStepId", "is required"},
		{"branch to an unknown step", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "exists", "nextStepId": "sumary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].nextStepId", `no step "sumary"`},
		{"else to an unknown step", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "exists", "nextStepId": "summary"}], "elseStepId": "human"}`)
			return f
		}, "flows[1].steps[1].config.elseStepId", `no step "human"`},
		{"equals without value", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "equals", "nextStepId": "summary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].value", "is required"},
		{"exists with a value", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "exists", "value": "yes", "nextStepId": "summary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].value", "exists takes no value"},
		{"gt with a word", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "gt", "value": "ten", "nextStepId": "summary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].value", "must be a number"},
		{"matches an invalid pattern", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "matches", "value": "(yes", "nextStepId": "summary"}], "elseStepId": "handoff"}`)
			return f
		}, "flows[1].steps[1].config.branches[0].value", "not a valid regular expression"},
		{"matches a long pattern", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], fmt.Sprintf(`{"branches": [{"field": "billing", "op": "matches", "value": %q, "nextStepId": "summary"}], "elseStepId": "handoff"}`, strings.Repeat("a", 201)))
			return f
		}, "flows[1].steps[1].config.branches[0].value", "longer than 200"},

		// tool
		{"tool missing", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"arguments": {"date": "{{date}}", "name": "{{name}}"}}`)
			return f
		}, "flows[0].steps[2].config.tool", "is required"},
		{"unknown tool", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"tool": "book", "arguments": {"date": "{{date}}", "name": "{{name}}"}}`)
			return f
		}, "flows[0].steps[2].config.tool", `no tool "book" on this agent`},
		{"missing required argument", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"tool": "book_appointment", "arguments": {"date": "{{date}}"}}`)
			return f
		}, "flows[0].steps[2].config.arguments", `misses the argument "name"`},
		{"argument the tool does not take", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"tool": "book_appointment", "arguments": {"date": "{{date}}", "name": "{{name}}", "room": "1"}}`)
			return f
		}, "flows[0].steps[2].config.arguments.room", `takes no argument "room"`},
		{"tool resultField", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"tool": "book_appointment", "arguments": {"date": "{{date}}", "name": "{{name}}"}, "resultField": "booking.id"}`)
			return f
		}, "flows[0].steps[2].config.resultField", "must start with a letter"},
		{"onErrorStepId to an unknown step", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"tool": "book_appointment", "arguments": {"date": "{{date}}", "name": "{{name}}"}, "onErrorStepId": "sorry"}`)
			return f
		}, "flows[0].steps[2].config.onErrorStepId", `no step "sorry"`},

		// llm, transfer
		{"llm without prompt", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[2], `{"resultField": "summary"}`)
			return f
		},
			"flows[1].steps[2].config.prompt", "is required"},
		{"llm resultField", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[2], `{"prompt": "Summarise.", "resultField": "_summary"}`)
			return f
		}, "flows[1].steps[2].config.resultField", "must start with a letter"},
		{"transfer message too long", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[3], fmt.Sprintf(`{"message": %q}`, strings.Repeat("a", 4097)))
			return f
		}, "flows[1].steps[3].config.message", "longer than 4096"},

		// the step graph
		{"unreachable step", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			f[0].Steps = append(f[0].Steps, step("orphan", "message", `{"text": "Nobody sees this."}`, ""))
			return f
		}, "flows[0].steps[4]", `step "orphan" is never reached`},
		{"loop of a tool and a message", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow { f[0].Steps[3].NextStepID = "book"; return f },
			"flows[0].steps[2]", `steps "book", "confirm" loop without a collect step`},
		{"condition looping on itself", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[1].Steps[1], `{"branches": [{"field": "billing", "op": "not_exists", "nextStepId": "route"}], "elseStepId": "summary"}`)
			return f
		}, "flows[1].steps[1]", `steps "route" loop without a collect step`},
		{"loop through onErrorStepId", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			setConfig(&f[0].Steps[2], `{"tool": "book_appointment", "arguments": {"date": "{{date}}", "name": "{{name}}"}, "onErrorStepId": "book"}`)
			return f
		}, "flows[0].steps[2]", `steps "book" loop without a collect step`},
		{"run longer than the runtime allows", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			f[0] = *chain(flow.MaxStepsWithoutWait + 1)
			return f
		}, "flows[0].steps[0]", "can enter 51 steps without waiting"},
		{"run after a collect longer than the runtime allows", func(f []v1alpha1.AgentFlow) []v1alpha1.AgentFlow {
			long := chain(flow.MaxStepsWithoutWait + 1)
			f[0].Steps[3].NextStepID = "m0"
			f[0].Steps = append(f[0].Steps, long.Steps...)
			return f
		}, "flows[0].steps[2]", `from step "book" a run can enter 53 steps`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := flow.Validate(tc.mutate(validFlows()), agentTools())
			if len(errs) != 1 || errs[0].Path != tc.path || !strings.Contains(errs[0].Message, tc.message) {
				t.Fatalf("Validate = %v\nwant one error at %s containing %q", errs, tc.path, tc.message)
			}
		})
	}
}

// Problems in several flows are all reported, in order.
func TestValidateReportsEveryProblem(t *testing.T) {
	flows := validFlows()
	flows[0].Trigger.Keywords = nil
	setConfig(&flows[0].Steps[3], `{}`)
	flows[1].Trigger.Intent = ""
	want := []apperror.FieldError{
		{Path: "flows[0].trigger.keywords", Message: "a keyword trigger needs at least one keyword"},
		{Path: "flows[0].steps[3].config.text", Message: "is required"},
		{Path: "flows[1].trigger.intent", Message: "an intent trigger needs the intent"},
	}
	if got := flow.Validate(flows, agentTools()); !reflect.DeepEqual(got, want) {
		t.Fatalf("Validate =\n%v\nwant\n%v", got, want)
	}
}
