package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Deployment sources.
const (
	SourceUpload   = "upload"
	SourceManifest = "manifest"
	SourceGit      = "git"
	SourceRollback = "rollback"
)

// Deployment is a deployment as the API shows it.
type Deployment = db.InsertFunctionDeploymentRow

// DefaultDeploymentsLimit and MaxDeploymentsLimit bound a list of deployments.
const (
	DefaultDeploymentsLimit = 20
	MaxDeploymentsLimit     = 100
)

// newDeployment records a pending deployment of d: the builder takes it from there. A deploy of
// the same source while one is still being built returns that one (a retried POST makes no
// second version).
func (s *Service) newDeployment(ctx context.Context, f *v1alpha1.Function, d Draft, source, commit, commitMessage string, rolledBackTo *int32) (Deployment, bool, error) {
	return s.newDeploymentDigest(ctx, f, d, d.Digest(), source, commit, commitMessage, rolledBackTo)
}

// newDeploymentDigest is newDeployment with the digest that identifies the deployment's source.
func (s *Service) newDeploymentDigest(ctx context.Context, f *v1alpha1.Function, d Draft, digest, source, commit, commitMessage string, rolledBackTo *int32) (Deployment, bool, error) {
	files, err := json.Marshal(d.Files)
	if err != nil {
		return Deployment{}, false, err
	}
	deps, err := json.Marshal(d.Dependencies)
	if err != nil {
		return Deployment{}, false, err
	}
	id, err := randid.Prefixed("fnd_", 20)
	if err != nil {
		return Deployment{}, false, err
	}
	var out Deployment
	reused := false
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if err := q.LockFunction(ctx, string(f.UID)); err != nil {
			return err
		}
		if cur, err := q.UnfinishedFunctionDeployment(ctx, string(f.UID)); err == nil {
			if same, err := q.DeployedSourceDigest(ctx, db.DeployedSourceDigestParams{FunctionUid: string(f.UID), SourceDigest: digest}); err == nil && same == cur.ID && rolledBackTo == nil {
				out, reused = Deployment(cur), true
				return nil
			}
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		version, err := q.NextFunctionVersion(ctx, string(f.UID))
		if err != nil {
			return err
		}
		out, err = q.InsertFunctionDeployment(ctx, db.InsertFunctionDeploymentParams{
			ID: id, Project: f.Namespace, FunctionUid: string(f.UID), FunctionName: f.Name, Version: version,
			Source: source, GitCommit: nonEmpty(commit), GitMessage: nonEmpty(commitMessage), RolledBackTo: rolledBackTo,
			Files: files, Entrypoint: d.Entrypoint, Dependencies: deps, SourceBytes: int32(d.Bytes()), SourceDigest: digest,
			Runtime: string(f.Spec.Runtime), Now: s.now().UTC()})
		return err
	})
	if err != nil {
		return Deployment{}, false, fmt.Errorf("record a deployment of function %s: %w", f.Name, err)
	}
	return out, reused, nil
}

// Deploy applies edit to the draft and deploys it: the answer is the pending deployment.
func (s *Service) Deploy(ctx context.Context, f *v1alpha1.Function, edit DraftEdit) (Deployment, error) {
	if f.Spec.Source != nil {
		return Deployment{}, apperror.InvalidFields(apperror.FieldError{Path: edit.firstPath(),
			Message: "this function's code is declared in its Function resource (spec.source), which deploys every change of it"})
	}
	cur, err := s.Draft(ctx, f)
	if err != nil {
		return Deployment{}, err
	}
	d := cur
	if edit.Changes() {
		d = edit.On(cur)
	}
	if d.Empty() {
		return Deployment{}, apperror.InvalidFields(apperror.FieldError{Path: "sourceCode", Message: "the function has no code to deploy: send sourceCode or files"})
	}
	if errs := d.Validate(edit.firstPath()); len(errs) > 0 {
		return Deployment{}, apperror.InvalidFields(sortFields(errs)...)
	}
	if edit.Changes() {
		if err := s.saveDraft(ctx, f, d); err != nil {
			return Deployment{}, err
		}
	}
	dep, reused, err := s.newDeployment(ctx, f, d, SourceUpload, "", "", nil)
	if err != nil || reused {
		return dep, err
	}
	return dep, s.announce(ctx, f, dep.ID)
}

// announce names the newest deployment on the resource: the controller follows its build into
// the resource's status, and kubectl shows it.
func (s *Service) announce(ctx context.Context, f *v1alpha1.Function, deployment string) error {
	_, err := s.change(ctx, f, func(f *v1alpha1.Function) error {
		f.Annotations[LatestDeploymentAnnotation] = deployment
		return nil
	})
	return err
}

// Rollback copies a deployment's source onto the draft and deploys it as a new version; it
// returns the draft it replaced.
func (s *Service) Rollback(ctx context.Context, f *v1alpha1.Function, deploymentID string) (Deployment, *Draft, int32, error) {
	if f.Spec.Source != nil {
		return Deployment{}, nil, 0, apperror.InvalidFields(apperror.FieldError{Path: "deploymentId",
			Message: "this function's code is declared in its Function resource (spec.source): roll it back there"})
	}
	row, err := db.Planned(s.pool).FunctionDeploymentSource(ctx, db.FunctionDeploymentSourceParams{ID: deploymentID, FunctionUid: string(f.UID)})
	if errors.Is(err, pgx.ErrNoRows) {
		return Deployment{}, nil, 0, apperror.InvalidFields(apperror.FieldError{Path: "deploymentId", Message: fmt.Sprintf("function %s has no deployment %s", f.Name, deploymentID)})
	}
	if err != nil {
		return Deployment{}, nil, 0, fmt.Errorf("read deployment %s: %w", deploymentID, err)
	}
	if row.Status == "failed" || row.BundleSha256 == nil {
		return Deployment{}, nil, 0, apperror.InvalidFields(apperror.FieldError{Path: "deploymentId", Message: fmt.Sprintf("deployment %s never went live (%s): there is nothing proven to go back to", deploymentID, row.Status)})
	}
	old, err := draftOf(row.Files, row.Entrypoint, row.Dependencies)
	if err != nil {
		return Deployment{}, nil, 0, err
	}
	prev, err := s.Draft(ctx, f)
	if err != nil {
		return Deployment{}, nil, 0, err
	}
	if err := s.saveDraft(ctx, f, old); err != nil {
		return Deployment{}, nil, 0, err
	}
	version := row.Version
	dep, _, err := s.newDeployment(ctx, f, old, SourceRollback, "", "", &version)
	if err != nil {
		return Deployment{}, nil, 0, err
	}
	if err := s.announce(ctx, f, dep.ID); err != nil {
		return Deployment{}, nil, 0, err
	}
	if prev.Empty() {
		return dep, nil, version, nil
	}
	return dep, &prev, version, nil
}

// GetDeployment returns a deployment of the project: 404 when it has none of that id.
func (s *Service) GetDeployment(ctx context.Context, project, id string) (Deployment, error) {
	row, err := db.Planned(s.pool).FunctionDeploymentOf(ctx, db.FunctionDeploymentOfParams{ID: id, Project: project})
	if errors.Is(err, pgx.ErrNoRows) {
		return Deployment{}, apperror.NotFoundf("Deployment %s not found.", id)
	}
	if err != nil {
		return Deployment{}, fmt.Errorf("read deployment %s: %w", id, err)
	}
	return Deployment(row), nil
}

// Deployments lists the function's deployments, newest first.
func (s *Service) Deployments(ctx context.Context, f *v1alpha1.Function, limit int) ([]Deployment, error) {
	rows, err := db.Planned(s.pool).FunctionDeploymentsOf(ctx, db.FunctionDeploymentsOfParams{FunctionUid: string(f.UID), Max: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list the deployments of function %s: %w", f.Name, err)
	}
	out := make([]Deployment, len(rows))
	for i, r := range rows {
		out[i] = Deployment(r)
	}
	return out, nil
}

// Active is the function's serving deployment; ok false when none serves.
func (s *Service) Active(ctx context.Context, f *v1alpha1.Function) (db.ActiveFunctionDeploymentRow, bool, error) {
	row, err := db.Planned(s.pool).ActiveFunctionDeployment(ctx, string(f.UID))
	if errors.Is(err, pgx.ErrNoRows) {
		return row, false, nil
	}
	if err != nil {
		return row, false, fmt.Errorf("read the active deployment of function %s: %w", f.Name, err)
	}
	return row, true, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Bundle returns the project's bundle of that digest: 404 when it has none.
func (s *Service) Bundle(ctx context.Context, project, sha256 string) ([]byte, error) {
	b, err := db.Planned(s.pool).FunctionBundleByDigest(ctx, db.FunctionBundleByDigestParams{Project: project, BundleSha256: &sha256})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperror.NotFoundf("No bundle %s.", sha256)
	}
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", sha256, err)
	}
	return b, nil
}
