package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/contact"
)

// contactJSON is a Contact (WIRE.md §6), plus tags, the list filter's field. v1 and v2 answer
// the same shape, bare.
type contactJSON struct {
	ID                string               `json:"id"`
	AvailableChannels []string             `json:"availableChannels"`
	Channels          []contactChannelJSON `json:"channels"`
	CountryCode       string               `json:"countryCode,omitempty"`
	DefaultChannel    *string              `json:"defaultChannel,omitempty"`
	DisplayName       *string              `json:"displayName,omitempty"`
	Metadata          map[string]string    `json:"metadata"`
	PhoneNumber       string               `json:"phoneNumber,omitempty"`
	PrimaryEmail      string               `json:"primaryEmail,omitempty"`
	PrimaryPhone      string               `json:"primaryPhone,omitempty"`
	ProfileName       *string              `json:"profileName"`
	Tags              []string             `json:"tags"`
	Verified          bool                 `json:"verified"`
	CreatedAt         time.Time            `json:"createdAt"`
	UpdatedAt         time.Time            `json:"updatedAt"`
}

type contactChannelJSON struct {
	ID            string             `json:"id"`
	Channel       string             `json:"channel"`
	Identifier    string             `json:"identifier"`
	IsPrimary     bool               `json:"isPrimary"`
	Verified      bool               `json:"verified"`
	CountryCode   *string            `json:"countryCode,omitempty"`
	Label         *string            `json:"label,omitempty"`
	LastInboundAt *time.Time         `json:"lastInboundAt,omitempty"`
	Metadata      map[string]string  `json:"metadata"`
	Metrics       channelMetricsJSON `json:"metrics"`
	// Suppression is Switchboard's extension: an email address's entry in force on the
	// project's suppression list (in the key's mode), omitted when none.
	Suppression *channelSuppressionJSON `json:"suppression,omitempty"`
	CreatedAt   time.Time               `json:"createdAt"`
	UpdatedAt   time.Time               `json:"updatedAt"`
}

// channelSuppressionJSON is why an email channel's address gets no mail: an unsubscribe (with
// the broadcast whose link made it), a bounce, a complaint or an entry made by hand; until is
// when a soft bounce lapses.
type channelSuppressionJSON struct {
	Reason      string     `json:"reason"`
	CreatedAt   time.Time  `json:"createdAt"`
	BroadcastID string     `json:"broadcastId,omitempty"`
	Until       *time.Time `json:"until,omitempty"`
}

type channelMetricsJSON struct {
	SuccessCount      int64      `json:"successCount"`
	FailureCount      int64      `json:"failureCount"`
	TotalAttempts     int64      `json:"totalAttempts"`
	AvgDeliveryTimeMs int64      `json:"avgDeliveryTimeMs"`
	LastSuccessAt     *time.Time `json:"lastSuccessAt,omitempty"`
}

func contactView(c contact.Contact) contactJSON {
	out := contactJSON{ID: c.ID, AvailableChannels: c.AvailableChannels(), Channels: []contactChannelJSON{},
		CountryCode: c.CountryCode(), DefaultChannel: c.DefaultChannel, DisplayName: c.DisplayName, Metadata: c.MetadataMap(),
		PhoneNumber: c.PrimaryPhone(), PrimaryEmail: c.PrimaryEmail(), PrimaryPhone: c.PrimaryPhone(), ProfileName: c.ProfileName,
		Tags: c.Tags, Verified: c.IsVerified(), CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	for _, ch := range c.Channels {
		out.Channels = append(out.Channels, contactChannelView(ch))
	}
	return out
}

func contactChannelView(ch contact.Channel) contactChannelJSON {
	out := contactChannelJSON{ID: ch.ID, Channel: ch.Channel, Identifier: ch.Identifier, IsPrimary: ch.IsPrimary,
		Verified: ch.Verified, CountryCode: ch.CountryCode, Label: ch.Label, LastInboundAt: utc(ch.LastInboundAt),
		Metadata: contact.Metadata(ch.Metadata), CreatedAt: ch.CreatedAt.UTC(), UpdatedAt: ch.UpdatedAt.UTC(),
		Metrics: channelMetricsJSON{SuccessCount: ch.SuccessCount, FailureCount: ch.FailureCount, TotalAttempts: ch.TotalAttempts,
			AvgDeliveryTimeMs: contact.AvgDeliveryTimeMs(ch.ContactChannel), LastSuccessAt: utc(ch.LastSuccessAt)}}
	if e := ch.Suppression; e != nil {
		out.Suppression = &channelSuppressionJSON{Reason: e.Reason, CreatedAt: e.CreatedAt.UTC(), BroadcastID: e.BroadcastID,
			Until: utc(e.Until)}
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// contactError answers an identifier another contact holds as v1 must: a plain invalid_request
// without details (spec: Errors). v2 keeps duplicate_identifier and its conflicts.
func (s *Server) contactError(w http.ResponseWriter, r *http.Request, err error) {
	if e := apperror.As(err); e != nil && e.Code == contact.CodeDuplicateIdentifier && !isV2(r) {
		err = apperror.New(apperror.Invalid, "invalid_request", e.Message)
	}
	s.writeError(w, r, err)
}

func (s *Server) createContact(w http.ResponseWriter, r *http.Request) {
	var in contact.CreateInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.contacts.Create(r.Context(), keyFrom(r.Context()), in)
	if err != nil {
		s.contactError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, contactView(c))
}

func (s *Server) listContacts(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "contacts")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	f := contact.ListFilter{Limit: limit + 1, Tags: contact.ParseTagFilter(q["tag"]), PhoneNumber: queryAddress(q, "phoneNumber")}
	if v := q.Get("search"); v != "" {
		f.Search = &v
	}
	f.BeforeTime, f.BeforeID = after.seek()
	rows, err := s.contacts.List(r.Context(), key, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(c contact.Contact) (time.Time, string) { return c.CreatedAt, c.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "contacts", rows, limit, at, contactView))
}

func (s *Server) getContact(w http.ResponseWriter, r *http.Request) {
	c, err := s.contacts.Get(r.Context(), keyFrom(r.Context()), r.PathValue("contactId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, contactView(c))
}

func (s *Server) getContactByPhone(w http.ResponseWriter, r *http.Request) {
	c, err := s.contacts.ByPhone(r.Context(), keyFrom(r.Context()), r.PathValue("phoneNumber"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, contactView(c))
}

func (s *Server) updateContact(w http.ResponseWriter, r *http.Request) {
	var in contact.UpdateInput
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.contacts.Update(r.Context(), keyFrom(r.Context()), r.PathValue("contactId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, contactView(c))
}

func (s *Server) deleteContact(w http.ResponseWriter, r *http.Request) {
	if err := s.contacts.Delete(r.Context(), keyFrom(r.Context()), r.PathValue("contactId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) mergeContacts(w http.ResponseWriter, r *http.Request) {
	var in contact.MergeInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.contacts.Merge(r.Context(), keyFrom(r.Context()), r.PathValue("contactId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, contactView(c))
}

func (s *Server) addContactChannel(w http.ResponseWriter, r *http.Request) {
	var in contact.ChannelInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	ch, err := s.contacts.AddChannel(r.Context(), keyFrom(r.Context()), r.PathValue("contactId"), in)
	if err != nil {
		s.contactError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"channel": contactChannelView(ch)})
}

func (s *Server) updateContactChannel(w http.ResponseWriter, r *http.Request) {
	var in contact.ChannelUpdate
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	ch, err := s.contacts.UpdateChannel(r.Context(), keyFrom(r.Context()), r.PathValue("contactId"), r.PathValue("channelId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"channel": contactChannelView(ch)})
}

func (s *Server) deleteContactChannel(w http.ResponseWriter, r *http.Request) {
	if err := s.contacts.RemoveChannel(r.Context(), keyFrom(r.Context()), r.PathValue("contactId"), r.PathValue("channelId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setPrimaryContactChannel(w http.ResponseWriter, r *http.Request) {
	ch, err := s.contacts.SetPrimary(r.Context(), keyFrom(r.Context()), r.PathValue("contactId"), r.PathValue("channelId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"channel": contactChannelView(ch)})
}
