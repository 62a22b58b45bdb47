package risk

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Outcome is what review decides of a message (spec: States, Message).
type Outcome string

const (
	// Approve lets the message go.
	Approve Outcome = "approve"
	// Hold keeps it queued (riskHold) until an operator approves or refuses it, or the review
	// window closes (RISK_REVIEW_EXPIRED).
	Hold Outcome = "hold"
	// Refuse fails it with RISK_REJECTED; an SMS's charge is returned.
	Refuse Outcome = "refuse"
	// Block fails it outright with RISK_BLOCKED, without a hold.
	Block Outcome = "block"
)

// severity orders outcomes: the most severe matching rule decides.
var severity = map[Outcome]int{Approve: 0, Hold: 1, Refuse: 2, Block: 3}

// Rule is a named CEL expression over message, project and lists that, when true, gives its
// outcome.
type Rule struct {
	Name       string
	Expression string
	Outcome    Outcome
	// Reason is what the decision says (shown to the operator, and in the message's
	// errorMessage when it fails).
	Reason string
}

// Decision is a review's result: the outcome, and the rule that gave it (none for approve).
type Decision struct {
	Outcome Outcome
	Rule    string
	Reason  string
}

// costLimit bounds one rule's evaluation (CEL's cost units): a rule over a long text's words
// stays well under it, a runaway comprehension does not.
const costLimit = 1_000_000

// env is the CEL environment rules compile in: message, project and lists are maps (their
// fields are documented in docs/risk.md), plus CEL's standard library and string extensions.
func env() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("message", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("project", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("lists", cel.MapType(cel.StringType, cel.ListType(cel.StringType))),
	)
}

// Rules are compiled rules, ready to evaluate; safe for concurrent use.
type Rules struct {
	rules    []Rule
	programs []cel.Program
	lists    map[string][]string
}

// Compile checks and compiles rules with the keyword lists they may name. Every rule that does
// not compile, or is not a boolean, is reported by name with CEL's reason.
func Compile(rules []Rule, lists map[string][]string) (*Rules, error) {
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("risk: CEL environment: %w", err)
	}
	if lists == nil {
		lists = map[string][]string{} // a rule naming a list then meets a missing key, not a nil map
	}
	out := &Rules{rules: rules, lists: lists}
	var errs []error
	for _, r := range rules {
		if severity[r.Outcome] == 0 {
			errs = append(errs, fmt.Errorf("rule %s: outcome must be hold, refuse or block, not %q", r.Name, r.Outcome))
			continue
		}
		ast, iss := e.Compile(r.Expression)
		if iss.Err() != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", r.Name, iss.Err()))
			continue
		}
		if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
			errs = append(errs, fmt.Errorf("rule %s: the expression gives %s, not a bool", r.Name, t))
			continue
		}
		prg, err := e.Program(ast, cel.CostLimit(costLimit))
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", r.Name, err))
			continue
		}
		out.programs = append(out.programs, prg)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Review evaluates every rule on m and p and returns the most severe outcome that matched (the
// first rule of that outcome gives the reason); approve when none did. A rule that fails to
// evaluate (a field of the wrong type, the cost limit) holds the message: content that cannot
// be read is held, as the spec says, rather than let through.
func (r *Rules) Review(m Message, p Project) Decision {
	vars := map[string]any{"message": messageVars(m), "project": projectVars(p), "lists": r.lists}
	best := Decision{Outcome: Approve}
	for i, prg := range r.programs {
		rule := r.rules[i]
		val, _, err := prg.Eval(vars)
		outcome := rule.Outcome
		reason := rule.Reason
		switch {
		case err != nil:
			outcome = Hold
			reason = fmt.Sprintf("rule %s could not be evaluated: %v", rule.Name, err)
		case val != types.True:
			continue
		}
		if severity[outcome] > severity[best.Outcome] {
			best = Decision{Outcome: outcome, Rule: rule.Name, Reason: reason}
			if best.Reason == "" {
				best.Reason = "rule " + rule.Name + " matched"
			}
		}
	}
	return best
}

func messageVars(m Message) map[string]any {
	links := make([]any, len(m.Links))
	domains := make([]any, 0, len(m.Links))
	shortened := int64(0)
	for i, l := range m.Links {
		links[i] = map[string]any{"url": l.URL, "host": l.Host, "domain": l.Domain, "shortener": l.Shortener}
		domains = append(domains, l.Domain)
		if l.Shortener {
			shortened++
		}
	}
	words := make([]any, len(m.Words))
	for i, w := range m.Words {
		words[i] = w
	}
	return map[string]any{"channel": m.Channel, "to": m.To, "text": m.Text, "subject": m.Subject,
		"recipientCountry": m.RecipientCountry, "links": links, "domains": domains, "shortenedLinks": shortened,
		"words": words, "capitalsShare": m.CapitalsShare, "length": int64(len([]rune(m.Text)))}
}

func projectVars(p Project) map[string]any {
	return map[string]any{"id": p.ID, "plan": p.Plan, "verification": p.Verification, "newRecipientsLastHour": p.NewRecipientsLastHour}
}
