package functions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/functiongit"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// GitLink is a function's link to a repository.
type GitLink = db.FunctionGitLink

// GitHookPath is where GitHub's push deliveries for links arrive: /callbacks/github/functions/<link id>.
const GitHookPath = "/callbacks/github/functions/"

// gitSecretKey is the key, in a function's git Secret, of its link's webhook secret.
const gitSecretKey = "webhookSecret"

// gitSecretName is the Secret holding the webhook secret of a function's link.
func gitSecretName(f *v1alpha1.Function) string { return f.Name + "-git" }

// NewGitLink is what a request says of a new link.
type NewGitLink struct {
	Owner, Repo, Branch, RootDir string
	AutoDeploy                   *bool
}

// GitLinkEdit is a change of a link; nil fields stay.
type GitLinkEdit struct {
	Branch     *string
	AutoDeploy *bool
	// RootDirSet: the request named rootDir; RootDir nil clears it.
	RootDirSet bool
	RootDir    *string
}

// Link binds the function to a repository; it returns the link and the webhook secret the
// repository's push webhook signs with (shown once). Links are manual: Switchboard has no
// GitHub App of its own, so the repository's owner adds the webhook (docs/functions.md).
func (s *Service) Link(ctx context.Context, f *v1alpha1.Function, in NewGitLink) (GitLink, string, error) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if !functiongit.ValidOwner(in.Owner) {
		bad("owner", "must be a GitHub user or organisation name")
	}
	if !functiongit.ValidRepo(in.Repo) {
		bad("repo", "must be a GitHub repository name")
	}
	if in.Branch == "" {
		in.Branch = "main"
	}
	if !functiongit.ValidBranch(in.Branch) {
		bad("branch", "is not a valid branch name")
	}
	if in.RootDir != "" && !functiongit.ValidRootDir(in.RootDir) {
		bad("rootDir", "must be a relative folder of the repository (forward slashes, no ..)")
	}
	if f.Spec.Source != nil {
		bad("owner", "this function's code is declared in its Function resource (spec.source): link the repository there")
	}
	if len(errs) > 0 {
		return GitLink{}, "", apperror.InvalidFields(errs...)
	}
	id, err := randid.Prefixed("fgl_", 20)
	if err != nil {
		return GitLink{}, "", err
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return GitLink{}, "", err
	}
	secret := hex.EncodeToString(raw)
	auto := in.AutoDeploy == nil || *in.AutoDeploy
	link, err := db.Planned(s.pool).InsertFunctionGitLink(ctx, db.InsertFunctionGitLinkParams{ID: id, Project: f.Namespace, FunctionUid: string(f.UID),
		FunctionName: f.Name, Owner: in.Owner, Repo: in.Repo, Branch: in.Branch, RootDir: nonEmpty(in.RootDir), AutoDeploy: auto,
		Connection: "manual", Now: s.now().UTC()})
	if errors.Is(err, pgx.ErrNoRows) {
		return GitLink{}, "", apperror.InvalidFields(apperror.FieldError{Path: "repo", Message: "the function is linked already: a function holds at most one link (unlink it first)"})
	}
	if err != nil {
		return GitLink{}, "", fmt.Errorf("link function %s: %w", f.Name, err)
	}
	// The secret is written once the link is the function's: a refused second link leaves the
	// first one's secret alone.
	if err := s.writeGitSecret(ctx, f, secret); err != nil {
		_, _ = db.Planned(s.pool).DeleteFunctionGitLink(context.WithoutCancel(ctx), string(f.UID))
		return GitLink{}, "", err
	}
	return link, secret, nil
}

// LinkOf returns the function's link: 404 when it has none.
func (s *Service) LinkOf(ctx context.Context, f *v1alpha1.Function) (GitLink, error) {
	link, err := db.Planned(s.pool).FunctionGitLinkOf(ctx, string(f.UID))
	if errors.Is(err, pgx.ErrNoRows) {
		return GitLink{}, apperror.NotFoundf("Function %s is not linked to a repository.", f.Name)
	}
	if err != nil {
		return GitLink{}, fmt.Errorf("read the link of function %s: %w", f.Name, err)
	}
	return link, nil
}

// UpdateLink changes the branch, the folder or whether pushes deploy.
func (s *Service) UpdateLink(ctx context.Context, f *v1alpha1.Function, in GitLinkEdit) (GitLink, error) {
	if in.Branch == nil && in.AutoDeploy == nil && !in.RootDirSet {
		return GitLink{}, apperror.InvalidFields(apperror.FieldError{Path: "", Message: "name at least one of autoDeploy, branch and rootDir"})
	}
	link, err := s.LinkOf(ctx, f)
	if err != nil {
		return GitLink{}, err
	}
	var errs []apperror.FieldError
	if in.Branch != nil {
		if !functiongit.ValidBranch(*in.Branch) {
			errs = append(errs, apperror.FieldError{Path: "branch", Message: "is not a valid branch name"})
		}
		link.Branch = *in.Branch
	}
	if in.AutoDeploy != nil {
		link.AutoDeploy = *in.AutoDeploy
	}
	if in.RootDirSet {
		link.RootDir = nil
		if in.RootDir != nil && *in.RootDir != "" {
			if !functiongit.ValidRootDir(*in.RootDir) {
				errs = append(errs, apperror.FieldError{Path: "rootDir", Message: "must be a relative folder of the repository (forward slashes, no ..)"})
			}
			link.RootDir = in.RootDir
		}
	}
	if len(errs) > 0 {
		return GitLink{}, apperror.InvalidFields(errs...)
	}
	out, err := db.Planned(s.pool).UpdateFunctionGitLink(ctx, db.UpdateFunctionGitLinkParams{FunctionUid: string(f.UID), Branch: link.Branch,
		RootDir: link.RootDir, AutoDeploy: link.AutoDeploy, Now: s.now().UTC()})
	if err != nil {
		return GitLink{}, fmt.Errorf("update the link of function %s: %w", f.Name, err)
	}
	return out, nil
}

// Unlink removes the link and its secret; the function and its deployments stay.
func (s *Service) Unlink(ctx context.Context, f *v1alpha1.Function) error {
	n, err := db.Planned(s.pool).DeleteFunctionGitLink(ctx, string(f.UID))
	if err != nil {
		return fmt.Errorf("unlink function %s: %w", f.Name, err)
	}
	if n == 0 {
		return apperror.NotFoundf("Function %s is not linked to a repository.", f.Name)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: gitSecretName(f)}}
	if err := s.client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the link secret of function %s: %w", f.Name, err)
	}
	return nil
}

// DeployLinked schedules a deploy of the linked branch (its head, or commit): a pending
// deployment the builder fetches before it builds. It returns false when one is under way.
func (s *Service) DeployLinked(ctx context.Context, f *v1alpha1.Function, commit, message string) (bool, error) {
	link, err := s.LinkOf(ctx, f)
	if err != nil {
		return false, err
	}
	q := db.Planned(s.pool)
	if cur, err := q.UnfinishedFunctionDeployment(ctx, string(f.UID)); err == nil && cur.Source == SourceGit && cur.Status == "pending" {
		return false, nil
	}
	// The source is not known until the builder fetches it: a digest of its own keeps this
	// deployment from being taken for another Git deployment still being built.
	dep, _, err := s.newDeploymentDigest(ctx, f, DraftEdit{}.On(Draft{}), "git:"+commit+":"+randomSuffix(), SourceGit, commit, message, nil)
	if err != nil {
		return false, err
	}
	status := "deploying"
	err = q.SetFunctionGitLinkRun(ctx, db.SetFunctionGitLinkRunParams{FunctionUid: string(f.UID), LastStatus: &status,
		LastCommitSha: nonEmpty(commit), LastCommitMsg: nonEmpty(message), Now: s.now().UTC()})
	if err != nil {
		return false, fmt.Errorf("record the deploy of link %s: %w", link.ID, err)
	}
	return true, s.announce(ctx, f, dep.ID)
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// WebhookURL is where the link's repository sends its pushes.
func (s *Service) WebhookURL(link GitLink) string {
	return s.PublicURL + GitHookPath + link.ID
}

// writeGitSecret keeps a link's webhook secret in a Secret owned by the function.
func (s *Service) writeGitSecret(ctx context.Context, f *v1alpha1.Function, secret string) error {
	obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: gitSecretName(f),
		Labels: map[string]string{v1alpha1.SecretLabel: "true", v1alpha1.FunctionLabel: f.Name}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{gitSecretKey: []byte(secret)}}
	if err := controllerutil.SetControllerReference(f, obj, s.client.Scheme()); err != nil {
		return err
	}
	err := s.client.Create(ctx, obj, client.FieldOwner(kubewrite.FieldManager))
	if apierrors.IsAlreadyExists(err) {
		err = s.client.Update(ctx, obj, client.FieldOwner(kubewrite.FieldManager))
	}
	if err != nil {
		return fmt.Errorf("write the link secret of function %s: %w", f.Name, err)
	}
	return nil
}

// GitHookHandler takes GitHub's push deliveries for linked functions: checked by the link's
// secret (X-Hub-Signature-256), a push to the linked branch deploys its commit while autoDeploy.
type GitHookHandler struct {
	Service *Service
	Log     logr.Logger
}

func (h *GitHookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeHTTPError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Deliveries are POSTed.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 5<<20))
	if err != nil {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, "request_too_large", "A delivery holds at most 5 MiB.")
		return
	}
	s := h.Service
	id := strings.TrimPrefix(r.URL.Path, GitHookPath)
	link, err := db.Planned(s.pool).FunctionGitLinkByID(r.Context(), id)
	if err != nil {
		writeHTTPError(w, http.StatusNotFound, "not_found", "No link takes deliveries here.")
		return
	}
	var secret corev1.Secret
	if err := s.live.Get(r.Context(), client.ObjectKey{Namespace: link.Project, Name: link.FunctionName + "-git"}, &secret); err != nil ||
		!functiongit.VerifySignature(string(secret.Data[gitSecretKey]), body, r.Header.Get("X-Hub-Signature-256")) {
		writeHTTPError(w, http.StatusUnauthorized, "invalid_signature", "The delivery's signature does not match the link's secret.")
		return
	}
	switch r.Header.Get("X-GitHub-Event") {
	case "ping":
		writeJSONBody(w, http.StatusOK, map[string]any{"ok": true})
		return
	case "push":
	default:
		writeJSONBody(w, http.StatusAccepted, map[string]any{"ignored": "only push events deploy"})
		return
	}
	push, err := functiongit.ParsePush(body)
	if err != nil {
		writeHTTPError(w, http.StatusBadRequest, "invalid_request", "The push delivery cannot be read.")
		return
	}
	if !link.AutoDeploy || push.Deleted || push.Branch != link.Branch {
		writeJSONBody(w, http.StatusAccepted, map[string]any{"ignored": "not a push to the linked branch, or autoDeploy is off"})
		return
	}
	f, err := s.Get(r.Context(), link.Project, link.FunctionName)
	if err != nil || string(f.UID) != link.FunctionUid {
		writeHTTPError(w, http.StatusNotFound, "not_found", "No link takes deliveries here.")
		return
	}
	scheduled, err := s.DeployLinked(r.Context(), f, push.After, push.Message)
	if err != nil {
		h.Log.Error(err, "deploy a pushed commit", "function", f.Name, "project", f.Namespace)
		writeHTTPError(w, http.StatusInternalServerError, "internal_error", "The deploy could not be scheduled.")
		return
	}
	writeJSONBody(w, http.StatusAccepted, map[string]any{"scheduled": scheduled})
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
