package risk

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
)

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=riskpolicies,verbs=get;list;watch

// DefaultReviewWindow is how long a hold waits for an operator unless the policy says, and
// MaxReviewWindow the longest a policy may say (a longer one, set before the resource's
// validation said so, is taken as this): holds are found among those made in the last 30 days.
const (
	DefaultReviewWindow = 2 * time.Hour
	MaxReviewWindow     = 7 * 24 * time.Hour
)

// Reviewed are the channels whose sends are reviewed (spec: What the service does, 8).
var Reviewed = map[string]bool{"sms": true, "sms_oneway": true, "email": true, "voice": true}

// Default suspension: 5 refusals within a day.
const (
	DefaultSuspendAfter  = 5
	DefaultSuspendWithin = 24 * time.Hour
)

// Policy is a project's compiled rules and review window.
type Policy struct {
	Rules  *Rules
	Window time.Duration
	// SuspendAfter refusals within SuspendWithin suspend the project's sending; 0 never.
	SuspendAfter  int64
	SuspendWithin time.Duration
	// Invalid is why the policy's rules do not compile: every reviewed send is then held.
	Invalid error
	// External, when set, decides instead of the rules (reviewer: external).
	External *External
	// Lists are the policy's named lists; blockedDomains and allowedDomains also decide URL
	// verification (docs/urls.md).
	Lists map[string][]string
}

// Policies finds the RiskPolicy of a project (its namespace's, else the installation's) and
// keeps each version compiled.
type Policies struct {
	Reader                client.Reader
	InstallationNamespace string
	// HTTP is the client external reviews go through (nil: http.DefaultClient with the
	// policy's timeout).
	HTTP *http.Client

	mu       sync.Mutex
	compiled map[types.UID]compiledPolicy
}

// compiledPolicy is a RiskPolicy's generation, compiled.
type compiledPolicy struct {
	generation int64
	policy     *Policy
}

// For returns the policy that reviews project, or nil when none does.
func (p *Policies) For(ctx context.Context, project string) (*Policy, error) {
	for _, ns := range []string{project, p.InstallationNamespace} {
		if ns == "" {
			continue
		}
		var list v1alpha1.RiskPolicyList
		if err := p.Reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("read risk policies of %s: %w", ns, err)
		}
		live := kubewrite.Live(list.Items)
		if len(live) == 0 {
			continue
		}
		rp := &live[0]
		c := p.compile(rp)
		if rp.Spec.Reviewer != "external" || rp.Spec.External == nil {
			return c, nil
		}
		ext, err := p.external(ctx, rp)
		if err != nil {
			return nil, err
		}
		withExternal := *c
		withExternal.External = ext
		return &withExternal, nil
	}
	return nil, nil
}

// external is the moderation service of rp, with its signing secret read now (a rotated
// secret signs the next review).
func (p *Policies) external(ctx context.Context, rp *v1alpha1.RiskPolicy) (*External, error) {
	x := rp.Spec.External
	e := &External{URL: x.URL, Timeout: DefaultExternalTimeout, OnFailure: Hold, HTTP: p.HTTP}
	if x.Timeout != nil && x.Timeout.Duration > 0 {
		e.Timeout = min(x.Timeout.Duration, 30*time.Second)
	}
	if x.OnFailure == string(Approve) {
		e.OnFailure = Approve
	}
	if ref := x.SecretRef; ref != nil {
		var secret corev1.Secret
		if err := p.Reader.Get(ctx, client.ObjectKey{Namespace: rp.Namespace, Name: ref.Name}, &secret); err != nil {
			return nil, fmt.Errorf("read the external reviewer's secret %s/%s (it needs the label %s=true): %w",
				rp.Namespace, ref.Name, v1alpha1.SecretLabel, err)
		}
		e.Secret = secret.Data[ref.Key]
	}
	return e, nil
}

// RulesOf are a RiskPolicy's rules, to compile.
func RulesOf(spec v1alpha1.RiskPolicySpec) []Rule {
	rules := make([]Rule, len(spec.Rules))
	for i, r := range spec.Rules {
		rules[i] = Rule{Name: r.Name, Expression: r.Expression, Outcome: Outcome(r.Outcome), Reason: r.Reason}
	}
	return rules
}

// compile is rp compiled, once per generation.
func (p *Policies) compile(rp *v1alpha1.RiskPolicy) *Policy {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.compiled[rp.UID]; ok && c.generation == rp.Generation {
		return c.policy
	}
	if p.compiled == nil {
		p.compiled = map[types.UID]compiledPolicy{}
	}
	rules := RulesOf(rp.Spec)
	c := &Policy{Window: DefaultReviewWindow, SuspendAfter: DefaultSuspendAfter, SuspendWithin: DefaultSuspendWithin}
	if rp.Spec.ReviewWindow != nil && rp.Spec.ReviewWindow.Duration > 0 {
		c.Window = min(rp.Spec.ReviewWindow.Duration, MaxReviewWindow)
	}
	if s := rp.Spec.Suspension; s != nil {
		c.SuspendAfter = int64(s.Refusals)
		if s.Within != nil && s.Within.Duration > 0 {
			c.SuspendWithin = s.Within.Duration
		}
	}
	c.Rules, c.Invalid = Compile(rules, rp.Spec.Lists)
	c.Lists = rp.Spec.Lists
	p.compiled[rp.UID] = compiledPolicy{generation: rp.Generation, policy: c}
	return c
}

// Decide reviews the send messageID with the policy: its external reviewer when it has one,
// else its rules; rules that do not compile hold the send, with the reason.
func (c *Policy) Decide(ctx context.Context, messageID string, m Message, p Project) Decision {
	if c.External != nil {
		return c.External.Review(ctx, messageID, m, p)
	}
	if c.Invalid != nil {
		return Decision{Outcome: Hold, Rule: "invalid-policy", Reason: "the risk policy's rules do not compile: " + c.Invalid.Error()}
	}
	return c.Rules.Review(m, p)
}
