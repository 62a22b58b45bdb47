package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/invitation"
)

// Invitations (spec: Endpoints/Invitations; WIRE.md §8): {invitation} for one, a cursor page
// for the list. The body of a create is optional.

type invitationRequest struct {
	ClientName            *string   `json:"clientName"`
	ClientEmail           *string   `json:"clientEmail"`
	ClientPhone           *string   `json:"clientPhone"`
	ConnectionType        *string   `json:"connectionType"`
	PhoneNumberID         *string   `json:"phoneNumberId"`
	ExpiresInDays         *int      `json:"expiresInDays"`
	AllowedPhoneCountries *[]string `json:"allowedPhoneCountries"`
}

type invitationEnvelope struct {
	Invitation invitation.View `json:"invitation"`
}

func (s *Server) createInvitation(w http.ResponseWriter, r *http.Request) {
	var req invitationRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	inv, err := s.invitations.Create(r.Context(), keyFrom(r.Context()).Project, invitation.Input{ClientName: req.ClientName,
		ClientEmail: req.ClientEmail, ClientPhone: req.ClientPhone, ConnectionType: req.ConnectionType, PhoneNumberID: req.PhoneNumberID,
		ExpiresInDays: req.ExpiresInDays, AllowedPhoneCountries: req.AllowedPhoneCountries})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, invitationEnvelope{Invitation: s.invitations.View(inv)})
}

func (s *Server) listInvitations(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "invitations")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.invitations.List(r.Context(), project, r.URL.Query().Get("status"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rows := make([]v1alpha1.Invitation, 0, limit+1)
	for _, inv := range all {
		if after.after(inv.CreationTimestamp.Time, inv.Name) && len(rows) <= limit {
			rows = append(rows, inv)
		}
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, project, "invitations", rows, limit,
		func(inv v1alpha1.Invitation) (time.Time, string) { return inv.CreationTimestamp.Time, inv.Name },
		func(inv v1alpha1.Invitation) invitation.View { return s.invitations.View(&inv) }))
}

func (s *Server) getInvitation(w http.ResponseWriter, r *http.Request) {
	inv, err := s.invitations.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("invitationId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, invitationEnvelope{Invitation: s.invitations.View(inv)})
}

func (s *Server) cancelInvitation(w http.ResponseWriter, r *http.Request) {
	inv, err := s.invitations.Cancel(r.Context(), keyFrom(r.Context()).Project, r.PathValue("invitationId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, invitationEnvelope{Invitation: s.invitations.View(inv)})
}
