package functions

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// State is what the deployments of a function say of it: the API's status and the resource's.
type State struct {
	Phase         v1alpha1.FunctionStatusValue
	Active        string
	ActiveVersion int32
	// Failure is the last deployment's error, when it failed.
	Failure string
}

// StateOf reads the function's state from its deployments: paused is disabled; a build under
// way is bundling or deploying; else the newest deployment's outcome (failed, or active), and
// draft when nothing was ever deployed.
func (s *Service) StateOf(ctx context.Context, f *v1alpha1.Function) (State, error) {
	return stateOf(ctx, db.Planned(s.pool), f)
}

func stateOf(ctx context.Context, q *db.Queries, f *v1alpha1.Function) (State, error) {
	var st State
	active, err := q.ActiveFunctionDeployment(ctx, string(f.UID))
	switch {
	case err == nil:
		st.Active, st.ActiveVersion = active.ID, active.Version
	case !errors.Is(err, pgx.ErrNoRows):
		return st, fmt.Errorf("read the active deployment of %s: %w", f.Name, err)
	}
	newest, err := q.FunctionDeploymentsOf(ctx, db.FunctionDeploymentsOfParams{FunctionUid: string(f.UID), Max: 1})
	if err != nil {
		return st, fmt.Errorf("read the deployments of %s: %w", f.Name, err)
	}
	switch {
	case f.Spec.Paused:
		st.Phase = v1alpha1.FunctionDisabled
	case len(newest) == 0:
		st.Phase = v1alpha1.FunctionDraft
	default:
		switch d := newest[0]; d.Status {
		case "pending", "bundling":
			st.Phase = v1alpha1.FunctionBundling
		case "uploading", "publishing":
			st.Phase = v1alpha1.FunctionDeploying
		case "failed":
			st.Phase = v1alpha1.FunctionFailed
			if d.ErrorMessage != nil {
				st.Failure = *d.ErrorMessage
			}
		default:
			st.Phase = v1alpha1.FunctionActive
		}
	}
	if len(newest) > 0 && newest[0].Status == "failed" && st.Failure == "" && newest[0].ErrorMessage != nil {
		st.Failure = *newest[0].ErrorMessage
	}
	return st, nil
}

// ApplyState writes st into the resource's status, with its Ready condition; it tells whether
// anything changed.
func ApplyState(f *v1alpha1.Function, st State, publicURL string) bool {
	before := f.Status.DeepCopy()
	f.Status.ObservedGeneration = f.Generation
	f.Status.Phase = st.Phase
	f.Status.ActiveDeployment = st.Active
	f.Status.ActiveVersion = st.ActiveVersion
	f.Status.PublicURL = publicURL
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady,
		Message: fmt.Sprintf("Version %d serves.", st.ActiveVersion), ObservedGeneration: f.Generation}
	switch {
	case f.Spec.Paused:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonPaused, "The function is paused: no trigger runs it and its URL does not answer."
	case st.Phase == v1alpha1.FunctionFailed:
		cond.Reason, cond.Message = v1alpha1.ReasonBuildFailed, "The last deployment failed: "+st.Failure
		if st.Active == "" {
			cond.Status = metav1.ConditionFalse
		}
	case st.Phase == v1alpha1.FunctionBundling || st.Phase == v1alpha1.FunctionDeploying:
		cond.Reason, cond.Message = v1alpha1.ReasonDeploying, "A deployment is being built."
		if st.Active == "" {
			cond.Status = metav1.ConditionFalse
		}
	case st.Active == "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonNotDeployed, "The function has never been deployed."
	}
	meta.SetStatusCondition(&f.Status.Conditions, cond)
	return !statusEqual(before, &f.Status)
}

func statusEqual(a, b *v1alpha1.FunctionStatus) bool {
	if a.Phase != b.Phase || a.ActiveDeployment != b.ActiveDeployment || a.ActiveVersion != b.ActiveVersion ||
		a.PublicURL != b.PublicURL || a.ObservedGeneration != b.ObservedGeneration || a.SourceDigest != b.SourceDigest ||
		len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
