package meta

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Template categories.
const (
	CategoryUtility        = "UTILITY"
	CategoryMarketing      = "MARKETING"
	CategoryAuthentication = "AUTHENTICATION"
)

// TemplateDef is a message template to submit to a WhatsApp Business Account.
type TemplateDef struct {
	Name, Language string
	// Category is UTILITY, MARKETING or AUTHENTICATION (any case).
	Category string
	// HeaderType is text, image, video, document or "" (none). HeaderText is a text header
	// (it may hold {{1}}); HeaderExample is the example of that {{1}}, or for a media header
	// the handle of an example file uploaded through Meta's Resumable Upload API.
	HeaderType    string
	HeaderText    string
	HeaderExample string
	// Body may hold {{1}}, {{2}} …; BodyExamples are their examples, in order (Meta wants them
	// whenever the body has variables).
	Body         string
	BodyExamples []string
	Footer       string
	Buttons      []TemplateButton
	// Authentication templates have a body and footer Meta writes: these choose its security
	// sentence ("For your security, do not share this code.") and its expiry sentence.
	AddSecurityRecommendation bool
	CodeExpirationMinutes     int
}

// TemplateButton is a button of a template.
type TemplateButton struct {
	// Type is quick_reply, url, phone, copy_code, request_contact_info, or otp (the one button
	// of an authentication template).
	Type string
	Text string
	// URL may end in {{1}}; Example is then its example (the full URL). For copy_code, Example
	// is the example code.
	URL, Example string
	PhoneNumber  string
	// OTPType is COPY_CODE or ONE_TAP; a one-tap button names the Android app that fills the
	// code in by its package name and signature hash.
	OTPType, PackageName, SignatureHash string
}

// TemplateInfo is a template as Meta lists it.
type TemplateInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Language string `json:"language"`
	// Status is APPROVED, PENDING, REJECTED, PAUSED, DISABLED, IN_APPEAL…
	Status         string              `json:"status"`
	Category       string              `json:"category"`
	RejectedReason string              `json:"rejected_reason,omitempty"`
	Components     []TemplateComponent `json:"components"`
}

// TemplateComponent is one component of a listed template.
type TemplateComponent struct {
	// Type is HEADER, BODY, FOOTER or BUTTONS; Format a header's TEXT, IMAGE, VIDEO, DOCUMENT.
	Type    string `json:"type"`
	Format  string `json:"format,omitempty"`
	Text    string `json:"text,omitempty"`
	Buttons []struct {
		Type        string `json:"type"`
		Text        string `json:"text,omitempty"`
		URL         string `json:"url,omitempty"`
		PhoneNumber string `json:"phone_number,omitempty"`
	} `json:"buttons,omitempty"`
	AddSecurityRecommendation bool `json:"add_security_recommendation,omitempty"`
	CodeExpirationMinutes     int  `json:"code_expiration_minutes,omitempty"`
}

// CreateTemplate submits d to the WhatsApp Business Account (POST /{waba-id}/message_templates)
// and returns Meta's id for it, its status (PENDING while Meta reviews it, sometimes APPROVED
// at once) and its category (which Meta may change). An empty token is the Provider's.
func (t *Transport) CreateTemplate(ctx context.Context, token, wabaID string, d TemplateDef) (id, status, category string, err error) {
	components, err := templateComponents(d)
	if err != nil {
		return "", "", "", err
	}
	body := obj{"name": d.Name, "language": d.Language, "category": strings.ToUpper(d.Category), "components": components}
	var out struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Category string `json:"category"`
	}
	const op = "create template"
	if err := t.call(ctx, request{op: op, method: http.MethodPost, path: []string{wabaID, "message_templates"},
		body: body, token: t.token(token)}, &out); err != nil {
		return "", "", "", err
	}
	if out.ID == "" {
		return "", "", "", acceptedUnreadable(op)
	}
	return out.ID, out.Status, out.Category, nil
}

// templateComponents are d's components as Meta's create request takes them; an authentication
// template's are Meta's special form (a body and footer Meta writes, one OTP button).
func templateComponents(d TemplateDef) ([]obj, error) {
	if d.Name == "" || d.Language == "" {
		return nil, invalid("A template needs a name and a language.")
	}
	if strings.EqualFold(d.Category, CategoryAuthentication) {
		return authComponents(d)
	}
	if d.Body == "" {
		return nil, invalid("A template needs a body.")
	}
	var cs []obj
	switch h := strings.ToLower(d.HeaderType); h {
	case "":
	case "text":
		header := obj{"type": "HEADER", "format": "TEXT", "text": d.HeaderText}
		if strings.Contains(d.HeaderText, "{{") {
			header["example"] = obj{"header_text": []string{d.HeaderExample}}
		}
		cs = append(cs, header)
	case "image", "video", "document":
		if d.HeaderExample == "" {
			return nil, invalid("A %s header needs an example file: its upload handle.", h)
		}
		cs = append(cs, obj{"type": "HEADER", "format": strings.ToUpper(h), "example": obj{"header_handle": []string{d.HeaderExample}}})
	default:
		return nil, invalid("A template header is text, image, video or document, not %q.", d.HeaderType)
	}
	body := obj{"type": "BODY", "text": d.Body}
	if len(d.BodyExamples) > 0 {
		body["example"] = obj{"body_text": [][]string{d.BodyExamples}}
	}
	cs = append(cs, body)
	if d.Footer != "" {
		cs = append(cs, obj{"type": "FOOTER", "text": d.Footer})
	}
	if len(d.Buttons) > 0 {
		buttons := make([]obj, len(d.Buttons))
		for i, b := range d.Buttons {
			var err error
			if buttons[i], err = templateButton(b); err != nil {
				return nil, err
			}
		}
		cs = append(cs, obj{"type": "BUTTONS", "buttons": buttons})
	}
	return cs, nil
}

func templateButton(b TemplateButton) (obj, error) {
	switch strings.ToLower(b.Type) {
	case "quick_reply":
		return obj{"type": "QUICK_REPLY", "text": b.Text}, nil
	case "url":
		o := obj{"type": "URL", "text": b.Text, "url": b.URL}
		if strings.Contains(b.URL, "{{") {
			o["example"] = []string{b.Example}
		}
		return o, nil
	case "phone", "phone_number":
		return obj{"type": "PHONE_NUMBER", "text": b.Text, "phone_number": b.PhoneNumber}, nil
	case "copy_code":
		return obj{"type": "COPY_CODE", "example": b.Example}, nil
	case "request_contact_info":
		return obj{"type": "REQUEST_CONTACT_INFO"}, nil
	case "otp":
		return nil, invalid("An otp button belongs to an authentication template only.")
	}
	return nil, invalid("A template button is quick_reply, url, phone, copy_code, request_contact_info or otp, not %q.", b.Type)
}

// authComponents: Meta writes an authentication template's text ("{{1}} is your verification
// code.") and takes only its options: the security recommendation, the code's expiry, and one
// OTP button (copy code unless the button asks for one tap).
func authComponents(d TemplateDef) ([]obj, error) {
	if d.CodeExpirationMinutes < 0 || d.CodeExpirationMinutes > 90 {
		return nil, invalid("An authentication code expires in 1 to 90 minutes, not %d.", d.CodeExpirationMinutes)
	}
	var otp TemplateButton
	switch {
	case len(d.Buttons) > 1:
		return nil, invalid("An authentication template has one button, its otp button.")
	case len(d.Buttons) == 1 && !strings.EqualFold(d.Buttons[0].Type, "otp"):
		return nil, invalid("An authentication template's button is otp, not %q.", d.Buttons[0].Type)
	case len(d.Buttons) == 1:
		otp = d.Buttons[0]
	}
	button := obj{"type": "OTP"}
	switch strings.ToUpper(otp.OTPType) {
	case "", "COPY_CODE":
		button["otp_type"] = "COPY_CODE"
	case "ONE_TAP":
		if otp.PackageName == "" || otp.SignatureHash == "" {
			return nil, invalid("A one-tap button needs the Android app's package name and signature hash.")
		}
		button["otp_type"] = "ONE_TAP"
		button["supported_apps"] = []obj{{"package_name": otp.PackageName, "signature_hash": otp.SignatureHash}}
	default:
		return nil, invalid("An otp button is COPY_CODE or ONE_TAP, not %q.", otp.OTPType)
	}
	if otp.Text != "" {
		button["text"] = otp.Text
	}
	cs := []obj{{"type": "BODY", "add_security_recommendation": d.AddSecurityRecommendation}}
	if d.CodeExpirationMinutes > 0 {
		cs = append(cs, obj{"type": "FOOTER", "code_expiration_minutes": d.CodeExpirationMinutes})
	}
	return append(cs, obj{"type": "BUTTONS", "buttons": []obj{button}}), nil
}

// templatePageSize is how many templates one page holds (Meta's largest is 100 or so; more pages
// follow by cursor).
const templatePageSize = "100"

// maxTemplatePages stops a listing that never ends (a cursor that does not move).
const maxTemplatePages = 1000

// ListTemplates lists every template of the WhatsApp Business Account
// (GET /{waba-id}/message_templates), following the pages' cursors while Meta names a next
// page. The next page is asked for with the after cursor on the configured base URL: the token
// never goes to a URL Meta's answer names. An empty token is the Provider's.
func (t *Transport) ListTemplates(ctx context.Context, token, wabaID string) ([]TemplateInfo, error) {
	var all []TemplateInfo
	after := ""
	for range maxTemplatePages {
		q := url.Values{"fields": {"id,name,language,status,category,rejected_reason,components"}, "limit": {templatePageSize}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Data   []TemplateInfo `json:"data"`
			Paging struct {
				Cursors struct {
					After string `json:"after"`
				} `json:"cursors"`
				Next string `json:"next"`
			} `json:"paging"`
		}
		if err := t.call(ctx, request{op: "list templates", method: http.MethodGet, path: []string{wabaID, "message_templates"},
			query: q, token: t.token(token)}, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		next := page.Paging.Cursors.After
		if page.Paging.Next == "" || next == "" || next == after {
			return all, nil
		}
		after = next
	}
	return nil, fmt.Errorf("meta: list templates: more than %d pages", maxTemplatePages)
}

// DeleteTemplate deletes a template of the WhatsApp Business Account
// (DELETE /{waba-id}/message_templates?name=…): every language of the name, or with templateID
// the one template of that id (hsm_id). An empty token is the Provider's.
func (t *Transport) DeleteTemplate(ctx context.Context, token, wabaID, name, templateID string) error {
	q := url.Values{"name": {name}}
	if templateID != "" {
		q.Set("hsm_id", templateID)
	}
	return t.callForSuccess(ctx, request{op: "delete template", method: http.MethodDelete, path: []string{wabaID, "message_templates"},
		query: q, token: t.token(token)})
}
