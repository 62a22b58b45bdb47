package httpapi

import (
	"net/http"

	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/emaildomain"
)

// Email domains (WIRE.md §9): {domain: Domain} for one, {items: [Domain]} for the list (no
// cursor: a project has a handful). v1 and v2 share the handlers; v2 answers an existing
// domain with 200, and a DNS check that cannot run with 503.

type emailDomainRequest struct {
	Domain           *string `json:"domain"`
	EnhancedRecords  *bool   `json:"enhancedRecords"`
	ReceivingEnabled *bool   `json:"receivingEnabled"`
}

type emailDomainEnvelope struct {
	Domain domainverify.Domain `json:"domain"`
}

func (s *Server) createEmailDomain(w http.ResponseWriter, r *http.Request) {
	var req emailDomainRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	d, created, err := s.domains.Create(r.Context(), keyFrom(r.Context()).Project,
		emaildomain.Input{Domain: req.Domain, EnhancedRecords: req.EnhancedRecords, Receiving: req.ReceivingEnabled}, isV2(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, emailDomainEnvelope{Domain: domainverify.View(d)})
}

func (s *Server) listEmailDomains(w http.ResponseWriter, r *http.Request) {
	list, err := s.domains.List(r.Context(), keyFrom(r.Context()).Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Items []domainverify.Domain `json:"items"`
	}{Items: make([]domainverify.Domain, 0, len(list))}
	for i := range list {
		out.Items = append(out.Items, domainverify.View(&list[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getEmailDomain(w http.ResponseWriter, r *http.Request) {
	d, err := s.domains.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("domainId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, emailDomainEnvelope{Domain: domainverify.View(d)})
}

func (s *Server) verifyEmailDomain(w http.ResponseWriter, r *http.Request) {
	d, err := s.domains.Verify(r.Context(), keyFrom(r.Context()).Project, r.PathValue("domainId"), isV2(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, emailDomainEnvelope{Domain: domainverify.View(d)})
}

func (s *Server) deleteEmailDomain(w http.ResponseWriter, r *http.Request) {
	if err := s.domains.Delete(r.Context(), keyFrom(r.Context()).Project, r.PathValue("domainId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
