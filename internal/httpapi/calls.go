package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/call"
)

// callRoutes are voice calls (docs/calls.md): placing one and hanging it up are sends; reading
// them is reading messages.
func (s *Server) callRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/calls", access: permission, permission: apikey.PermissionMessagesSend, handle: s.createCall},
		{method: "GET", path: "/v1/calls", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listCalls},
		{method: "GET", path: "/v1/calls/{callId}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getCall},
		{method: "POST", path: "/v1/calls/{callId}/hangup", access: permission, permission: apikey.PermissionMessagesSend, handle: s.hangupCall},
	}
}

// callCreate is the client's CallCreate.
type callCreate struct {
	To                 string            `json:"to"`
	Greeting           *string           `json:"greeting"`
	Language           *string           `json:"language"`
	MaxDurationMinutes *float64          `json:"maxDurationMinutes"`
	Metadata           map[string]string `json:"metadata"`
	SenderID           *string           `json:"senderId"`
}

type callEnvelope struct {
	Call call.Call `json:"call"`
}

func (s *Server) createCall(w http.ResponseWriter, r *http.Request) {
	var in callCreate
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	sender := ""
	if in.SenderID != nil {
		sender = *in.SenderID
	}
	if sender == "" {
		sender = r.Header.Get("Service-Sender")
	}
	c, err := s.calls.Create(r.Context(), keyFrom(r.Context()), call.Input{To: in.To, Greeting: in.Greeting, Language: in.Language,
		MaxDurationMinutes: in.MaxDurationMinutes, Metadata: in.Metadata, SenderID: sender})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, callEnvelope{Call: c})
}

func (s *Server) getCall(w http.ResponseWriter, r *http.Request) {
	c, err := s.calls.Get(r.Context(), keyFrom(r.Context()), r.PathValue("callId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, callEnvelope{Call: c})
}

func (s *Server) listCalls(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "calls")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	t, id := after.seek()
	f := call.Filter{Direction: q.Get("direction"), Status: q.Get("status"), BeforeTime: t, Limit: int32(limit + 1)}
	if id != nil {
		f.BeforeID = *id
	}
	rows, err := s.calls.List(r.Context(), key, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(c call.Call) (time.Time, string) { return c.CreatedAt, c.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "calls", rows, limit, at, func(c call.Call) call.Call { return c }))
}

func (s *Server) hangupCall(w http.ResponseWriter, r *http.Request) {
	c, err := s.calls.Hangup(r.Context(), keyFrom(r.Context()), r.PathValue("callId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, callEnvelope{Call: c})
}
