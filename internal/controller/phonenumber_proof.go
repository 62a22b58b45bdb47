package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
)

// numberProof is what proves (or fails to prove) a PhoneNumber's claim.
type numberProof struct {
	// project is the project the claim is for; "" when the PhoneNumber names none it may.
	project string
	// invalid says why the PhoneNumber is no claim at all.
	invalid string
	// ownership is how the claim is proved; "" when it is not.
	ownership v1alpha1.PhoneNumberOwnership
	// account is what the project's own account reports of the number (ProviderAccount).
	account *v1alpha1.PhoneNumberAccount
	// notOwned says why nothing proves the claim.
	notOwned string
	// unreachable: the project's accounts could not be asked, and nothing proved the claim before.
	unreachable string
	// recheckFailed: the accounts could not be asked again; the earlier proof stands.
	recheckFailed string
}

// How often the project's accounts are asked again for one PhoneNumber, by what they said last.
const (
	numberRecheckListed   = time.Hour        // it lists the number: Twilio's release is rare
	numberRecheckUnlisted = 10 * time.Minute // it does not: the number may be bought or ported in
	numberRecheckFailed   = 30 * time.Second // it could not be asked
)

// prove decides what proves pn's claim. An operator's assignment (a PhoneNumber in the
// installation's namespace, which only operators write) is proof itself; a claim in a project's
// namespace needs the project's own twilio account to list the number, which is asked again now
// and then (numberChecks). It returns when to come back.
func (r *PhoneNumberReconciler) prove(ctx context.Context, pn *v1alpha1.PhoneNumber) (numberProof, time.Duration, error) {
	if r.InstallationNamespace != "" && pn.Namespace == r.InstallationNamespace {
		project := pn.Spec.Project
		if project == "" {
			// The installation's namespace may be a project too (switchboard dev's default).
			var projects v1alpha1.ProjectList
			if err := r.List(ctx, &projects, client.InNamespace(pn.Namespace)); err != nil {
				return numberProof{}, 0, fmt.Errorf("list projects in %s: %w", pn.Namespace, err)
			}
			if v1alpha1.NamespaceProject(projects.Items) == nil {
				return numberProof{invalid: "a PhoneNumber in the installation's namespace assigns its number to a project: set spec.project"}, 0, nil
			}
			project = pn.Namespace
		}
		return numberProof{project: project, ownership: v1alpha1.OwnershipAssigned}, 0, nil
	}
	if pn.Spec.Project != "" && pn.Spec.Project != pn.Namespace {
		return numberProof{invalid: fmt.Sprintf("a PhoneNumber in namespace %s claims its number for project %s only: leave spec.project empty "+
			"or set it to %s (an operator assigns numbers to other projects from the installation's namespace)", pn.Namespace, pn.Namespace, pn.Namespace)}, 0, nil
	}
	proof := numberProof{project: pn.Namespace}
	if v1alpha1.IsSandboxNumber(pn.Spec.Number) {
		// Every project may hold the sandbox's test numbers (a test key buys them).
		proof.ownership = v1alpha1.OwnershipSandbox
		return proof, 0, nil
	}
	providers, err := phonenumber.OwnAccounts(ctx, r.Client, pn.Namespace, pn.Spec.Provider)
	if err != nil {
		return proof, 0, err
	}
	switch {
	case len(providers) == 0 && pn.Spec.Provider != "":
		proof.notOwned = fmt.Sprintf("no twilio Provider %s in namespace %s", pn.Spec.Provider, pn.Namespace)
		return proof, 0, nil
	case len(providers) == 0:
		proof.notOwned = fmt.Sprintf("project %s has no twilio Provider of its own whose account could list %s, and no operator assigned it", pn.Namespace, pn.Spec.Number)
		return proof, 0, nil
	case r.Accounts == nil:
		proof.notOwned = "this installation asks no provider accounts for their numbers"
		return proof, 0, nil
	}

	key := types.NamespacedName{Namespace: pn.Namespace, Name: pn.Name}
	inputs := numberCheckInputs(pn, providers)
	now := time.Now()
	rec, again := r.checks.reuse(key, inputs, now)
	if rec == nil {
		p, found, err := phonenumber.AskAccounts(ctx, r.Accounts, providers, pn.Spec.Number)
		if ctx.Err() != nil {
			return proof, 0, ctx.Err() // the manager is stopping: that says nothing of the accounts
		}
		rec = &numberCheck{inputs: inputs, at: now, found: found, err: err}
		if p != nil {
			rec.provider = p.Name
		}
		r.checks.put(key, *rec)
		again = rec.interval()
		log.FromContext(ctx).V(1).Info("asked accounts for a number", "number", pn.Spec.Number, "listed", p != nil, "failed", err != nil)
	}
	switch {
	case rec.provider != "":
		proof.ownership = v1alpha1.OwnershipProviderAccount
		proof.account = &v1alpha1.PhoneNumberAccount{Provider: rec.provider, NumberSID: rec.found.SID,
			Capabilities: rec.found.Capabilities, CheckedAt: metav1.NewTime(rec.at.Truncate(time.Second))}
	case rec.err != nil:
		// A provider outage does not take a project's number away: the earlier proof stands
		// while its Provider is still there.
		if prev := pn.Status.Account; pn.Status.Ownership == v1alpha1.OwnershipProviderAccount && prev != nil && hasProvider(providers, prev.Provider) {
			proof.ownership, proof.account, proof.recheckFailed = v1alpha1.OwnershipProviderAccount, prev.DeepCopy(), rec.err.Error()
		} else {
			proof.unreachable = rec.err.Error()
		}
	default:
		names := make([]string, len(providers))
		for i, p := range providers {
			names[i] = p.Name
		}
		proof.notOwned = fmt.Sprintf("%s is not a number of the account of twilio Provider %s", pn.Spec.Number, strings.Join(names, ", "))
	}
	return proof, again, nil
}

func hasProvider(providers []v1alpha1.Provider, name string) bool {
	for _, p := range providers {
		if p.Name == name {
			return true
		}
	}
	return false
}

// numberCheckInputs identifies what an answer of the accounts holds for: the PhoneNumber's
// generation and check request, and its Providers as they are (a new account, changed
// credentials, a Provider that became Ready call for asking again).
func numberCheckInputs(pn *v1alpha1.PhoneNumber, providers []v1alpha1.Provider) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d/%s", pn.UID, pn.Generation, pn.Annotations[v1alpha1.PhoneNumberCheckAnnotation])
	for _, p := range providers {
		reason := ""
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			reason = string(c.Status) + "/" + c.Reason
		}
		fmt.Fprintf(&b, "|%s/%s/%d/%s/%s", p.Name, p.UID, p.Generation, reason, p.Status.Account)
	}
	return b.String()
}

// numberCheck is the latest answer of a PhoneNumber's accounts.
type numberCheck struct {
	inputs   string
	at       time.Time
	provider string // the Provider whose account lists the number; "" when none does
	found    phonenumber.Found
	err      error
}

// interval is how long the answer stands.
func (c *numberCheck) interval() time.Duration {
	switch {
	case c.provider != "":
		return numberRecheckListed
	case c.err != nil:
		return numberRecheckFailed
	}
	return numberRecheckUnlisted
}

// numberChecks remembers the latest answer per PhoneNumber, in memory: after a restart (or a
// change of leader) each claim is asked once again, while readers go on trusting its status.
type numberChecks struct {
	mu      sync.Mutex
	records map[types.NamespacedName]numberCheck
}

// reuse returns the latest answer for key when it is of the same inputs and still stands, with
// how long it still does; nil calls for asking now.
func (c *numberChecks) reuse(key types.NamespacedName, inputs string, now time.Time) (*numberCheck, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.records[key]
	if !ok || rec.inputs != inputs {
		return nil, 0
	}
	left := rec.at.Add(rec.interval()).Sub(now)
	if left <= 0 {
		return nil, 0
	}
	return &rec, left
}

func (c *numberChecks) put(key types.NamespacedName, rec numberCheck) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.records == nil {
		c.records = map[types.NamespacedName]numberCheck{}
	}
	c.records[key] = rec
}

func (c *numberChecks) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.records, key)
}
