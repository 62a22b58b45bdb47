package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/message"
)

// v2 campaigns: broadcasts named by addresses. A campaign's from is the address of its sender's
// channel; its id works on /v1/broadcasts. Wrong states are 409 invalid_status (v1: 400).

type campaignRequest struct {
	broadcast.Input
	From *string `json:"from"`
}

// campaignJSON is a broadcast as v2 shows it: from instead of senderId.
type campaignJSON struct {
	broadcast.Broadcast
	SenderID *string `json:"senderId,omitempty"` // hides the broadcast's
	From     string  `json:"from,omitempty"`
}

func (s *Server) v2CampaignView(ctx context.Context, project string, b broadcast.Broadcast) campaignJSON {
	out := campaignJSON{Broadcast: b}
	if b.SenderID != nil {
		var snd v1alpha1.Sender
		if err := s.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: *b.SenderID}, &snd); err == nil {
			out.From = snd.Address(v1alpha1.Channel(b.Channel))
		}
	}
	return out
}

// v2CampaignError is v2's answer to an operation in the wrong state.
func v2CampaignError(err error) error {
	var wrong *broadcast.WrongStatus
	if errors.As(err, &wrong) {
		e := apperror.New(apperror.Conflict, "invalid_status", wrong.Err.Message)
		e.Details = map[string]any{"status": wrong.Status}
		return e
	}
	var dup *broadcast.ErrDuplicate
	if errors.As(err, &dup) {
		e := apperror.New(apperror.Conflict, "idempotent_replay",
			"A campaign was already created with this idempotency key; it is in details.campaign, and nothing was created again.")
		e.Details = map[string]any{"campaign": dup.Original}
		return e
	}
	return err
}

func (s *Server) writeV2Campaign(w http.ResponseWriter, r *http.Request, status int, b broadcast.Broadcast, err error) {
	if err != nil {
		s.writeError(w, r, v2CampaignError(err))
		return
	}
	writeJSON(w, status, map[string]any{"campaign": s.v2CampaignView(r.Context(), keyFrom(r.Context()).Project, b)})
}

func (s *Server) createV2Campaign(w http.ResponseWriter, r *http.Request) {
	var req campaignRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	k := broadcastKey(r)
	in := req.Input
	in.SenderID = nil
	if req.From == nil || *req.From == "" {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "from", Message: "is required: the address the campaign is sent from"}))
		return
	}
	// The channel is checked at creation: from must have it, active.
	if in.Channel != nil && *in.Channel != "smart" {
		id, err := s.senders.SenderAt(r.Context(), k.Project, *req.From, v1alpha1.Channel(*in.Channel))
		if e := apperror.As(err); e != nil && e.Kind == apperror.NotFound {
			e := apperror.New(apperror.Conflict, "no_channel", fmt.Sprintf("%s has no active %s channel; connect it to send this campaign.", *req.From, *in.Channel))
			e.Details = map[string]any{"connect": message.ConnectRequests([]v1alpha1.Channel{v1alpha1.Channel(*in.Channel)})}
			s.writeError(w, r, e)
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		in.SenderID = &id
	}
	b, err := s.broadcasts.Create(r.Context(), k, in)
	s.writeV2Campaign(w, r, http.StatusCreated, b, err)
}

func (s *Server) listV2Campaigns(w http.ResponseWriter, r *http.Request) {
	p, limit, ok := s.broadcastPage(w, r, "broadcasts")
	if !ok {
		return
	}
	k := broadcastKey(r)
	rows, err := s.broadcasts.List(r.Context(), k, r.URL.Query().Get("status"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, k.Project, "broadcasts", rows, limit,
		func(b broadcast.Broadcast) (time.Time, string) { return b.CreatedAt, b.ID },
		func(b broadcast.Broadcast) campaignJSON { return s.v2CampaignView(r.Context(), k.Project, b) }))
}

func (s *Server) getV2Campaign(w http.ResponseWriter, r *http.Request) {
	b, err := s.broadcasts.Get(r.Context(), broadcastKey(r), r.PathValue("campaignId"))
	s.writeV2Campaign(w, r, http.StatusOK, b, err)
}

func (s *Server) deleteV2Campaign(w http.ResponseWriter, r *http.Request) {
	if err := s.broadcasts.Delete(r.Context(), broadcastKey(r), r.PathValue("campaignId")); err != nil {
		s.writeError(w, r, v2CampaignError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sendV2Campaign(w http.ResponseWriter, r *http.Request) {
	s.send(w, r, r.PathValue("campaignId"), s.writeV2Campaign)
}

func (s *Server) cancelV2Campaign(w http.ResponseWriter, r *http.Request) {
	b, err := s.broadcasts.Cancel(r.Context(), broadcastKey(r), r.PathValue("campaignId"))
	s.writeV2Campaign(w, r, http.StatusOK, b, err)
}

func (s *Server) v2CampaignProgress(w http.ResponseWriter, r *http.Request) {
	s.progress(w, r, r.PathValue("campaignId"))
}

func (s *Server) addV2CampaignRecipients(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Recipients *[]broadcast.RecipientInput `json:"recipients"`
	}
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	var recipients []broadcast.RecipientInput
	if req.Recipients != nil {
		recipients = *req.Recipients
	}
	added, err := s.broadcasts.AddRecipients(r.Context(), broadcastKey(r), r.PathValue("campaignId"), recipients)
	if err != nil {
		s.writeError(w, r, v2CampaignError(err))
		return
	}
	writeJSON(w, http.StatusOK, added)
}
