package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/templatereview"
	metatransport "github.com/switchboard-io/switchboard/internal/transport/meta"
)

var _ templatereview.Account = (*Registry)(nil)

// SubmitTemplate implements templatereview.Account: the template goes to the WhatsApp business
// account of the sender, through the meta Provider its WhatsApp channel uses (with the
// account's own token when the Sender names one).
func (r *Registry) SubmitTemplate(ctx context.Context, snd *v1alpha1.Sender, t *v1alpha1.Template) (templatereview.Submitted, error) {
	p, reason, err := r.provider(ctx, snd, v1alpha1.ChannelWhatsApp)
	if err != nil {
		return templatereview.Submitted{}, err
	}
	if p == nil || p.Spec.Type != v1alpha1.ProviderMeta {
		if p != nil {
			reason = fmt.Sprintf("Provider %s is of type %s", p.Name, p.Spec.Type)
		}
		return templatereview.Submitted{}, fmt.Errorf("%w: %s", templatereview.ErrNoAccount, reason)
	}
	client, err := r.MetaOf(ctx, p)
	if err != nil {
		return templatereview.Submitted{}, err
	}
	token := ""
	if snd.Credentials(v1alpha1.ChannelWhatsApp) != nil {
		if token, err = r.accountToken(ctx, snd, v1alpha1.ChannelWhatsApp); err != nil {
			return templatereview.Submitted{}, err
		}
	}
	id, status, category, err := client.CreateTemplate(ctx, token, snd.Spec.WhatsApp.BusinessAccountID, TemplateDef(t))
	if err != nil {
		return templatereview.Submitted{}, err
	}
	return templatereview.Submitted{ID: id, Status: status, Category: category}, nil
}

// TemplateDef is a Template as Meta's message_templates endpoint takes it: the body's sample
// values as its examples, a text header's {{1}} sample the first of them.
func TemplateDef(t *v1alpha1.Template) metatransport.TemplateDef {
	spec := t.Spec
	d := metatransport.TemplateDef{Name: spec.Name, Language: spec.Language, Category: string(spec.Category), Body: spec.Body,
		BodyExamples: spec.Variables, Footer: spec.Footer, AddSecurityRecommendation: spec.AddSecurityRecommendation}
	if spec.CodeExpirationMinutes != nil {
		d.CodeExpirationMinutes = int(*spec.CodeExpirationMinutes)
	}
	if h := spec.Header; h != nil {
		d.HeaderType = h.Type
		if h.Type == "text" {
			d.HeaderText = h.Content
			if len(spec.Variables) > 0 {
				d.HeaderExample = spec.Variables[0]
			}
		} else {
			d.HeaderExample = h.Content
		}
	}
	for _, b := range spec.Buttons {
		d.Buttons = append(d.Buttons, metatransport.TemplateButton{Type: string(b.Type), Text: b.Text, URL: b.URL, Example: b.Example,
			PhoneNumber: b.PhoneNumber, OTPType: b.OTPType, PackageName: b.PackageName, SignatureHash: b.SignatureHash})
	}
	return d
}

// ListTemplates implements templatereview.Account: the templates of the sender's WhatsApp
// business account, as Switchboard's specs and Meta's verdicts.
func (r *Registry) ListTemplates(ctx context.Context, snd *v1alpha1.Sender) ([]templatereview.Listed, error) {
	t, token, err := r.whatsAppAccount(ctx, snd)
	if err != nil {
		return nil, err
	}
	if t == nil || snd.Spec.WhatsApp == nil || snd.Spec.WhatsApp.BusinessAccountID == "" {
		return nil, fmt.Errorf("%w: its WhatsApp goes through no meta Provider", templatereview.ErrNoAccount)
	}
	infos, err := t.ListTemplates(ctx, token, snd.Spec.WhatsApp.BusinessAccountID)
	if err != nil {
		return nil, err
	}
	out := make([]templatereview.Listed, 0, len(infos))
	for _, info := range infos {
		out = append(out, templatereview.Listed{ID: info.ID, Status: info.Status, Category: info.Category,
			Reason: info.RejectedReason, Spec: specOf(info)})
	}
	return out, nil
}

// specOf reads a listed template's components back into a spec.
func specOf(info metatransport.TemplateInfo) v1alpha1.TemplateSpec {
	spec := v1alpha1.TemplateSpec{Name: info.Name, Language: info.Language, Category: v1alpha1.TemplateCategory(info.Category)}
	for _, c := range info.Components {
		switch c.Type {
		case "HEADER":
			h := &v1alpha1.TemplateHeader{Type: strings.ToLower(c.Format)}
			if h.Type == "text" {
				h.Content = c.Text
			}
			spec.Header = h
		case "BODY":
			spec.Body = c.Text
			spec.AddSecurityRecommendation = c.AddSecurityRecommendation
		case "FOOTER":
			spec.Footer = c.Text
			if c.CodeExpirationMinutes > 0 {
				m := int32(c.CodeExpirationMinutes)
				spec.CodeExpirationMinutes = &m
			}
		case "BUTTONS":
			for _, b := range c.Buttons {
				typ := map[string]v1alpha1.TemplateButtonType{"QUICK_REPLY": v1alpha1.ButtonQuickReply, "URL": v1alpha1.ButtonURL,
					"PHONE_NUMBER": v1alpha1.ButtonPhone, "OTP": v1alpha1.ButtonOTP}[b.Type]
				if typ == "" {
					continue // a kind Switchboard does not model (a flow, a catalog)
				}
				spec.Buttons = append(spec.Buttons, v1alpha1.TemplateButton{Type: typ, Text: b.Text, URL: b.URL, PhoneNumber: b.PhoneNumber})
			}
		}
	}
	if spec.Body == "" {
		spec.Body = "(" + info.Name + ")" // an authentication template's body is Meta's own
	}
	return spec
}

// DeleteTemplate implements templatereview.Account: the template of that name and id is deleted
// from the sender's WhatsApp business account.
func (r *Registry) DeleteTemplate(ctx context.Context, snd *v1alpha1.Sender, name, id string) error {
	t, token, err := r.whatsAppAccount(ctx, snd)
	if err != nil {
		return err
	}
	if t == nil || snd.Spec.WhatsApp == nil || snd.Spec.WhatsApp.BusinessAccountID == "" {
		return fmt.Errorf("%w: sender %s has no WhatsApp through a meta Provider", templatereview.ErrNoAccount, snd.Name)
	}
	return t.DeleteTemplate(ctx, token, snd.Spec.WhatsApp.BusinessAccountID, name, id)
}
