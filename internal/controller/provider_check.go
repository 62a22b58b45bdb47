package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// ErrCredentialsRejected is what a CredentialCheck wraps when the provider answered that the
// credentials are wrong (an authentication failure, a closed or suspended account). Any other
// error means the provider could not be asked, and the check is tried again with a backoff.
var ErrCredentialsRejected = errors.New("credentials rejected")

// CredentialCheck asks the provider whether a Provider's credentials are good. credentials is
// the data of the Provider's Secret (nil when it names none); p.Spec.BaseURL, when set, replaces
// the provider's public address. It returns what the provider says of the account (its name and
// id) for status.account. Its error text goes into the Ready condition, so it must never carry a
// credential: name the provider's answer (status code, error code), not the request.
type CredentialCheck func(ctx context.Context, p *v1alpha1.Provider, credentials map[string][]byte) (account string, err error)

// Timing of credential checks.
const (
	// providerRecheck is how often a Provider's credentials are checked again when nothing changed.
	providerRecheck = time.Hour
	// providerMinCheckInterval spaces two checks of one Provider: a burst of edits to its Secret
	// waits (CheckPending) instead of calling the provider at each edit.
	providerMinCheckInterval = 10 * time.Second
	// providerCheckTimeout bounds one check.
	providerCheckTimeout = 15 * time.Second
	// An unreachable provider is asked again after 30s, then twice as long each time, up to 5m.
	providerBackoffBase = 30 * time.Second
	providerBackoffMax  = 5 * time.Minute
)

// checkRecord is the outcome of the latest credential check of one Provider.
type checkRecord struct {
	// inputs identifies what was checked: the Provider's uid and generation and its Secret's
	// resourceVersion. A change of any of them calls for a new check.
	inputs  string
	at      time.Time
	account string
	err     error
	// failures counts the consecutive checks that could not reach the provider.
	failures int
}

// rejected tells whether the provider refused the credentials.
func (c *checkRecord) rejected() bool {
	return c.err != nil && errors.Is(c.err, ErrCredentialsRejected)
}

// unreachable tells whether the provider could not be asked.
func (c *checkRecord) unreachable() bool { return c.err != nil && !c.rejected() }

// nextIn is how long after now the next check of the same inputs is due: a backoff while the
// provider is unreachable, else the periodic re-check.
func (c *checkRecord) nextIn(now time.Time) time.Duration {
	interval := providerRecheck
	if c.unreachable() {
		interval = providerBackoff(c.failures)
	}
	if d := c.at.Add(interval).Sub(now); d > time.Second {
		return d
	}
	return time.Second
}

// providerBackoff is the wait after the n-th consecutive unreachable check: 30s, 1m, 2m, 4m, 5m…
func providerBackoff(failures int) time.Duration {
	d := providerBackoffBase
	for i := 1; i < failures && d < providerBackoffMax; i++ {
		d *= 2
	}
	return min(d, providerBackoffMax)
}

// checkPlan says what a reconcile does about the credential check.
type checkPlan int

const (
	// checkNow calls the provider.
	checkNow checkPlan = iota
	// checkReuse keeps the latest outcome: it is of the same inputs and recent.
	checkReuse
	// checkWait defers the check of changed inputs: the latest call was too recent.
	checkWait
)

// planCheck decides, from the latest check of a Provider (nil when there was none), whether to
// call the provider now, and when the plan is checkWait, how long to wait.
func planCheck(last *checkRecord, inputs string, now time.Time) (checkPlan, time.Duration) {
	if last == nil {
		return checkNow, 0
	}
	elapsed := now.Sub(last.at)
	switch {
	case elapsed >= providerMinCheckInterval:
		return checkNow, 0
	case last.inputs == inputs:
		return checkReuse, 0
	default:
		return checkWait, providerMinCheckInterval - elapsed
	}
}

// checkLedger remembers the latest check of each Provider. It lives in memory: after a restart
// (or a change of leader) every Provider is checked once again, which is what a re-check is for.
type checkLedger struct {
	mu      sync.Mutex
	records map[types.NamespacedName]checkRecord
}

func (l *checkLedger) get(key types.NamespacedName) *checkRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec, ok := l.records[key]; ok {
		return &rec
	}
	return nil
}

func (l *checkLedger) put(key types.NamespacedName, rec checkRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.records == nil {
		l.records = map[types.NamespacedName]checkRecord{}
	}
	l.records[key] = rec
}

func (l *checkLedger) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.records, key)
}

// checkCredentials is the step that asks the provider: it fills facts.checked and facts.outcome
// and returns when the Provider should be looked at again. It calls nothing when the Provider's
// endpoint is refused, when the Secret is missing or incomplete, when no check is registered for the type, or when the latest outcome of
// the same inputs is recent.
func (r *ProviderReconciler) checkCredentials(ctx context.Context, facts *providerFacts) (time.Duration, error) {
	p := facts.provider
	check := r.Checks[p.Spec.Type]
	facts.checked = check != nil
	if check == nil || !credentialsPresent(*facts).ready {
		return 0, nil
	}
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	secretVersion := ""
	if facts.secret != nil {
		secretVersion = facts.secret.ResourceVersion
	}
	inputs := fmt.Sprintf("%s/%d/%s", p.UID, p.Generation, secretVersion)
	now := time.Now()
	last := r.ledger.get(key)
	switch plan, wait := planCheck(last, inputs, now); plan {
	case checkReuse:
		facts.outcome = last
		return last.nextIn(now), nil
	case checkWait:
		return wait, nil
	}

	var data map[string][]byte
	if facts.secret != nil {
		data = facts.secret.Data
	}
	checkCtx, cancel := context.WithTimeout(ctx, providerCheckTimeout)
	defer cancel()
	account, err := check(checkCtx, p.DeepCopy(), data)
	if ctx.Err() != nil {
		// The manager is stopping: that says nothing of the provider.
		return 0, ctx.Err()
	}
	rec := checkRecord{inputs: inputs, at: now, account: account, err: err}
	if rec.unreachable() {
		rec.failures = 1
		if last != nil && last.unreachable() && last.inputs == inputs {
			rec.failures = last.failures + 1
		}
	}
	r.ledger.put(key, rec)
	log.FromContext(ctx).V(1).Info("checked provider credentials", "type", p.Spec.Type,
		"rejected", rec.rejected(), "unreachable", rec.unreachable())
	facts.outcome = &rec
	return rec.nextIn(now), nil
}
