package httpapi

import (
	"net/http"
	"slices"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
)

// The suppression list (Switchboard's own endpoints: the spec names the list, not its paths)
// and email introspection (WIRE.md §9). Both read the key's mode: test and live keep separate
// lists.

type suppressionJSON struct {
	Email     string  `json:"email"`
	Reason    string  `json:"reason"`
	MessageID *string `json:"messageId"`
	// BroadcastID is the broadcast whose one-click unsubscribe link made the entry.
	BroadcastID *string    `json:"broadcastId"`
	Detail      string     `json:"detail"`
	CreatedAt   time.Time  `json:"createdAt"`
	ExpiresAt   *time.Time `json:"expiresAt"`
}

func suppressionView(e emailcheck.Entry) suppressionJSON {
	out := suppressionJSON{Email: e.Address, Reason: e.Reason, Detail: e.Detail, CreatedAt: e.CreatedAt, ExpiresAt: e.Until}
	if e.MessageID != "" {
		out.MessageID = &e.MessageID
	}
	if e.BroadcastID != "" {
		out.BroadcastID = &e.BroadcastID
	}
	return out
}

// manualReasons are the reasons an entry made over the API may give.
var manualReasons = []string{emailcheck.ReasonManual, emailcheck.ReasonUnsubscribe}

// suppressionReasons are the reasons the list filters by.
var suppressionReasons = []string{emailcheck.ReasonHardBounce, emailcheck.ReasonSoftBounce, emailcheck.ReasonComplaint,
	emailcheck.ReasonManual, emailcheck.ReasonUnsubscribe}

func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "suppressions")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reason := r.URL.Query().Get("reason")
	if reason != "" && !slices.Contains(suppressionReasons, reason) {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "reason", Message: "must be one of hard_bounce, soft_bounce, complaint, manual, unsubscribe"}))
		return
	}
	var from emailcheck.Page
	if after != nil {
		from = emailcheck.Page{Time: time.UnixMicro(after.Time).UTC(), Address: after.ID}
	}
	entries, err := s.emailChecks.List(r.Context(), key.Project, key.TestMode(), reason, from, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "suppressions", entries, limit,
		func(e emailcheck.Entry) (time.Time, string) { return e.CreatedAt, e.Address }, suppressionView))
}

func (s *Server) getSuppression(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	e, err := s.emailChecks.Suppressed(r.Context(), key.Project, key.TestMode(), r.PathValue("email"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if e == nil {
		s.writeError(w, r, apperror.NotFoundf("%s is not on the suppression list.", r.PathValue("email")))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"suppression": suppressionView(*e)})
}

type suppressionRequest struct {
	Email  *string `json:"email"`
	Reason *string `json:"reason"`
	Detail *string `json:"detail"`
}

func (s *Server) addSuppression(w http.ResponseWriter, r *http.Request) {
	var req suppressionRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	var errs []apperror.FieldError
	normalized := ""
	if req.Email == nil {
		errs = append(errs, apperror.FieldError{Path: "email", Message: "is required"})
	} else if n, _, err := emailcheck.Normalize(*req.Email); err != nil {
		errs = append(errs, apperror.FieldError{Path: "email", Message: "must be an email address: " + err.Error()})
	} else {
		normalized = n
	}
	reason := emailcheck.ReasonManual
	if req.Reason != nil {
		if reason = *req.Reason; !slices.Contains(manualReasons, reason) {
			errs = append(errs, apperror.FieldError{Path: "reason", Message: "must be manual or unsubscribe (bounces and complaints are recorded by Switchboard)"})
		}
	}
	detail := ""
	if req.Detail != nil {
		if detail = *req.Detail; len(detail) > 1000 {
			errs = append(errs, apperror.FieldError{Path: "detail", Message: "must be up to 1000 characters"})
		}
	}
	if len(errs) > 0 {
		s.writeError(w, r, apperror.InvalidFields(errs...))
		return
	}
	key := keyFrom(r.Context())
	if err := s.emailChecks.Suppress(r.Context(), key.Project, key.TestMode(), normalized, reason, "", detail); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.emailChecks.Suppressed(r.Context(), key.Project, key.TestMode(), normalized)
	if err != nil || e == nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"suppression": suppressionView(*e)})
}

func (s *Server) deleteSuppression(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	removed, err := s.emailChecks.Remove(r.Context(), key.Project, key.TestMode(), r.PathValue("email"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !removed {
		s.writeError(w, r, apperror.NotFoundf("%s is not on the suppression list.", r.PathValue("email")))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxIntrospect bounds the addresses of one introspection (WIRE.md §9).
const maxIntrospect = 100

type introspectEmailRequest struct {
	Email  *string   `json:"email"`
	Emails *[]string `json:"emails"`
}

func (s *Server) introspectEmail(w http.ResponseWriter, r *http.Request) {
	var req introspectEmailRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	var addresses []string
	switch {
	case req.Email != nil && req.Emails != nil:
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "emails", Message: "send email or emails, not both"}))
		return
	case req.Email != nil:
		addresses = []string{*req.Email}
	case req.Emails != nil && len(*req.Emails) > 0 && len(*req.Emails) <= maxIntrospect:
		addresses = *req.Emails
	case req.Emails != nil:
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "emails", Message: "must hold 1 to 100 addresses"}))
		return
	default:
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "email", Message: "is required (or emails, a list of up to 100)"}))
		return
	}
	key := keyFrom(r.Context())
	results, err := s.emailChecks.InspectAll(r.Context(), key.Project, key.TestMode(), s.disposable, addresses)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	summary := map[string]int{"total": len(results), emailcheck.VerdictDeliverable: 0, emailcheck.VerdictRisky: 0, emailcheck.VerdictUndeliverable: 0}
	for _, res := range results {
		summary[res.Verdict]++
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results, "summary": summary})
}
