package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/periodic"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// DefaultDisableAfter is how long an endpoint may fail every attempt before it is disabled, as
// the webhook gateways do.
const DefaultDisableAfter = 5 * 24 * time.Hour

// disabledOf is the disabled state the conditions hold; nil when the webhook is enabled.
func disabledOf(conditions []metav1.Condition) *Disabled {
	c := v1alpha1.WebhookDisabled(conditions)
	if c == nil {
		return nil
	}
	return &Disabled{At: c.LastTransitionTime.UTC(), Reason: c.Message}
}

// Enable enables a disabled endpoint again; enabling replays nothing by itself. by says who, for
// the condition's message and the resource's event. An endpoint that is not disabled is left as
// it is.
func (l *Log) Enable(ctx context.Context, project string, ep Endpoint, by string) (Health, error) {
	h, err := l.EndpointHealth(ctx, project, ep)
	if err != nil {
		return h, err
	}
	if h.Disabled == nil {
		return h, nil
	}
	err = setEnabled(ctx, l.client, project, ep, func(generation int64) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionWebhookEnabled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReEnabled,
			Message: "enabled again by " + by, ObservedGeneration: generation}
	}, nil)
	if err != nil {
		return h, err
	}
	h.Disabled = nil
	return h, nil
}

// setEnabled writes the WebhookEnabled condition of ep's resource, read fresh and written with an
// optimistic lock (retried on conflict). keep, when set, is asked with the resource's current
// conditions and may leave them alone (returning false).
func setEnabled(ctx context.Context, c client.Client, project string, ep Endpoint, cond func(generation int64) metav1.Condition,
	keep func([]metav1.Condition, int64) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, conditions, err := resourceOf(ctx, c, project, ep)
		if err != nil {
			return err
		}
		if keep != nil && !keep(*conditions, obj.GetGeneration()) {
			return nil
		}
		before := obj.DeepCopyObject().(client.Object)
		meta.SetStatusCondition(conditions, cond(obj.GetGeneration()))
		return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
}

// resourceOf reads the resource that declares ep, and points at its conditions.
func resourceOf(ctx context.Context, c client.Client, project string, ep Endpoint) (client.Object, *[]metav1.Condition, error) {
	switch ep.Kind {
	case KindSender:
		var s v1alpha1.Sender
		err := c.Get(ctx, client.ObjectKey{Namespace: project, Name: ep.Name}, &s)
		if apierrors.IsNotFound(err) || (err == nil && s.Spec.Webhook == nil) {
			return nil, nil, notFound(ep)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read sender %s/%s: %w", project, ep.Name, err)
		}
		return &s, &s.Status.Conditions, nil
	case KindProjectV2, KindProjectV1:
		var wh v1alpha1.Webhook
		err := c.Get(ctx, client.ObjectKey{Namespace: project, Name: ep.Name}, &wh)
		if apierrors.IsNotFound(err) {
			return nil, nil, notFound(ep)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read webhook %s/%s: %w", project, ep.Name, err)
		}
		return &wh, &wh.Status.Conditions, nil
	}
	return nil, nil, fmt.Errorf("unknown endpoint kind %s", ep.Kind)
}

// Disabler disables the endpoints that have failed every attempt for After: they get the
// WebhookEnabled condition False, a Warning event, and a log line; their deliveries fail without
// an attempt until they are enabled again. It runs in the leader manager.
type Disabler struct {
	Pool   *pgxpool.Pool
	Client client.Client
	Events record.EventRecorder
	Log    logr.Logger
	// After is how long an endpoint fails before it is disabled; 0 is DefaultDisableAfter and
	// a negative value never disables.
	After time.Duration
	// Every is how often endpoints are looked at (a minute).
	Every time.Duration
	Now   func() time.Time
}

// NeedLeaderElection: one disabler decides, and writes each event once.
func (d *Disabler) NeedLeaderElection() bool { return true }

// Start runs rounds until ctx ends.
func (d *Disabler) Start(ctx context.Context) error {
	if d.After < 0 {
		return nil
	}
	periodic.Run(ctx, d.Every, time.Minute, func(ctx context.Context) {
		if err := d.Round(ctx); err != nil && ctx.Err() == nil {
			d.Log.Error(err, "disable failing webhook endpoints")
		}
	})
	return nil
}

func (d *Disabler) after() time.Duration {
	if d.After == 0 {
		return DefaultDisableAfter
	}
	return d.After
}

// Round disables every endpoint failing for longer than After. One enabled again is disabled
// only once After has passed since, with failed attempts after it and no success.
func (d *Disabler) Round(ctx context.Context) error {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	cutoff := now().UTC().Add(-d.after())
	failing, err := db.Planned(d.Pool).ListFailingWebhookEndpoints(ctx, cutoff)
	if err != nil {
		return fmt.Errorf("list failing endpoints: %w", err)
	}
	for _, e := range failing {
		ep := Endpoint{Kind(e.EndpointKind), e.EndpointName}
		since := e.FailingSince.UTC()
		message := fmt.Sprintf("every attempt has failed since %s (%d in a row, none answered 2xx); deliveries fail without an attempt until it is enabled again",
			since.Format(time.RFC3339), e.ConsecutiveFailures)
		disabled := false
		err := setEnabled(ctx, d.Client, e.Project, ep, func(generation int64) metav1.Condition {
			return metav1.Condition{Type: v1alpha1.ConditionWebhookEnabled, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonFailingTooLong, Message: message, ObservedGeneration: generation}
		}, func(conditions []metav1.Condition, _ int64) bool {
			c := meta.FindStatusCondition(conditions, v1alpha1.ConditionWebhookEnabled)
			// Left alone: already disabled; enabled again less than After ago; or enabled again
			// and not attempted since (its failures are all from before).
			disabled = c == nil || (c.Status == metav1.ConditionTrue && c.LastTransitionTime.Time.Before(cutoff) &&
				e.LastFailureAt != nil && e.LastFailureAt.After(c.LastTransitionTime.Add(time.Second))) // kept to the second
			return disabled
		})
		if err != nil {
			if e := apperror.As(err); e != nil && e.Kind == apperror.NotFound {
				continue // the webhook is gone: nothing to disable
			}
			d.Log.Error(err, "disable webhook endpoint", "project", e.Project, "kind", e.EndpointKind, "name", e.EndpointName)
			continue
		}
		if !disabled {
			continue
		}
		d.Log.Info("disabled a webhook endpoint failing for too long", "project", e.Project, "kind", e.EndpointKind,
			"name", e.EndpointName, "failingSince", since, "consecutiveFailures", e.ConsecutiveFailures)
		if d.Events != nil {
			if obj, _, err := resourceOf(ctx, d.Client, e.Project, ep); err == nil {
				d.Events.Event(obj, corev1.EventTypeWarning, v1alpha1.ReasonFailingTooLong, "webhook disabled: "+message)
			}
		}
	}
	return nil
}
