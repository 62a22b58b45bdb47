package httpapi

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/sender"
)

// channelJSON is one entry of /v2/channels: a channel at an address, and the v1 sender behind it
// (to send as Service-Sender on v1 calls not yet migrated).
type channelJSON struct {
	Address    string `json:"address"`
	Type       string `json:"type"`
	Active     bool   `json:"active"`
	Name       string `json:"name"`
	V1SenderID string `json:"v1SenderId"`
}

func channelView(a sender.Address) channelJSON {
	return channelJSON{Address: a.Address, Type: string(a.Type), Active: a.Active, Name: a.Sender.Spec.DisplayName, V1SenderID: a.Sender.Name}
}

// channelPosition orders entries by their sender, then by the spec's channel order.
func channelPosition(a sender.Address) (int64, string) {
	return a.Sender.CreationTimestamp.UnixMicro(), fmt.Sprintf("%s/%d", a.Sender.Name, slices.Index(v1alpha1.AllChannels, a.Type))
}

func (s *Server) listChannels(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "channels")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.senders.Addresses(r.Context(), project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := page[channelJSON]{Items: []channelJSON{}}
	var last sender.Address
	for _, a := range all {
		t, id := channelPosition(a)
		if after != nil && (t < after.Time || (t == after.Time && id <= after.ID)) {
			continue
		}
		if len(out.Items) == limit {
			lt, lid := channelPosition(last)
			out.NextCursor = s.cursors.encode(position{Project: project, List: "channels", Time: lt, ID: lid})
			break
		}
		out.Items = append(out.Items, channelView(a))
		last = a
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) {
	entries, err := s.senders.AddressEntries(r.Context(), keyFrom(r.Context()).Project, r.PathValue("address"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := make([]channelJSON, len(entries))
	for i, e := range entries {
		items[i] = channelView(e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"address": r.PathValue("address"), "channels": items})
}

func (s *Server) createChannel(w http.ResponseWriter, r *http.Request) {
	var in sender.CreateInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.senders.CreateAddress(r.Context(), keyFrom(r.Context()).Project, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"channel": channelView(a)})
}

func (s *Server) setChannelActive(active bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := s.senders.SetActive(r.Context(), keyFrom(r.Context()).Project, r.PathValue("address"),
			v1alpha1.Channel(r.PathValue("type")), active)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"channel": channelView(a)})
	}
}

func (s *Server) deleteChannel(w http.ResponseWriter, r *http.Request) {
	if err := s.senders.Remove(r.Context(), keyFrom(r.Context()).Project, r.PathValue("address"), v1alpha1.Channel(r.PathValue("type"))); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
