package flow_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/flow"
)

func step(id, typ, config, next string) v1alpha1.FlowStep {
	return v1alpha1.FlowStep{ID: id, Type: typ, Config: apiextensionsv1.JSON{Raw: []byte(config)}, NextStepID: next}
}

func bookingFlow() *v1alpha1.AgentFlow {
	return &v1alpha1.AgentFlow{
		ID: "booking", Name: "Booking",
		Trigger: v1alpha1.FlowTrigger{Type: "keyword", Keywords: []string{"book"}},
		Steps: []v1alpha1.FlowStep{
			step("ask_name", "collect", `{"question": "What's your name?", "field": "name"}`, "ask_date"),
			step("ask_date", "collect", `{"question": "Which day, {{name}}?", "field": "date", "validation": "date", "retryMessage": "Please give a date like 2026-12-03."}`, "book"),
			step("book", "tool", `{"tool": "book_appointment", "arguments": {"date": "{{date}}", "name": "{{name}}"}, "resultField": "booking"}`, "confirm"),
			step("confirm", "message", `{"text": "Booked {{date}} for {{name}}: {{booking.confirmation}}"}`, ""),
		},
	}
}

func text(s string) flow.Input { return flow.Input{Message: &s} }

func generated(s string) flow.Input { return flow.Input{Generated: &s} }

func toolResult(ok bool, body string) flow.Input {
	return flow.Input{ToolResult: &flow.ToolResult{OK: ok, Body: body}}
}

// next calls flow.Next and fails the test on an error.
func next(t *testing.T, f *v1alpha1.AgentFlow, st flow.State, in flow.Input) (flow.Action, flow.State) {
	t.Helper()
	a, st, err := flow.Next(f, st, in)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return a, st
}

func wantAction(t *testing.T, got, want flow.Action) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("action\n got %+v\nwant %+v", got, want)
	}
}

// script runs f from Start, feeding inputs[i] to the i-th call of Next, and returns the actions.
func script(t *testing.T, f *v1alpha1.AgentFlow, inputs []flow.Input) ([]flow.Action, flow.State) {
	t.Helper()
	st := flow.Start(f)
	var actions []flow.Action
	for _, in := range inputs {
		var a flow.Action
		a, st = next(t, f, st, in)
		actions = append(actions, a)
	}
	return actions, st
}

var bookingInputs = []flow.Input{
	{},
	{},
	text(" Ada "),
	{},
	text("December 3, 2026"),
	{},
	toolResult(true, `{"confirmation": "X42", "slot": 3, "paid": false, "note": null, "room": {"floor": 2}}`),
	{},
}

func TestBookingFlow(t *testing.T) {
	f := bookingFlow()
	actions, st := script(t, f, bookingInputs)
	want := []flow.Action{
		{Kind: flow.Ask, StepID: "ask_name", Seq: 0, Text: "What's your name?"},
		{Kind: flow.Wait, StepID: "ask_name", Seq: 1},
		{Kind: flow.Store, StepID: "ask_name", Seq: 1, Field: "name", Value: "Ada"},
		{Kind: flow.Ask, StepID: "ask_date", Seq: 2, Text: "Which day, Ada?"},
		{Kind: flow.Store, StepID: "ask_date", Seq: 3, Field: "date", Value: "2026-12-03"},
		{Kind: flow.CallTool, StepID: "book", Seq: 4, Tool: "book_appointment", Arguments: map[string]string{"date": "2026-12-03", "name": "Ada"}},
		{Kind: flow.Send, StepID: "confirm", Seq: 5, Text: "Booked 2026-12-03 for Ada: X42"},
		{Kind: flow.End, Seq: 6},
	}
	if len(actions) != len(want) {
		t.Fatalf("got %d actions, want %d", len(actions), len(want))
	}
	for i := range want {
		wantAction(t, actions[i], want[i])
	}
	wantVars := map[string]string{
		"name": "Ada", "date": "2026-12-03",
		"booking":              `{"confirmation": "X42", "slot": 3, "paid": false, "note": null, "room": {"floor": 2}}`,
		"booking.confirmation": "X42", "booking.slot": "3", "booking.paid": "false", "booking.note": "",
	}
	if !reflect.DeepEqual(st.Vars, wantVars) {
		t.Fatalf("vars\n got %v\nwant %v", st.Vars, wantVars)
	}
	if st.StepID != "" || st.Waiting || st.Pending || st.Seq != 7 {
		t.Fatalf("final state %+v, want finished at Seq 7", st)
	}
}

func TestStartAndStates(t *testing.T) {
	f := bookingFlow()
	st := flow.Start(f)
	if st.FlowID != "booking" || st.StepID != "ask_name" || st.Seq != 0 || st.Waiting || len(st.Vars) != 0 || st.Vars == nil {
		t.Fatalf("Start = %+v", st)
	}
	_, asked := next(t, f, st, flow.Input{})
	if !asked.Waiting || asked.StepID != "ask_name" || asked.Seq != 1 {
		t.Fatalf("after Ask: %+v", asked)
	}
	a, waited := next(t, f, asked, flow.Input{})
	if a.Kind != flow.Wait || !reflect.DeepEqual(waited, asked) {
		t.Fatalf("Wait changed the state: %+v → %+v", asked, waited)
	}
	_, stored := next(t, f, asked, text("Ada"))
	if stored.Waiting || stored.StepID != "ask_date" || stored.Attempts != 0 {
		t.Fatalf("after Store: %+v, want before ask_date", stored)
	}
	// Next never changes the state it is given.
	if len(asked.Vars) != 0 {
		t.Fatalf("Next wrote into its argument's vars: %v", asked.Vars)
	}
}

func TestWrongDateTwiceThenRight(t *testing.T) {
	f := bookingFlow()
	_, st := script(t, f, []flow.Input{{}, text("Ada"), {}})
	retry := "Please give a date like 2026-12-03."
	for i, answer := range []string{"tomorrow", "03/12/2026"} {
		var a flow.Action
		a, st = next(t, f, st, text(answer))
		wantAction(t, a, flow.Action{Kind: flow.Ask, StepID: "ask_date", Seq: 3 + i, Text: retry})
		if !st.Waiting || st.Attempts != i+1 {
			t.Fatalf("after %q: %+v, want waiting with %d attempts", answer, st, i+1)
		}
	}
	a, st := next(t, f, st, text("3 December 2026"))
	wantAction(t, a, flow.Action{Kind: flow.Store, StepID: "ask_date", Seq: 5, Field: "date", Value: "2026-12-03"})
	if st.Attempts != 0 || st.Waiting {
		t.Fatalf("after the right answer: %+v", st)
	}
}

func TestMaxAttemptsExhausted(t *testing.T) {
	f := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
		step("email", "collect", `{"question": "What's your email?", "field": "email", "validation": "email", "maxAttempts": 2}`, "thanks"),
		step("thanks", "message", `{"text": "Thanks"}`, ""),
	}}
	actions, st := script(t, f, []flow.Input{{}, text("nope"), text("still nope"), {}})
	wantAction(t, actions[1], flow.Action{Kind: flow.Ask, StepID: "email", Seq: 1, Text: "Sorry, I didn't get that. What's your email?"})
	if actions[2].Kind != flow.EndFailed || actions[2].StepID != "email" || !strings.Contains(actions[2].Text, "2 attempts") {
		t.Fatalf("third action %+v, want EndFailed after 2 attempts", actions[2])
	}
	wantAction(t, actions[3], flow.Action{Kind: flow.End, Seq: 3})
	if _, ok := st.Vars["email"]; ok {
		t.Fatal("a wrong answer was stored")
	}
}

func TestDefaultMaxAttemptsIsThree(t *testing.T) {
	f := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
		step("n", "collect", `{"question": "How many?", "field": "n", "validation": "number"}`, ""),
	}}
	actions, _ := script(t, f, []flow.Input{{}, text("a"), text("b"), text("c")})
	kinds := []flow.Kind{actions[1].Kind, actions[2].Kind, actions[3].Kind}
	if !reflect.DeepEqual(kinds, []flow.Kind{flow.Ask, flow.Ask, flow.EndFailed}) {
		t.Fatalf("kinds %v", kinds)
	}
}

func TestConditionOps(t *testing.T) {
	tests := []struct {
		op, value string
		vars      map[string]string
		want      string
	}{
		{"equals", "yes", map[string]string{"answer": " YES "}, "matched"},
		{"equals", "yes", map[string]string{"answer": "yess"}, "else"},
		{"equals", "yes", nil, "else"},
		{"not_equals", "yes", map[string]string{"answer": "no"}, "matched"},
		{"not_equals", "yes", map[string]string{"answer": "Yes"}, "else"},
		{"not_equals", "yes", nil, "matched"},
		{"contains", "Book", map[string]string{"answer": "I want to BOOK a table"}, "matched"},
		{"contains", "book", map[string]string{"answer": "a table"}, "else"},
		{"exists", "", map[string]string{"answer": "x"}, "matched"},
		{"exists", "", map[string]string{"answer": "  "}, "else"},
		{"exists", "", nil, "else"},
		{"not_exists", "", nil, "matched"},
		{"not_exists", "", map[string]string{"answer": "x"}, "else"},
		{"gt", "9", map[string]string{"answer": "10"}, "matched"}, // numeric, not "10" < "9"
		{"gt", "10", map[string]string{"answer": "10"}, "else"},
		{"gt", "1", map[string]string{"answer": "ten"}, "else"},
		{"gt", "1", map[string]string{"answer": "NaN"}, "else"},
		{"lt", "4", map[string]string{"answer": "3.5"}, "matched"},
		{"lt", "4", map[string]string{"answer": "-5"}, "matched"},
		{"lt", "4", map[string]string{"answer": "4"}, "else"},
		{"lt", "4", nil, "else"},
		{"matches", `^\d{3}$`, map[string]string{"answer": "123"}, "matched"},
		{"matches", `^\d{3}$`, map[string]string{"answer": "12a"}, "else"},
		{"matches", `^abc$`, map[string]string{"answer": "ABC"}, "else"}, // case-sensitive unless (?i)
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %q %v", tc.op, tc.value, tc.vars), func(t *testing.T) {
			f := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
				step("check", "condition", fmt.Sprintf(`{"branches": [{"field": "answer", "op": %q, "value": %q, "nextStepId": "matched"}], "elseStepId": "else"}`, tc.op, tc.value), ""),
				step("matched", "message", `{"text": "matched"}`, ""),
				step("else", "message", `{"text": "else"}`, ""),
			}}
			st := flow.Start(f)
			for k, v := range tc.vars {
				st.Vars[k] = v
			}
			a, _ := next(t, f, st, flow.Input{})
			if a.Kind != flow.Send || a.Text != tc.want || a.StepID != tc.want {
				t.Fatalf("got %+v, want Send %q", a, tc.want)
			}
		})
	}
}

func TestConditionFirstBranchWinsAndNoElseEnds(t *testing.T) {
	f := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
		step("check", "condition", `{"branches": [
			{"field": "booking.status", "op": "equals", "value": "full", "nextStepId": "full"},
			{"field": "booking.status", "op": "exists", "nextStepId": "first"},
			{"field": "booking.status", "op": "contains", "value": "o", "nextStepId": "second"}]}`, ""),
		step("full", "message", `{"text": "full"}`, ""),
		step("first", "message", `{"text": "first"}`, ""),
		step("second", "message", `{"text": "second"}`, ""),
	}}
	st := flow.Start(f)
	st.Vars["booking.status"] = "ok"
	if a, _ := next(t, f, st, flow.Input{}); a.Text != "first" {
		t.Fatalf("got %+v, want the first branch that holds", a)
	}
	a, after := next(t, f, flow.Start(f), flow.Input{})
	wantAction(t, a, flow.Action{Kind: flow.End, Seq: 0})
	if after.StepID != "" {
		t.Fatalf("state after End: %+v", after)
	}
}

func TestToolFailure(t *testing.T) {
	steps := func(onError string) []v1alpha1.FlowStep {
		cfg := `{"tool": "lookup", "resultField": "order"}`
		if onError != "" {
			cfg = `{"tool": "lookup", "resultField": "order", "onErrorStepId": "sorry"}`
		}
		return []v1alpha1.FlowStep{
			step("lookup", "tool", cfg, "done"),
			step("done", "message", `{"text": "done"}`, ""),
			step("sorry", "message", `{"text": "Sorry, the lookup failed."}`, ""),
		}
	}
	t.Run("onErrorStepId", func(t *testing.T) {
		f := &v1alpha1.AgentFlow{ID: "f", Steps: steps("sorry")}
		actions, st := script(t, f, []flow.Input{{}, toolResult(false, `{"error": "down"}`), {}})
		wantAction(t, actions[0], flow.Action{Kind: flow.CallTool, StepID: "lookup", Seq: 0, Tool: "lookup", Arguments: map[string]string{}})
		wantAction(t, actions[1], flow.Action{Kind: flow.Send, StepID: "sorry", Seq: 1, Text: "Sorry, the lookup failed."})
		wantAction(t, actions[2], flow.Action{Kind: flow.End, Seq: 2})
		if len(st.Vars) != 0 {
			t.Fatalf("a failed call stored %v", st.Vars)
		}
	})
	t.Run("no onErrorStepId", func(t *testing.T) {
		f := &v1alpha1.AgentFlow{ID: "f", Steps: steps("")}
		actions, _ := script(t, f, []flow.Input{{}, toolResult(false, "")})
		if a := actions[1]; a.Kind != flow.EndFailed || a.StepID != "lookup" || a.Seq != 1 || !strings.Contains(a.Text, `"lookup"`) {
			t.Fatalf("got %+v, want EndFailed naming the tool", a)
		}
	})
	t.Run("a rerun drops the previous result's keys", func(t *testing.T) {
		f := &v1alpha1.AgentFlow{ID: "f", Steps: steps("")}
		st := flow.Start(f)
		st.Vars["order.stale"] = "old"
		st.Vars["orders"] = "kept"
		_, st = next(t, f, st, flow.Input{})
		_, st = next(t, f, st, toolResult(true, "not json"))
		want := map[string]string{"order": "not json", "orders": "kept"}
		if !reflect.DeepEqual(st.Vars, want) {
			t.Fatalf("vars %v, want %v", st.Vars, want)
		}
	})
}

func TestLLMStep(t *testing.T) {
	f := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
		step("sum", "llm", `{"prompt": "Summarise the booking of {{name}} in one sentence.", "resultField": "summary"}`, "bye"),
		step("bye", "message", `{"text": "Bye"}`, ""),
	}}
	st := flow.Start(f)
	st.Vars["name"] = "Ada"
	a, st := next(t, f, st, flow.Input{})
	wantAction(t, a, flow.Action{Kind: flow.Generate, StepID: "sum", Seq: 0, Text: "Summarise the booking of Ada in one sentence."})
	if !st.Pending {
		t.Fatalf("state after Generate: %+v, want pending", st)
	}
	a, st = next(t, f, st, generated("You are booked for Thursday."))
	wantAction(t, a, flow.Action{Kind: flow.Send, StepID: "sum", Seq: 1, Text: "You are booked for Thursday."})
	if st.Vars["summary"] != "You are booked for Thursday." || st.StepID != "bye" || st.Pending {
		t.Fatalf("state after Send: %+v", st)
	}

	// A blank answer is not sent: the flow goes on.
	_, st = next(t, f, flow.Start(f), flow.Input{})
	a, _ = next(t, f, st, generated("  "))
	wantAction(t, a, flow.Action{Kind: flow.Send, StepID: "bye", Seq: 1, Text: "Bye"})
}

func TestTransfer(t *testing.T) {
	f := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
		step("bye", "message", `{"text": "One moment, {{name}}."}`, "human"),
		step("human", "transfer", `{"message": "A person will take it from here."}`, ""),
	}}
	actions, st := script(t, f, []flow.Input{{}, {}, {}})
	wantAction(t, actions[0], flow.Action{Kind: flow.Send, StepID: "bye", Seq: 0, Text: "One moment, ."})
	wantAction(t, actions[1], flow.Action{Kind: flow.Transfer, StepID: "human", Seq: 1, Text: "A person will take it from here."})
	wantAction(t, actions[2], flow.Action{Kind: flow.End, Seq: 2})
	if st.StepID != "" {
		t.Fatalf("state after Transfer: %+v", st)
	}

	silent := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{step("human", "transfer", ``, "")}}
	a, _ := next(t, silent, flow.Start(silent), flow.Input{})
	wantAction(t, a, flow.Action{Kind: flow.Transfer, StepID: "human", Seq: 0})
}

func TestSeqAndDeterminism(t *testing.T) {
	first, _ := script(t, bookingFlow(), bookingInputs)
	second, _ := script(t, bookingFlow(), bookingInputs)
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("same inputs, different actions:\n%+v\n%+v", first, second)
	}
	seen := map[int]bool{}
	last := -1
	for _, a := range first {
		if a.Kind == flow.Wait {
			continue
		}
		if seen[a.Seq] || a.Seq != last+1 {
			t.Fatalf("action %+v: Seq after %d", a, last)
		}
		seen[a.Seq] = true
		last = a.Seq
	}

	// A state handed to Next twice decides the same action twice: a run killed before
	// persisting the state repeats it under the same Seq.
	f := bookingFlow()
	_, st := script(t, f, bookingInputs[:5])
	a1, st1 := next(t, f, st, flow.Input{})
	a2, st2 := next(t, f, st, flow.Input{})
	if !reflect.DeepEqual(a1, a2) || !reflect.DeepEqual(st1, st2) {
		t.Fatalf("Next is not deterministic: %+v / %+v", a1, a2)
	}
}

func TestResumeFromJSON(t *testing.T) {
	f := bookingFlow()
	roundTrip := func(st flow.State) flow.State {
		t.Helper()
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var out flow.State
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	// Waiting for the date: the resumed state takes the answer as the live one does.
	_, st := script(t, f, bookingInputs[:4])
	if !st.Waiting || st.StepID != "ask_date" {
		t.Fatalf("not waiting for the date: %+v", st)
	}
	resumed := roundTrip(st)
	if !reflect.DeepEqual(resumed, st) {
		t.Fatalf("round trip\n got %+v\nwant %+v", resumed, st)
	}
	live, _ := next(t, f, st, text("2026-12-03"))
	again, _ := next(t, f, resumed, text("2026-12-03"))
	if !reflect.DeepEqual(live, again) {
		t.Fatalf("resumed %+v, live %+v", again, live)
	}

	// The tool call was handed out and the worker died before the result: the call is
	// decided again with its original Seq.
	actions, pending := script(t, f, bookingInputs[:6])
	call := actions[5]
	redo, same := next(t, f, roundTrip(pending), flow.Input{})
	if !reflect.DeepEqual(redo, call) || same.Seq != pending.Seq || !same.Pending {
		t.Fatalf("re-decided %+v (state %+v), want %+v", redo, same, call)
	}

	// vars may come back null from an older row.
	var bare flow.State
	if err := json.Unmarshal([]byte(`{"flowId": "booking", "stepId": "confirm", "seq": 9}`), &bare); err != nil {
		t.Fatal(err)
	}
	a, _ := next(t, f, bare, flow.Input{})
	wantAction(t, a, flow.Action{Kind: flow.Send, StepID: "confirm", Seq: 9, Text: "Booked  for : "})
}

func TestRunawayLoopsEnd(t *testing.T) {
	messages := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
		step("a", "message", `{"text": "a"}`, "b"),
		step("b", "message", `{"text": "b"}`, "a"),
	}}
	st := flow.Start(messages)
	sends := 0
	for {
		a, next2 := next(t, messages, st, flow.Input{})
		st = next2
		if a.Kind == flow.Send {
			sends++
			continue
		}
		if a.Kind != flow.EndFailed {
			t.Fatalf("got %+v, want EndFailed", a)
		}
		break
	}
	if sends != flow.MaxStepsWithoutWait {
		t.Fatalf("%d sends before EndFailed, want %d", sends, flow.MaxStepsWithoutWait)
	}

	// Conditions take no action, so the bound must hold within one call.
	conditions := &v1alpha1.AgentFlow{ID: "f", Steps: []v1alpha1.FlowStep{
		step("a", "condition", `{"branches": [{"field": "x", "op": "exists", "nextStepId": "a"}], "elseStepId": "b"}`, ""),
		step("b", "condition", `{"branches": [{"field": "x", "op": "exists", "nextStepId": "b"}], "elseStepId": "a"}`, ""),
	}}
	if a, _ := next(t, conditions, flow.Start(conditions), flow.Input{}); a.Kind != flow.EndFailed {
		t.Fatalf("got %+v, want EndFailed", a)
	}
}

func TestLongestValidRunCompletes(t *testing.T) {
	f := chain(flow.MaxStepsWithoutWait)
	st := flow.Start(f)
	for i := 0; ; i++ {
		var a flow.Action
		a, st = next(t, f, st, flow.Input{})
		if a.Kind == flow.End {
			if i != flow.MaxStepsWithoutWait {
				t.Fatalf("End after %d sends", i)
			}
			return
		}
		if a.Kind != flow.Send {
			t.Fatalf("action %d: %+v", i, a)
		}
	}
}

// chain is a flow of n message steps, one after the other.
func chain(n int) *v1alpha1.AgentFlow {
	f := &v1alpha1.AgentFlow{ID: "chain", Name: "Chain", Trigger: v1alpha1.FlowTrigger{Type: "manual"}}
	for i := range n {
		nextID := ""
		if i < n-1 {
			nextID = fmt.Sprintf("m%d", i+1)
		}
		f.Steps = append(f.Steps, step(fmt.Sprintf("m%d", i), "message", `{"text": "hi"}`, nextID))
	}
	return f
}

func TestNextRefusesInputThatDoesNotFit(t *testing.T) {
	f := bookingFlow()
	start := flow.Start(f)
	_, waiting := next(t, f, start, flow.Input{})
	_, pending := script(t, f, bookingInputs[:6])
	msg := "hi"
	tests := []struct {
		name string
		st   flow.State
		in   flow.Input
		want error
	}{
		{"message before the question", start, text("hi"), flow.ErrUnexpectedInput},
		{"tool result while waiting", waiting, toolResult(true, ""), flow.ErrUnexpectedInput},
		{"message while the tool runs", pending, text("hi"), flow.ErrUnexpectedInput},
		{"generated text for a tool", pending, generated("x"), flow.ErrUnexpectedInput},
		{"two inputs", waiting, flow.Input{Message: &msg, Generated: &msg}, flow.ErrUnexpectedInput},
		{"another flow's state", flow.State{FlowID: "other", StepID: "ask_name"}, flow.Input{}, flow.ErrFlowMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := flow.Next(f, tc.st, tc.in); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestEditedFlowEndsTheRun(t *testing.T) {
	f := bookingFlow()
	_, st := script(t, f, bookingInputs[:4]) // waiting at ask_date
	edited := bookingFlow()
	edited.Steps = append(edited.Steps[:1], edited.Steps[2:]...)
	edited.Steps[0].NextStepID = "book"
	a, after := next(t, edited, st, text("2026-12-03"))
	if a.Kind != flow.EndFailed || a.StepID != "ask_date" || after.StepID != "" {
		t.Fatalf("got %+v (state %+v), want EndFailed", a, after)
	}
}

func TestNormalizeAnswer(t *testing.T) {
	tests := []struct {
		validation, in, want string
		ok                   bool
	}{
		{"", "  hello there ", "hello there", true},
		{"text", "   ", "", false},
		{"email", " Ada@Example.COM ", "ada@example.com", true},
		{"email", "ada@example", "", false},
		{"email", "Ada <ada@example.com>", "", false},
		{"email", "not an email", "", false},
		{"phone", "+1 (555) 123-4567", "+15551234567", true},
		{"phone", "0044 20 7946 0958", "+442079460958", true},
		{"phone", "+34.612.345.678", "+34612345678", true},
		{"phone", "555-1234", "", false},
		{"phone", "+1 555 CALL", "", false},
		{"phone", "+0 555 1234", "", false},
		{"phone", "+1234567890123456", "", false},
		{"phone", "1+5551234567", "", false},
		{"number", " 42 ", "42", true},
		{"number", "-3.50", "-3.50", true},
		{"number", "1e3", "", false},
		{"number", "3,5", "", false},
		{"date", "2026-12-03", "2026-12-03", true},
		{"date", "2026/12/3", "2026-12-03", true},
		{"date", "December 3, 2026", "2026-12-03", true},
		{"date", "3 December 2026", "2026-12-03", true},
		{"date", "Dec. 3rd, 2026", "2026-12-03", true},
		{"date", "the 3rd of December 2026", "2026-12-03", true},
		{"date", "3 de Diciembre de 2026", "2026-12-03", true},
		{"date", "1 SEPT 2026", "2026-09-01", true},
		{"date", "03/12/2026", "", false},
		{"date", "2026-02-30", "", false},
		{"date", "February 29, 2026", "", false},
		{"date", "February 29, 2028", "2028-02-29", true},
		{"date", "December 2026", "", false},
		{"date", "tomorrow", "", false},
		{"yes_no", "Sí", "yes", true},
		{"yes_no", " Y ", "yes", true},
		{"yes_no", "yes!", "yes", true},
		{"yes_no", "¡si!", "yes", true},
		{"yes_no", "No.", "no", true},
		{"yes_no", "n", "no", true},
		{"yes_no", "nope", "", false},
		{"zip", "12345", "", false},
	}
	for _, tc := range tests {
		got, ok := flow.NormalizeAnswer(tc.validation, tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NormalizeAnswer(%q, %q) = %q, %v; want %q, %v", tc.validation, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestInterpolate(t *testing.T) {
	vars := map[string]string{"name": "Ada", "booking.id": "X1", "trick": "{{secret}}", "secret": "s3cr3t"}
	tests := map[string]string{
		"Hi {{name}}!":               "Hi Ada!",
		"Hi {{ name }}!":             "Hi Ada!",
		"{{booking.id}}/{{missing}}": "X1/",
		"{{trick}}":                  "{{secret}}",
		"{{ }} {{1x}} {{name":        "{{ }} {{1x}} {{name",
		"no braces":                  "no braces",
	}
	for in, want := range tests {
		if got := flow.Interpolate(in, vars); got != want {
			t.Errorf("Interpolate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatches(t *testing.T) {
	keyword := &v1alpha1.AgentFlow{ID: "k", Trigger: v1alpha1.FlowTrigger{Type: "keyword", Keywords: []string{"Reservar", "book now", " "}}}
	tests := []struct {
		f     *v1alpha1.AgentFlow
		text  string
		first bool
		want  bool
	}{
		{keyword, "reservar", false, true},
		{keyword, "  RESERVÁR ", false, true},
		{keyword, "reservar una mesa", false, true},
		{keyword, "reservarla", false, false},
		{keyword, "quiero reservar", false, false},
		{keyword, "Book   now\nplease", false, true},
		{keyword, "book", false, false},
		{keyword, "   ", true, false},
		{&v1alpha1.AgentFlow{Trigger: v1alpha1.FlowTrigger{Type: "always"}}, "hello", true, true},
		{&v1alpha1.AgentFlow{Trigger: v1alpha1.FlowTrigger{Type: "always"}}, "hello", false, false},
		{&v1alpha1.AgentFlow{Trigger: v1alpha1.FlowTrigger{Type: "intent", Intent: "hello"}}, "hello", true, false},
		{&v1alpha1.AgentFlow{Trigger: v1alpha1.FlowTrigger{Type: "manual", Keywords: []string{"hello"}}}, "hello", true, false},
	}
	for _, tc := range tests {
		if got := flow.Matches(tc.f, tc.text, tc.first); got != tc.want {
			t.Errorf("Matches(%s %v, %q, %v) = %v", tc.f.Trigger.Type, tc.f.Trigger.Keywords, tc.text, tc.first, got)
		}
	}
}

func TestPick(t *testing.T) {
	off := false
	on := true
	kw := func(id, name string, priority int32, enabled *bool, words ...string) v1alpha1.AgentFlow {
		return v1alpha1.AgentFlow{ID: id, Name: name, Priority: priority, Enabled: enabled, Trigger: v1alpha1.FlowTrigger{Type: "keyword", Keywords: words}}
	}
	flows := []v1alpha1.AgentFlow{
		kw("disabled", "A disabled", 1000, &off, "menu"),
		kw("low", "A low", 1, nil, "menu"),
		kw("zulu", "Zulu", 5, &on, "menu"),
		kw("alpha", "Alpha", 5, nil, "menu"),
		kw("other", "Other", 900, nil, "help"),
		{ID: "welcome", Name: "Welcome", Priority: 3, Trigger: v1alpha1.FlowTrigger{Type: "always"}},
	}
	tests := []struct {
		text  string
		first bool
		want  string
	}{
		{"menu", false, "alpha"}, // the disabled one outranks it; Alpha and Zulu tie, Alpha's name first
		{"Menú please", true, "alpha"},
		{"hello", true, "welcome"},
		{"help", true, "other"},
		{"hello", false, ""},
	}
	for _, tc := range tests {
		got := flow.Pick(flows, tc.text, tc.first)
		gotID := ""
		if got != nil {
			gotID = got.ID
		}
		if gotID != tc.want {
			t.Errorf("Pick(%q, %v) = %q, want %q", tc.text, tc.first, gotID, tc.want)
		}
	}
	if got := flow.Pick(flows, "menu", false); got != &flows[3] {
		t.Error("Pick does not point into the slice")
	}
	reversed := []v1alpha1.AgentFlow{flows[3], flows[2]}
	if got := flow.Pick(reversed, "menu", false); got == nil || got.ID != "alpha" {
		t.Errorf("the tie depends on order: %v", got)
	}
}
