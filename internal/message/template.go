package message

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/templatetext"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// templateResolved checks a template send against its Template (content.templateId, a
// Template of the project): on WhatsApp only an approved one goes, and its variables must be
// exactly those its body, header and buttons take; on every other channel its body for that
// channel (smsBody, telegramBody, instagramBody, else body) is rendered with the variables and
// the message goes as that text.
type templateResolved struct{ reader client.Reader }

func (p templateResolved) CheckAccept(ctx context.Context, o *Outbound) error {
	if o.MessageType != "template" || o.Content == nil {
		return nil
	}
	t, err := p.template(ctx, o.Project, o.Content.TemplateID)
	if err != nil {
		return err
	}
	if errs := templateVariables(t, o.Content, o.Channel); len(errs) > 0 {
		return apperror.InvalidFields(errs...)
	}
	if o.Channel == string(v1alpha1.ChannelWhatsApp) {
		if t.Status.State == v1alpha1.TemplateApproved && t.Status.Sandbox && !o.TestMode {
			// The sandbox's approval is test traffic's: live sends need the provider's.
			e := apperror.InvalidFields(apperror.FieldError{Path: "content.templateId", Message: fmt.Sprintf(
				"template %s is approved by the sandbox only, which test keys use: live WhatsApp sends need the provider's approval (submit it with a live key: POST /v1/templates/%s/submit)", t.Name, t.Name)})
			e.Code = "template_not_approved"
			return e
		}
		if t.Status.State != v1alpha1.TemplateApproved {
			state := t.Status.State
			if state == "" {
				state = v1alpha1.TemplateDraft
			}
			e := apperror.InvalidFields(apperror.FieldError{Path: "content.templateId", Message: fmt.Sprintf(
				"template %s is %s: WhatsApp sends approved templates only (submit it: POST /v1/templates/%s/submit)", t.Name, state, t.Name)})
			e.Code = "template_not_approved"
			return e
		}
		return nil
	}
	o.Text = templatetext.Render(channelBody(t, o.Channel), o.Content.TemplateVars)
	o.MessageType = "text"
	return nil
}

func (p templateResolved) template(ctx context.Context, project, id string) (*v1alpha1.Template, error) {
	var t v1alpha1.Template
	err := p.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: id}, &t)
	if apierrors.IsNotFound(err) || (err == nil && !t.DeletionTimestamp.IsZero()) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "content.templateId", Message: fmt.Sprintf("no template %s in this project", id)})
	}
	if err != nil {
		return nil, fmt.Errorf("read template %s: %w", id, err)
	}
	return &t, nil
}

// channelBody is the body a channel renders.
func channelBody(t *v1alpha1.Template, channel string) string {
	var body string
	switch v1alpha1.Channel(channel) {
	case v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway:
		body = t.Spec.SMSBody
	case v1alpha1.ChannelTelegram:
		body = t.Spec.TelegramBody
	case v1alpha1.ChannelInstagram:
		body = t.Spec.InstagramBody
	}
	if body == "" {
		body = t.Spec.Body
	}
	return body
}

// templateVariables lists what a send's variables lack or have too many of. On WhatsApp: the
// body's (templateVariables), the header's (templateHeaderVariables: the {{1}} of a text
// header; a media header takes content.mediaUrl or mediaId) and the buttons' (templateButtonVariables
// by button index: the {{1}} of a dynamic URL, an otp button's code). On another channel: the
// variables its body uses, and none the template does not have.
func templateVariables(t *v1alpha1.Template, c *transport.Content, channel string) []apperror.FieldError {
	var errs []apperror.FieldError
	mismatch := func(path string, m templatetext.Mismatch) {
		if !m.Empty() {
			errs = append(errs, apperror.FieldError{Path: path, Message: m.String()})
		}
	}
	body := t.Spec.Body
	if channel != string(v1alpha1.ChannelWhatsApp) {
		missing := templatetext.Match(channelBody(t, channel), c.TemplateVars).Missing
		extra := templatetext.Match(body, c.TemplateVars).Extra
		mismatch("content.templateVariables", templatetext.Mismatch{Missing: missing, Extra: extra})
		return errs
	}
	mismatch("content.templateVariables", templatetext.Match(body, c.TemplateVars))
	header := ""
	if h := t.Spec.Header; h != nil && h.Type == "text" {
		header = h.Content
	}
	switch {
	case header == "" && len(c.TemplateHeader) > 0:
		errs = append(errs, apperror.FieldError{Path: "content.templateHeaderVariables", Message: "the template's header takes no variable"})
	case header != "":
		mismatch("content.templateHeaderVariables", templatetext.Match(header, c.TemplateHeader))
	}
	if h := t.Spec.Header; h != nil && h.Type != "text" && c.MediaURL == "" && c.MediaID == "" {
		errs = append(errs, apperror.FieldError{Path: "content.mediaUrl", Message: fmt.Sprintf("the template's %s header needs the file to show", h.Type)})
	}
	want := map[string]bool{}
	for i, b := range t.Spec.Buttons {
		if (b.Type == v1alpha1.ButtonURL && strings.Contains(b.URL, "{{1}}")) || b.Type == v1alpha1.ButtonOTP {
			want[strconv.Itoa(i)] = true
		}
	}
	var missing, extra []string
	for k := range want {
		if _, ok := c.TemplateButtons[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range c.TemplateButtons {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	mismatch("content.templateButtonVariables", templatetext.Mismatch{Missing: missing, Extra: extra})
	return errs
}

// ErrTemplateNotFound fails a WhatsApp template message whose Template was deleted, or is no
// longer approved (for a live message: by the provider, not the sandbox), between the accept
// and the dispatch.
const ErrTemplateNotFound = "TEMPLATE_NOT_FOUND"

// outboundTemplate resolves a WhatsApp template message's Template into what the transport
// sends: the provider's name and language, and the parameters in the provider's order.
func (s *Service) outboundTemplate(ctx context.Context, project string, testMode bool, c *transport.Content) (*transport.OutboundTemplate, error) {
	var t v1alpha1.Template
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: c.TemplateID}, &t)
	if apierrors.IsNotFound(err) || (err == nil && (t.Status.State != v1alpha1.TemplateApproved || (t.Status.Sandbox && !testMode))) {
		return nil, &transport.Failure{Code: ErrTemplateNotFound,
			Message: fmt.Sprintf("Template %s was deleted, or is no longer approved, before the message went out.", c.TemplateID)}
	}
	if err != nil {
		return nil, fmt.Errorf("read template %s: %w", c.TemplateID, err)
	}
	name := t.Status.TemplateName
	if name == "" {
		name = t.Spec.Name
	}
	out := &transport.OutboundTemplate{Name: name, Language: t.Spec.Language,
		BodyParams: templatetext.Ordered(t.Spec.Body, c.TemplateVars)}
	if h := t.Spec.Header; h != nil {
		out.HeaderType = h.Type
		if h.Type == "text" {
			out.HeaderParams = templatetext.Ordered(h.Content, c.TemplateHeader)
		} else {
			out.HeaderMediaURL = c.MediaURL
		}
	}
	for i, b := range t.Spec.Buttons {
		v, ok := c.TemplateButtons[strconv.Itoa(i)]
		if !ok {
			continue
		}
		sub := "url"
		if b.Type == v1alpha1.ButtonOTP {
			sub = "copy_code"
		}
		out.Buttons = append(out.Buttons, transport.TemplateButtonParam{Index: i, SubType: sub, Value: v})
	}
	return out, nil
}
