package httpapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/optional"
	"github.com/switchboard-io/switchboard/internal/sender"
)

// senderRequest is SenderCreate and SenderUpdate (WIRE.md §3).
type senderRequest struct {
	Name                    *string                `json:"name"`
	PhoneNumber             *string                `json:"phoneNumber"`
	EmailAddress            *string                `json:"emailAddress"`
	EmailDomainID           *string                `json:"emailDomainId"`
	EmailFromName           *string                `json:"emailFromName"`
	EmailReceivingEnabled   *bool                  `json:"emailReceivingEnabled"`
	EmailCatchAllEnabled    *bool                  `json:"emailCatchAllEnabled"`
	EnableSmsOneway         *bool                  `json:"enableSmsOneway"`
	EnableVoice             *bool                  `json:"enableVoice"`
	SetAsDefault            *bool                  `json:"setAsDefault"`
	WebhookURL              optional.Value[string] `json:"webhookUrl"`
	WebhookEvents           *[]string              `json:"webhookEvents"`
	WebhookActive           *bool                  `json:"webhookActive"`
	WebhookSignatureVersion *string                `json:"webhookSignatureVersion"`
}

func (r senderRequest) input() sender.Input {
	in := sender.Input{
		Name: r.Name, PhoneNumber: r.PhoneNumber, EmailAddress: r.EmailAddress, EmailDomainID: r.EmailDomainID, EmailFromName: r.EmailFromName,
		EmailReceivingEnabled: r.EmailReceivingEnabled, EmailCatchAllEnabled: r.EmailCatchAllEnabled,
		EnableSmsOneway: r.EnableSmsOneway, EnableVoice: r.EnableVoice, SetAsDefault: r.SetAsDefault,
		WebhookEvents: r.WebhookEvents, WebhookActive: r.WebhookActive, WebhookSignatureVersion: r.WebhookSignatureVersion,
	}
	if r.WebhookURL.Set {
		if r.WebhookURL.Null {
			in.RemoveWebhook = true // null removes the webhook
		} else {
			in.WebhookURL = &r.WebhookURL.Value
		}
	}
	return in
}

type senderJSON struct {
	ID                    string        `json:"id"`
	Name                  string        `json:"name"`
	PhoneNumber           string        `json:"phoneNumber"`
	Channels              []string      `json:"channels"`
	IsDefault             bool          `json:"isDefault"`
	Webhook               *webhookJSON  `json:"webhook,omitempty"`
	WhatsApp              *whatsappJSON `json:"whatsapp,omitempty"`
	EmailAddress          string        `json:"emailAddress,omitempty"`
	EmailReceivingEnabled bool          `json:"emailReceivingEnabled"`
	EmailCatchAllEnabled  bool          `json:"emailCatchAllEnabled"`
	CreatedAt             time.Time     `json:"createdAt"`
	UpdatedAt             time.Time     `json:"updatedAt"`
}

type webhookJSON struct {
	URL              string   `json:"url"`
	Events           []string `json:"events"`
	Active           bool     `json:"active"`
	SignatureVersion string   `json:"signatureVersion"`
	Secret           string   `json:"secret,omitempty"`
}

type whatsappJSON struct {
	DisplayPhoneNumber string             `json:"displayPhoneNumber,omitempty"`
	PhoneNumberID      string             `json:"phoneNumberId"`
	PaymentStatus      *paymentStatusJSON `json:"paymentStatus,omitempty"`
}

// paymentStatusJSON is what the provider last reported of the business account's payment.
type paymentStatusJSON struct {
	CanSendTemplates bool   `json:"canSendTemplates"`
	MethodStatus     string `json:"methodStatus,omitempty"`
	SetupStatus      string `json:"setupStatus,omitempty"`
}

func senderView(v sender.View) senderJSON {
	snd := v.Sender
	out := senderJSON{
		ID: snd.Name, Name: snd.Spec.DisplayName, PhoneNumber: snd.Spec.PhoneNumber,
		Channels: []string{}, IsDefault: v.IsDefault, CreatedAt: snd.CreationTimestamp.UTC(), UpdatedAt: updatedAt(snd),
	}
	for _, c := range v.Channels {
		out.Channels = append(out.Channels, string(c))
	}
	if wh := snd.Spec.Webhook; wh != nil {
		out.Webhook = &webhookJSON{URL: wh.URL, Events: []string{}, Active: wh.Active == nil || *wh.Active,
			SignatureVersion: string(wh.SignatureVersion), Secret: v.Secret}
		for _, e := range wh.Events {
			out.Webhook.Events = append(out.Webhook.Events, string(e))
		}
	}
	if wa := snd.Spec.WhatsApp; wa != nil {
		out.WhatsApp = &whatsappJSON{DisplayPhoneNumber: wa.DisplayPhoneNumber, PhoneNumberID: wa.AccountID}
		// What the provider reports, once the controller has read it for this number.
		if st := snd.Status.WhatsApp; st != nil && st.PhoneNumberID == wa.AccountID && !st.CheckedAt.IsZero() && st.SetupStatus != "" {
			if out.WhatsApp.DisplayPhoneNumber == "" {
				out.WhatsApp.DisplayPhoneNumber = st.DisplayPhoneNumber
			}
			out.WhatsApp.PaymentStatus = &paymentStatusJSON{CanSendTemplates: st.CanSendTemplates,
				MethodStatus: st.PaymentMethodStatus, SetupStatus: st.SetupStatus}
		}
	}
	if snd.Spec.Email != nil {
		out.EmailAddress = snd.Spec.Email.Address
	}
	out.EmailReceivingEnabled, out.EmailCatchAllEnabled = v.EmailReceiving, v.EmailCatchAll
	return out
}

// updatedAt is the time of the sender's latest change, from its managed fields.
func updatedAt(snd *v1alpha1.Sender) time.Time {
	return updatedAtOf(snd.CreationTimestamp.Time, snd.ManagedFields)
}

// updatedAtOf is the time of a resource's latest change of its spec: its creation, or the
// latest write its managed fields record (status writes aside).
func updatedAtOf(created time.Time, fields []metav1.ManagedFieldsEntry) time.Time {
	t := created
	for _, f := range fields {
		if f.Time != nil && f.Time.After(t) && f.Subresource == "" {
			t = f.Time.Time
		}
	}
	return t.UTC()
}

func (s *Server) createSender(w http.ResponseWriter, r *http.Request) {
	var req senderRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.senders.Create(r.Context(), keyFrom(r.Context()).Project, req.input())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, senderView(v))
}

func (s *Server) listSenders(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "senders")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.senders.List(r.Context(), project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := page[senderJSON]{Items: []senderJSON{}}
	for _, v := range all {
		if !after.after(v.Sender.CreationTimestamp.Time, v.Sender.Name) {
			continue
		}
		if len(out.Items) == limit {
			last := out.Items[len(out.Items)-1]
			out.NextCursor = s.cursors.encode(position{Project: project, List: "senders", Time: last.CreatedAt.UnixMicro(), ID: last.ID})
			break
		}
		out.Items = append(out.Items, senderView(v))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSender(w http.ResponseWriter, r *http.Request) {
	v, err := s.senders.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, senderView(v))
}

func (s *Server) updateSender(w http.ResponseWriter, r *http.Request) {
	var req senderRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.senders.Update(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"), req.input())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, senderView(v))
}

func (s *Server) deleteSender(w http.ResponseWriter, r *http.Request) {
	if err := s.senders.Delete(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) rotateSenderSecret(w http.ResponseWriter, r *http.Request) {
	secret, err := s.senders.RotateSecret(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"secret": secret})
}

func (s *Server) activateSenderChannel(w http.ResponseWriter, r *http.Request) {
	v, err := s.senders.Activate(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"), v1alpha1.Channel(r.PathValue("channel")))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, senderView(v))
}

// profileJSON is a WhatsApp business profile on the wire.
type profileJSON struct {
	About             string   `json:"about"`
	Address           string   `json:"address"`
	Description       string   `json:"description"`
	Email             string   `json:"email"`
	ProfilePictureURL string   `json:"profilePictureUrl"`
	Websites          []string `json:"websites"`
	Vertical          string   `json:"vertical"`
}

func profileView(p v1alpha1.BusinessProfile) profileJSON {
	out := profileJSON{About: p.About, Address: p.Address, Description: p.Description, Email: p.Email,
		ProfilePictureURL: p.ProfilePictureURL, Websites: p.Websites, Vertical: p.Vertical}
	if out.Websites == nil {
		out.Websites = []string{}
	}
	if out.Vertical == "" {
		out.Vertical = "UNDEFINED"
	}
	return out
}

func (s *Server) getSenderProfile(w http.ResponseWriter, r *http.Request) {
	p, err := s.senders.Profile(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"profile": profileView(p)})
}

func (s *Server) updateSenderProfile(w http.ResponseWriter, r *http.Request) {
	var in sender.ProfileInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.senders.UpdateProfile(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "profile": profileView(p)})
}

func (s *Server) updateSenderPicture(w http.ResponseWriter, r *http.Request) {
	var in sender.PictureInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.senders.UpdateProfilePicture(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "profile": profileView(p)})
}

func (s *Server) attachTelegram(w http.ResponseWriter, r *http.Request) {
	var in struct {
		BotToken *string `json:"botToken"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.BotToken == nil || *in.BotToken == "" {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "botToken", Message: "is required"}))
		return
	}
	_, bot, err := s.senders.AttachTelegram(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"), *in.BotToken)
	if e := apperror.As(err); e != nil && e.Code == "invalid_bot_token" {
		// invalid_bot_token is v2's code; v1 answers a plain invalid_request.
		e2 := *e
		e2.Code = "invalid_request"
		err = &e2
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"telegram": map[string]any{
		"connected": true, "botId": strconv.FormatInt(bot.ID, 10), "botUsername": bot.Username,
	}})
}

func (s *Server) detachTelegram(w http.ResponseWriter, r *http.Request) {
	if err := s.senders.DetachTelegram(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
