package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/optional"
)

// functionMaxBody bounds a function's create, update and deploy: 900,000 bytes of source grow
// when JSON escapes them (docs/functions-wire.md §6.6); the tree's own limit is checked on the
// decoded files.
const functionMaxBody = 4 << 20

// functionRoutes are functions (docs/functions.md, wire: docs/functions-wire.md). The GET, PATCH
// and DELETE routes of two segments under /v1/functions/ share a ServeMux pattern (dispatched):
// ServeMux refuses GET /v1/functions/deployments/{deploymentId} beside
// GET /v1/functions/{functionId}/logs, each matching a path of the other.
func (s *Server) functionRoutes() []route {
	all := apikey.PermissionAll
	return []route{
		{method: "POST", path: "/v1/functions", access: permission, permission: all, maxBody: functionMaxBody, handle: s.createFunction},
		{method: "GET", path: "/v1/functions/event-types", access: anyKey, handle: s.functionEventTypes},
		{method: "GET", path: "/v1/functions/{functionId}", access: anyKey, handle: s.getFunction},
		{method: "PATCH", path: "/v1/functions/{functionId}", access: permission, permission: all, maxBody: functionMaxBody, handle: s.updateFunction},
		{method: "DELETE", path: "/v1/functions/{functionId}", access: permission, permission: all, handle: s.deleteFunction},
		{method: "POST", path: "/v1/functions/{functionId}/deploy", access: permission, permission: all, maxBody: functionMaxBody, handle: s.deployFunction},
		{method: "POST", path: "/v1/functions/{functionId}/rollback", access: permission, permission: all, handle: s.rollbackFunction},
		{method: "POST", path: "/v1/functions/{functionId}/triggers", access: permission, permission: all, handle: s.addFunctionTriggers},
		{method: "PUT", path: "/v1/functions/{functionId}/secrets/{key}", access: permission, permission: all, handle: s.setFunctionSecret},
		{method: "DELETE", path: "/v1/functions/{functionId}/secrets/{key}", access: permission, permission: all, handle: s.unsetFunctionSecret},

		{method: "GET", path: "/v1/functions/bundles/{sha256}", dispatched: true, access: permission, permission: all, handle: s.functionBundle},
		{method: "GET", path: "/v1/functions/deployments/{deploymentId}", dispatched: true, access: permission, permission: all, handle: s.getFunctionDeployment},
		{method: "GET", path: "/v1/functions/{functionId}/deployments", dispatched: true, access: anyKey, handle: s.listFunctionDeployments},
		{method: "GET", path: "/v1/functions/{functionId}/logs", dispatched: true, access: permission, permission: all, handle: s.functionLogs},
		{method: "GET", path: "/v1/functions/{functionId}/triggers", dispatched: true, access: anyKey, handle: s.listFunctionTriggers},
		{method: "GET", path: "/v1/functions/{functionId}/secrets", dispatched: true, access: permission, permission: all, handle: s.listFunctionSecrets},
		{method: "PATCH", path: "/v1/functions/triggers/{triggerId}", dispatched: true, access: permission, permission: all, handle: s.updateFunctionTrigger},
		{method: "DELETE", path: "/v1/functions/triggers/{triggerId}", dispatched: true, access: permission, permission: all, handle: s.deleteFunctionTrigger},

		{method: "POST", path: "/v1/functions/{functionId}/git-link", access: permission, permission: all, handle: s.linkFunction},
		{method: "GET", path: "/v1/functions/{functionId}/git-link", dispatched: true, access: anyKey, handle: s.getFunctionLink},
		{method: "PATCH", path: "/v1/functions/{functionId}/git-link", dispatched: true, access: permission, permission: all, handle: s.updateFunctionLink},
		{method: "DELETE", path: "/v1/functions/{functionId}/git-link", dispatched: true, access: permission, permission: all, handle: s.unlinkFunction},
		{method: "POST", path: "/v1/functions/{functionId}/git-link/deploy", access: permission, permission: all, handle: s.deployFunctionLink},

		{method: "GET", path: "/v2/functions", access: anyKey, handle: s.listFunctionsV2},
		{method: "GET", path: "/v2/functions/{functionId}", access: anyKey, handle: s.getFunction},
		{method: "PATCH", path: "/v2/functions/{functionId}", access: permission, permission: all, handle: s.updateFunctionV2},
	}
}

// functionJSON is the client's Function (docs/functions-wire.md §3.1), with v2's architecture
// and paused.
type functionJSON struct {
	ID                 string            `json:"id"`
	Name               string            `json:"name"`
	Slug               string            `json:"slug"`
	Description        *string           `json:"description"`
	Runtime            string            `json:"runtime"`
	Status             string            `json:"status"`
	HTTPEnabled        bool              `json:"httpEnabled"`
	PublicURL          *string           `json:"publicUrl"`
	MemoryMB           int32             `json:"memoryMb"`
	TimeoutSec         int32             `json:"timeoutSec"`
	Dependencies       map[string]string `json:"dependencies"`
	ActiveDeploymentID *string           `json:"activeDeploymentId"`
	Architecture       *string           `json:"architecture"`
	Paused             bool              `json:"paused"`
	Mode               string            `json:"mode"`
	CreatedAt          time.Time         `json:"createdAt"`
	UpdatedAt          time.Time         `json:"updatedAt"`
}

func (s *Server) functionView(r *http.Request, f *v1alpha1.Function) (functionJSON, error) {
	st, err := s.functions.StateOf(r.Context(), f)
	if err != nil {
		return functionJSON{}, err
	}
	deps, err := s.functions.Dependencies(r.Context(), f)
	if err != nil {
		return functionJSON{}, err
	}
	out := functionJSON{ID: f.Name, Name: f.Spec.DisplayName, Slug: f.Name, Runtime: string(f.Spec.Runtime), Status: string(st.Phase),
		HTTPEnabled: f.Spec.HTTPEnabled, MemoryMB: f.Spec.MemoryMB, TimeoutSec: f.Spec.TimeoutSeconds, Dependencies: deps,
		Paused: f.Spec.Paused, Mode: string(f.Spec.Mode), CreatedAt: functions.CreatedAt(f), UpdatedAt: functions.UpdatedAt(f)}
	if f.Spec.Description != "" {
		out.Description = &f.Spec.Description
	}
	if u := s.functions.PublicURLOf(f); u != "" {
		out.PublicURL = &u
	}
	if st.Active != "" {
		out.ActiveDeploymentID = &st.Active
	}
	if f.Spec.Architecture != "" {
		out.Architecture = &f.Spec.Architecture
	}
	if out.Runtime == "" {
		out.Runtime = string(v1alpha1.RuntimeNodeJS24)
	}
	if out.Mode == "" {
		out.Mode = string(v1alpha1.FunctionLive)
	}
	return out, nil
}

// sourceBody is the draft fields of create, update and deploy (§2.1).
type sourceBody struct {
	Files        map[string]string                 `json:"files"`
	SourceCode   *string                           `json:"sourceCode"`
	Entrypoint   *string                           `json:"entrypoint"`
	Dependencies optional.Value[map[string]string] `json:"dependencies"`
}

func (b sourceBody) edit() functions.DraftEdit {
	return functions.DraftEdit{Files: b.Files, SourceCode: b.SourceCode, Entrypoint: b.Entrypoint,
		Dependencies: b.Dependencies.Value, DependenciesSet: b.Dependencies.Set}
}

func (s *Server) writeFunction(w http.ResponseWriter, r *http.Request, status int, f *v1alpha1.Function) {
	view, err := s.functionView(r, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"function": view})
}

func (s *Server) createFunction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		sourceBody
		Name        *string `json:"name"`
		Slug        string  `json:"slug"`
		Description *string `json:"description"`
		HTTPEnabled *bool   `json:"httpEnabled"`
		MemoryMB    *int32  `json:"memoryMb"`
		Runtime     *string `json:"runtime"`
		TimeoutSec  *int32  `json:"timeoutSec"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	mode := v1alpha1.FunctionLive
	if key.TestMode() {
		mode = v1alpha1.FunctionTest
	}
	settings := functions.Settings{Name: in.Name, Description: in.Description, HTTPEnabled: in.HTTPEnabled,
		MemoryMB: in.MemoryMB, Runtime: in.Runtime, TimeoutSec: in.TimeoutSec}
	f, err := s.functions.Create(r.Context(), key.Project, in.Slug, mode, settings, in.edit().On(functions.Draft{}))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeFunction(w, r, http.StatusCreated, f)
}

func (s *Server) functionOf(r *http.Request) (*v1alpha1.Function, error) {
	return s.functions.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("functionId"))
}

func (s *Server) getFunction(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeFunction(w, r, http.StatusOK, f)
}

func (s *Server) updateFunction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		sourceBody
		HTTPEnabled *bool `json:"httpEnabled"`
	}
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if f, err = s.functions.Update(r.Context(), f, functions.Settings{HTTPEnabled: in.HTTPEnabled}, in.edit()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeFunction(w, r, http.StatusOK, f)
}

func (s *Server) updateFunctionV2(w http.ResponseWriter, r *http.Request) {
	var in struct {
		HTTPEnabled  *bool                  `json:"httpEnabled"`
		Name         *string                `json:"name"`
		Description  optional.Value[string] `json:"description"`
		TimeoutSec   *int32                 `json:"timeoutSec"`
		MemoryMB     *int32                 `json:"memoryMb"`
		Architecture optional.Value[string] `json:"architecture"`
		Paused       *bool                  `json:"paused"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	settings := functions.Settings{HTTPEnabled: in.HTTPEnabled, Name: in.Name, TimeoutSec: in.TimeoutSec, MemoryMB: in.MemoryMB, Paused: in.Paused}
	if in.Description.Set {
		settings.Description = &in.Description.Value
	}
	if in.Architecture.Set {
		settings.Architecture = &in.Architecture.Value
	}
	if f, err = s.functions.Update(r.Context(), f, settings, functions.DraftEdit{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeFunction(w, r, http.StatusOK, f)
}

func (s *Server) deleteFunction(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.functions.Delete(r.Context(), f); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "name": f.Spec.DisplayName, "slug": f.Name})
}

func (s *Server) listFunctionsV2(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "functions")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.functions.List(r.Context(), key.Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, id := after.seek()
	rows := make([]functionJSON, 0, limit+1)
	for i := range all {
		f := &all[i]
		if c := functions.CreatedAt(f).Truncate(time.Microsecond); t != nil && !c.Before(*t) && !(c.Equal(*t) && f.Name < *id) {
			continue
		}
		view, err := s.functionView(r, f)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if rows = append(rows, view); len(rows) > limit {
			break
		}
	}
	at := func(f functionJSON) (time.Time, string) { return f.CreatedAt, f.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "functions", rows, limit, at, func(f functionJSON) functionJSON { return f }))
}

// deploymentJSON is the client's Deployment (§3.2); deploymentSummaryJSON its list item (§3.3).
type deploymentJSON struct {
	ID              string     `json:"id"`
	FunctionID      string     `json:"functionId"`
	Status          string     `json:"status"`
	Version         int32      `json:"version"`
	BuildLogs       *string    `json:"buildLogs"`
	BundleBytes     *int32     `json:"bundleBytes"`
	SourceCodeBytes int32      `json:"sourceCodeBytes"`
	ErrorMessage    *string    `json:"errorMessage"`
	Source          string     `json:"source"`
	GitCommit       *string    `json:"gitCommit"`
	CreatedAt       time.Time  `json:"createdAt"`
	DeployedAt      *time.Time `json:"deployedAt"`
}

type deploymentSummaryJSON struct {
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	Version         int32      `json:"version"`
	BundleSizeBytes *int32     `json:"bundleSizeBytes"`
	ErrorMessage    *string    `json:"errorMessage"`
	IsActive        bool       `json:"isActive"`
	CreatedAt       time.Time  `json:"createdAt"`
	DeployedAt      *time.Time `json:"deployedAt"`
}

func deploymentView(d functions.Deployment) deploymentJSON {
	return deploymentJSON{ID: d.ID, FunctionID: d.FunctionName, Status: d.Status, Version: d.Version, BuildLogs: d.BuildLogs,
		BundleBytes: d.BundleBytes, SourceCodeBytes: d.SourceBytes, ErrorMessage: d.ErrorMessage, Source: d.Source, GitCommit: d.GitCommit,
		CreatedAt: d.CreatedAt, DeployedAt: d.DeployedAt}
}

// decodeDeploy reads deploy's optional body; the client sends the literal null when called
// with null (§0), which is read as {}.
func decodeDeploy(r *http.Request, dst any) error {
	if r.Body != nil && r.ContentLength >= 0 && r.ContentLength <= 16 {
		b, err := io.ReadAll(io.LimitReader(r.Body, 17))
		if err != nil {
			return err
		}
		if string(bytes.TrimSpace(b)) == "null" {
			return nil
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return decodeJSON(r, dst, true)
}

func (s *Server) deployFunction(w http.ResponseWriter, r *http.Request) {
	var in sourceBody
	if err := decodeDeploy(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.functions.Deploy(r.Context(), f, in.edit())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deployment": deploymentView(d)})
}

func (s *Server) rollbackFunction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		DeploymentID string `json:"deploymentId"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.DeploymentID == "" {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "deploymentId", Message: "is required"}))
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, prev, version, err := s.functions.Rollback(r.Context(), f, in.DeploymentID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"deployment": deploymentView(d), "rolledBackToVersion": version, "previousDraft": nil}
	if prev != nil {
		out["previousDraft"] = prev
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getFunctionDeployment(w http.ResponseWriter, r *http.Request) {
	d, err := s.functions.GetDeployment(r.Context(), keyFrom(r.Context()).Project, r.PathValue("deploymentId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deployment": deploymentView(d)})
}

func (s *Server) listFunctionDeployments(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r, functions.DefaultDeploymentsLimit, functions.MaxDeploymentsLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rows, err := s.functions.Deployments(r.Context(), f, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]deploymentSummaryJSON, len(rows))
	for i, d := range rows {
		out[i] = deploymentSummaryJSON{ID: d.ID, Status: d.Status, Version: d.Version, BundleSizeBytes: d.BundleBytes,
			ErrorMessage: d.ErrorMessage, IsActive: d.Status == "active", CreatedAt: d.CreatedAt, DeployedAt: d.DeployedAt}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deployments": out})
}

// queryLimit reads ?limit= within 1..max (def when absent): 400 on limit otherwise.
func queryLimit(r *http.Request, def, max int) (int, error) {
	n, bad := limitField(r, def, max)
	if bad != nil {
		return 0, apperror.InvalidFields(*bad)
	}
	return n, nil
}

// limitField is queryLimit for a handler that reports it among other fields.
func limitField(r *http.Request, def, max int) (int, *apperror.FieldError) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, &apperror.FieldError{Path: "limit", Message: "must be an integer from 1 to " + strconv.Itoa(max)}
	}
	return n, nil
}

func (s *Server) functionLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var in functions.LogQuery
	var errs []apperror.FieldError
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"startTime", &in.From}, {"endTime", &in.To}} {
		name, dst := p.name, p.dst
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				errs = append(errs, apperror.FieldError{Path: name, Message: "must be Unix epoch milliseconds"})
			}
			*dst = n
		}
	}
	limit, bad := limitField(r, functions.DefaultLogsLimit, functions.MaxLogsLimit)
	if bad != nil {
		errs = append(errs, *bad)
	}
	in.Limit = limit
	if len(errs) > 0 {
		s.writeError(w, r, apperror.InvalidFields(errs...))
		return
	}
	in.Filter, in.Token = q.Get("filterPattern"), q.Get("nextToken")
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lines, next, err := s.functions.Logs(r.Context(), f, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	type event struct {
		Message      string `json:"message"`
		Timestamp    string `json:"timestamp"`
		Stream       string `json:"stream"`
		InvocationID string `json:"invocationId,omitempty"`
	}
	events := make([]event, len(lines))
	for i, l := range lines {
		events[i] = event{Message: l.Message, Timestamp: l.Time.UTC().Format(time.RFC3339Nano), Stream: l.Stream, InvocationID: l.Invocation}
	}
	out := map[string]any{"events": events, "nextToken": nil}
	if next != "" {
		out["nextToken"] = next
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) functionEventTypes(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"events": functions.EventTypes()})
}

// triggerJSON is the client's Trigger (§3.6).
type triggerJSON struct {
	ID         string     `json:"id"`
	FunctionID string     `json:"functionId"`
	EventType  string     `json:"eventType"`
	SenderID   *string    `json:"senderId"`
	Cron       *string    `json:"cron"`
	Active     bool       `json:"active"`
	LastRunAt  *time.Time `json:"lastRunAt"`
	NextRunAt  *time.Time `json:"nextRunAt"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
}

func triggerView(t functions.Trigger) triggerJSON {
	out := triggerJSON{ID: t.ID, FunctionID: t.FunctionName, EventType: t.EventType, SenderID: t.Sender, Cron: t.Cron, Active: t.Active,
		LastRunAt: t.LastRunAt, NextRunAt: t.NextRunAt, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if !t.Active || t.Cron == nil {
		out.NextRunAt = nil
	}
	return out
}

func triggerViews(rows []functions.Trigger) []triggerJSON {
	out := make([]triggerJSON, len(rows))
	for i, t := range rows {
		out[i] = triggerView(t)
	}
	return out
}

func (s *Server) addFunctionTriggers(w http.ResponseWriter, r *http.Request) {
	var in struct {
		EventTypes []string  `json:"eventTypes"`
		SenderIDs  []*string `json:"senderIds"`
		Cron       string    `json:"cron"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(in.EventTypes) == 0 {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "eventTypes", Message: "name at least one event type"}))
		return
	}
	senders := in.SenderIDs
	if len(senders) == 0 {
		senders = []*string{nil}
	}
	var want []functions.NewTrigger
	for _, ev := range in.EventTypes {
		if ev == functions.EventCron {
			want = append(want, functions.NewTrigger{Event: ev, Cron: in.Cron})
			continue
		}
		for _, sender := range senders {
			t := functions.NewTrigger{Event: ev}
			if sender != nil {
				t.Sender = *sender
			}
			want = append(want, t)
		}
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	added, skipped, err := s.functions.AddTriggers(r.Context(), f, want)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"added": len(added), "skipped": skipped, "triggers": triggerViews(added)})
}

func (s *Server) listFunctionTriggers(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rows, err := s.functions.Triggers(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"triggers": triggerViews(rows)})
}

func (s *Server) updateFunctionTrigger(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Active *bool `json:"active"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Active == nil {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "active", Message: "is required"}))
		return
	}
	_, f, err := s.functions.TriggerOf(r.Context(), keyFrom(r.Context()).Project, r.PathValue("triggerId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.functions.SetTriggerActive(r.Context(), f, r.PathValue("triggerId"), *in.Active); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"active": *in.Active, "ok": true})
}

func (s *Server) deleteFunctionTrigger(w http.ResponseWriter, r *http.Request) {
	_, f, err := s.functions.TriggerOf(r.Context(), keyFrom(r.Context()).Project, r.PathValue("triggerId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.functions.DeleteTrigger(r.Context(), f, r.PathValue("triggerId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// secretJSON is the client's SecretEntry (§3.7): never the value. Secrets apply to the next
// run at once (docs/functions.md), so every one is in sync.
type secretJSON struct {
	ID          string `json:"id"`
	Key         string `json:"key"`
	ValueLast4  string `json:"valueLast4"`
	CreatedAt   int64  `json:"createdAt"`
	UpdatedAt   int64  `json:"updatedAt"`
	SyncedToAws bool   `json:"syncedToAws"`
}

func secretView(e functions.Secret) secretJSON {
	return secretJSON{ID: e.ID, Key: e.Key, ValueLast4: e.ValueLast4, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, SyncedToAws: true}
}

func (s *Server) listFunctionSecrets(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	entries, err := s.functions.Secrets(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]secretJSON, len(entries))
	for i, e := range entries {
		out[i] = secretView(e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": out})
}

func (s *Server) setFunctionSecret(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Value *string `json:"value"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Value == nil {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "value", Message: "is required"}))
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.functions.SetSecret(r.Context(), f, r.PathValue("key"), *in.Value)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"secret": secretView(e)})
}

func (s *Server) unsetFunctionSecret(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.functions.UnsetSecret(r.Context(), f, r.PathValue("key")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// gitLinkJSON is the client's GitLink (§3.8).
type gitLinkJSON struct {
	ID                string     `json:"id"`
	FunctionID        string     `json:"functionId"`
	Provider          string     `json:"provider"`
	Connection        string     `json:"connection"`
	Owner             string     `json:"owner"`
	Repo              string     `json:"repo"`
	Branch            string     `json:"branch"`
	RootDir           *string    `json:"rootDir"`
	AutoDeploy        bool       `json:"autoDeploy"`
	LastStatus        *string    `json:"lastStatus"`
	LastError         *string    `json:"lastError"`
	LastCommitSha     *string    `json:"lastCommitSha"`
	LastCommitMessage *string    `json:"lastCommitMessage"`
	LastDeployAt      *time.Time `json:"lastDeployAt"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
}

func (s *Server) linkEnvelope(l functions.GitLink, secret string) map[string]any {
	out := map[string]any{"link": gitLinkJSON{ID: l.ID, FunctionID: l.FunctionName, Provider: "github", Connection: l.Connection,
		Owner: l.Owner, Repo: l.Repo, Branch: l.Branch, RootDir: l.RootDir, AutoDeploy: l.AutoDeploy, LastStatus: l.LastStatus,
		LastError: l.LastError, LastCommitSha: l.LastCommitSha, LastCommitMessage: l.LastCommitMsg, LastDeployAt: l.LastDeployAt,
		CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}, "webhookUrl": s.functions.WebhookURL(l)}
	if secret != "" {
		out["webhookSecret"] = secret
	}
	return out
}

func (s *Server) linkFunction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Owner      string `json:"owner"`
		Repo       string `json:"repo"`
		Branch     string `json:"branch"`
		RootDir    string `json:"rootDir"`
		AutoDeploy *bool  `json:"autoDeploy"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	link, secret, err := s.functions.Link(r.Context(), f, functions.NewGitLink{Owner: in.Owner, Repo: in.Repo, Branch: in.Branch,
		RootDir: in.RootDir, AutoDeploy: in.AutoDeploy})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.linkEnvelope(link, secret))
}

func (s *Server) getFunctionLink(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	link, err := s.functions.LinkOf(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.linkEnvelope(link, ""))
}

func (s *Server) updateFunctionLink(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Branch     *string                `json:"branch"`
		AutoDeploy *bool                  `json:"autoDeploy"`
		RootDir    optional.Value[string] `json:"rootDir"`
	}
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	edit := functions.GitLinkEdit{Branch: in.Branch, AutoDeploy: in.AutoDeploy, RootDirSet: in.RootDir.Set}
	if in.RootDir.Set && !in.RootDir.Null {
		edit.RootDir = &in.RootDir.Value
	}
	link, err := s.functions.UpdateLink(r.Context(), f, edit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.linkEnvelope(link, ""))
}

func (s *Server) unlinkFunction(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.functions.Unlink(r.Context(), f); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deployFunctionLink(w http.ResponseWriter, r *http.Request) {
	f, err := s.functionOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scheduled, err := s.functions.DeployLinked(r.Context(), f, "", "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"scheduled": scheduled})
}

// functionBundle serves a deployment's bundle by its digest: what the kubernetes runtime's pods
// fetch with their function's key (Switchboard's own extension).
func (s *Server) functionBundle(w http.ResponseWriter, r *http.Request) {
	sum := r.PathValue("sha256")
	b, err := s.functions.Bundle(r.Context(), keyFrom(r.Context()).Project, sum)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/javascript")
	w.Header().Set("ETag", `"`+sum+`"`)
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	_, _ = w.Write(b)
}
