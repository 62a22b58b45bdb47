package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/template"
)

// Templates (WIRE.md §5): the bare Template for one, a cursor page for the list; v1 submits to
// senderId, v2 to the address from.

type templateButtonJSON struct {
	Type          *string `json:"type"`
	Text          *string `json:"text,omitempty"`
	URL           *string `json:"url,omitempty"`
	Example       *string `json:"example,omitempty"`
	PhoneNumber   *string `json:"phoneNumber,omitempty"`
	OTPType       *string `json:"otpType,omitempty"`
	PackageName   *string `json:"packageName,omitempty"`
	SignatureHash *string `json:"signatureHash,omitempty"`
}

type templateRequest struct {
	Name                      *string               `json:"name"`
	Language                  *string               `json:"language"`
	Body                      *string               `json:"body"`
	WhatsappCategory          *string               `json:"whatsappCategory"`
	HeaderType                *string               `json:"headerType"`
	HeaderContent             *string               `json:"headerContent"`
	Footer                    *string               `json:"footer"`
	Buttons                   *[]templateButtonJSON `json:"buttons"`
	Variables                 *[]string             `json:"variables"`
	SMSBody                   *string               `json:"smsBody"`
	TelegramBody              *string               `json:"telegramBody"`
	InstagramBody             *string               `json:"instagramBody"`
	AddSecurityRecommendation *bool                 `json:"addSecurityRecommendation"`
	CodeExpirationMinutes     *int                  `json:"codeExpirationMinutes"`
}

func (r templateRequest) input() template.Input {
	in := template.Input{Name: r.Name, Language: r.Language, Body: r.Body, Category: r.WhatsappCategory, HeaderType: r.HeaderType,
		HeaderContent: r.HeaderContent, Footer: r.Footer, Variables: r.Variables, SMSBody: r.SMSBody, TelegramBody: r.TelegramBody,
		InstagramBody: r.InstagramBody, AddSecurityRecommendation: r.AddSecurityRecommendation, CodeExpirationMinutes: r.CodeExpirationMinutes}
	if r.Buttons != nil {
		buttons := make([]template.Button, len(*r.Buttons))
		for i, b := range *r.Buttons {
			buttons[i] = template.Button{Type: b.Type, Text: b.Text, URL: b.URL, Example: b.Example, PhoneNumber: b.PhoneNumber,
				OTPType: b.OTPType, PackageName: b.PackageName, SignatureHash: b.SignatureHash}
		}
		in.Buttons = &buttons
	}
	return in
}

type templateWhatsAppJSON struct {
	Namespace    string `json:"namespace,omitempty"`
	Status       string `json:"status,omitempty"`
	TemplateName string `json:"templateName,omitempty"`
}

type templateJSON struct {
	ID                        string                `json:"id"`
	Name                      string                `json:"name"`
	Language                  string                `json:"language"`
	Body                      string                `json:"body"`
	Category                  string                `json:"category"`
	Status                    string                `json:"status"`
	RejectionReason           *string               `json:"rejectionReason"`
	HeaderType                string                `json:"headerType,omitempty"`
	HeaderContent             string                `json:"headerContent,omitempty"`
	Footer                    string                `json:"footer,omitempty"`
	Buttons                   []templateButtonJSON  `json:"buttons"`
	Variables                 []string              `json:"variables"`
	SMSBody                   string                `json:"smsBody,omitempty"`
	TelegramBody              string                `json:"telegramBody,omitempty"`
	InstagramBody             string                `json:"instagramBody,omitempty"`
	AddSecurityRecommendation bool                  `json:"addSecurityRecommendation"`
	CodeExpirationMinutes     *int32                `json:"codeExpirationMinutes,omitempty"`
	WhatsApp                  *templateWhatsAppJSON `json:"whatsapp,omitempty"`
	CreatedAt                 time.Time             `json:"createdAt"`
	UpdatedAt                 time.Time             `json:"updatedAt"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func templateView(t *v1alpha1.Template) templateJSON {
	spec, st := t.Spec, t.Status
	out := templateJSON{ID: t.Name, Name: spec.Name, Language: spec.Language, Body: spec.Body, Category: string(st.Category),
		Status: string(st.State), RejectionReason: strPtr(st.RejectionReason), Footer: spec.Footer, Buttons: []templateButtonJSON{},
		Variables: append([]string{}, spec.Variables...), SMSBody: spec.SMSBody, TelegramBody: spec.TelegramBody,
		InstagramBody: spec.InstagramBody, AddSecurityRecommendation: spec.AddSecurityRecommendation,
		CodeExpirationMinutes: spec.CodeExpirationMinutes, CreatedAt: t.CreationTimestamp.UTC(), UpdatedAt: updatedAtOf(t.CreationTimestamp.Time, t.ManagedFields)}
	if out.Category == "" {
		out.Category = string(spec.Category)
	}
	if out.Status == "" {
		out.Status = string(v1alpha1.TemplateDraft)
	}
	if spec.Header != nil {
		out.HeaderType, out.HeaderContent = spec.Header.Type, spec.Header.Content
	}
	for _, b := range spec.Buttons {
		typ := string(b.Type)
		out.Buttons = append(out.Buttons, templateButtonJSON{Type: &typ, Text: strPtr(b.Text), URL: strPtr(b.URL), Example: strPtr(b.Example),
			PhoneNumber: strPtr(b.PhoneNumber), OTPType: strPtr(b.OTPType), PackageName: strPtr(b.PackageName), SignatureHash: strPtr(b.SignatureHash)})
	}
	if st.ProviderStatus != "" || st.TemplateName != "" {
		out.WhatsApp = &templateWhatsAppJSON{Namespace: st.Namespace, Status: st.ProviderStatus, TemplateName: st.TemplateName}
	}
	return out
}

func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request) {
	var req templateRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.templates.Create(r.Context(), keyFrom(r.Context()).Project, req.input())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, templateView(t))
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "templates")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.templates.List(r.Context(), project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var rows []*v1alpha1.Template
	for i := range all {
		if after.after(all[i].CreationTimestamp.Time, all[i].Name) {
			rows = append(rows, &all[i])
		}
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, project, "templates", rows, limit,
		func(t *v1alpha1.Template) (time.Time, string) { return t.CreationTimestamp.Time, t.Name }, templateView))
}

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) {
	t, err := s.templates.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("templateId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, templateView(t))
}

func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request) {
	if err := s.templates.Delete(r.Context(), keyFrom(r.Context()).Project, r.PathValue("templateId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type submitRequest struct {
	SenderID *string `json:"senderId"`
	From     *string `json:"from"`
	Category *string `json:"category"`
}

// submitTemplate submits to the sender v1 names (senderId) or whose address v2 gives (from);
// a test key submits to the sandbox.
func (s *Server) submitTemplate(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	sender := ""
	switch {
	case isV2(r) && (req.From == nil || *req.From == ""):
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "from", Message: "is required: the WhatsApp address whose business account reviews the template"}))
		return
	case isV2(r):
		id, err := s.senders.SenderAt(r.Context(), key.Project, *req.From, v1alpha1.ChannelWhatsApp)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		sender = id
	case req.SenderID == nil || *req.SenderID == "":
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: "is required"}))
		return
	default:
		sender = *req.SenderID
	}
	t, err := s.templates.Submit(r.Context(), key.Project, r.PathValue("templateId"), sender, req.Category, key.TestMode())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, templateView(t))
}

func (s *Server) syncTemplates(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SenderID *string `json:"senderId"`
	}
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	res, err := s.templates.Sync(r.Context(), key.Project, req.SenderID, key.TestMode())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
