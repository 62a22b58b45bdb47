package httpapi

import (
	"net/http"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/whatsappsync"
)

// whatsAppSyncRoutes are a coexistence number's WhatsApp Business app syncs
// (docs/whatsapp-sync.md).
func (s *Server) whatsAppSyncRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/senders/{senderId}/whatsapp-sync", access: anyKey, handle: s.getWhatsAppSync},
		{method: "POST", path: "/v1/senders/{senderId}/whatsapp-sync/contacts", access: permission, permission: apikey.PermissionAll,
			handle: s.startWhatsAppSync(whatsappsync.KindContacts)},
		{method: "POST", path: "/v1/senders/{senderId}/whatsapp-sync/history", access: permission, permission: apikey.PermissionAll,
			handle: s.startWhatsAppSync(whatsappsync.KindHistory)},
	}
}

func (s *Server) getWhatsAppSync(w http.ResponseWriter, r *http.Request) {
	st, err := s.whatsAppSync.Get(r.Context(), keyFrom(r.Context()), r.PathValue("senderId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sync": st})
}

func (s *Server) startWhatsAppSync(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		msg, st, err := s.whatsAppSync.Start(r.Context(), keyFrom(r.Context()), r.PathValue("senderId"), kind)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"message": msg, "sync": st})
	}
}
