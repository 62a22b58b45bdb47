package functions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/functiongit"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Adopt gives a function applied with kubectl what the API gives the functions it makes: a
// public URL token and its own API key. It returns the function as written.
func (s *Service) Adopt(ctx context.Context, f *v1alpha1.Function) (*v1alpha1.Function, error) {
	if f.Annotations[URLTokenAnnotation] != "" && f.Annotations[v1alpha1.FunctionKeyIDAnnotation] != "" {
		return f, nil
	}
	if f.Annotations[URLTokenAnnotation] == "" {
		token, err := randid.String(tokenAlphabet, 24)
		if err != nil {
			return nil, err
		}
		if f, err = s.change(ctx, f, func(f *v1alpha1.Function) error {
			if f.Annotations[URLTokenAnnotation] == "" {
				f.Annotations[URLTokenAnnotation] = token
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return s.provisionKey(ctx, f)
}

// DeployManifest deploys a function's spec.source when it changed: inline files as they are, a
// Git source fetched at its commit (or its branch's head). Each source is deployed once, so a
// failing one is not tried again until the resource changes it. It returns the source's digest
// ("" for a function without spec.source).
func (s *Service) DeployManifest(ctx context.Context, f *v1alpha1.Function) (string, error) {
	src := f.Spec.Source
	if src == nil {
		return "", nil
	}
	spec, _ := json.Marshal(src)
	sum := sha256.Sum256(spec)
	digest := "manifest:" + hex.EncodeToString(sum[:])
	if f.Status.SourceDigest == digest {
		return digest, nil
	}
	seen, err := db.Planned(s.pool).HasSourceDigest(ctx, db.HasSourceDigestParams{FunctionUid: string(f.UID), SourceDigest: digest})
	if err != nil {
		return "", fmt.Errorf("read the deployments of function %s: %w", f.Name, err)
	}
	if seen {
		return digest, nil
	}
	if src.Git == nil {
		d := (DraftEdit{Files: src.Files, Entrypoint: &src.Entrypoint, Dependencies: src.Dependencies, DependenciesSet: true}).On(Draft{})
		_, err := s.recordDeployment(ctx, f, d, digest, SourceManifest, "", "")
		return digest, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	snap, err := functiongit.Fetch(ctx, functiongit.Repo{URL: src.Git.URL, Branch: src.Git.Branch, RootDir: src.Git.RootDir}, src.Git.Commit)
	if err != nil {
		var fe *functiongit.FetchError
		if !errors.As(err, &fe) {
			return "", err
		}
		if fe.Temporary {
			return "", fmt.Errorf("fetch the source of function %s: %w", f.Name, err)
		}
		_, err := s.recordFailed(ctx, f, digest, SourceGit, "the repository could not be fetched: "+fe.Reason)
		return digest, err
	}
	d := Draft{Files: snap.Files, Entrypoint: snap.Entrypoint, Dependencies: snap.Dependencies}
	_, err = s.recordDeployment(ctx, f, d, digest, SourceGit, snap.Commit, snap.Message)
	return digest, err
}

// recordDeployment records a pending deployment of d under the given source digest.
func (s *Service) recordDeployment(ctx context.Context, f *v1alpha1.Function, d Draft, digest, source, commit, message string) (Deployment, error) {
	dep, _, err := s.newDeploymentDigest(ctx, f, d, digest, source, commit, message, nil)
	return dep, err
}

// recordFailed records a deployment that failed before it had source to build.
func (s *Service) recordFailed(ctx context.Context, f *v1alpha1.Function, digest, source, reason string) (Deployment, error) {
	dep, err := s.recordDeployment(ctx, f, DraftEdit{}.On(Draft{}), digest, source, "", "")
	if err != nil {
		return dep, err
	}
	empty := ""
	if err := db.Planned(s.pool).FailFunctionDeployment(ctx, db.FailFunctionDeploymentParams{ID: dep.ID, ErrorMessage: &reason, BuildLogs: &empty}); err != nil {
		return dep, fmt.Errorf("fail deployment %s: %w", dep.ID, err)
	}
	return dep, nil
}
