package template

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/templatetext"
)

var (
	nameRe     = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)
	languageRe = regexp.MustCompile(`^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$`)
)

// Limits WhatsApp puts on a template.
const (
	maxBody          = 1024
	maxFooter        = 60
	maxHeaderText    = 60
	maxButtons       = 3
	maxButtonText    = 25
	maxChannelBody   = 4096
	maxInstagramBody = 1000
)

var (
	headerTypes = []string{"text", "image", "video", "document"}
	buttonTypes = []string{string(v1alpha1.ButtonQuickReply), string(v1alpha1.ButtonURL), string(v1alpha1.ButtonPhone),
		string(v1alpha1.ButtonOTP), string(v1alpha1.ButtonRequestContactInfo)}
)

func validCategory(c string) bool {
	return slices.Contains([]v1alpha1.TemplateCategory{v1alpha1.CategoryUtility, v1alpha1.CategoryMarketing,
		v1alpha1.CategoryAuthentication}, v1alpha1.TemplateCategory(c))
}

// specOf checks a create request as WhatsApp's review would and returns the spec it asks for,
// listing every invalid field. A template without a category is a UTILITY one.
func specOf(in Input) (v1alpha1.TemplateSpec, []apperror.FieldError) {
	var errs []apperror.FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, apperror.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	spec := v1alpha1.TemplateSpec{Category: v1alpha1.CategoryUtility}
	switch {
	case in.Name == nil:
		bad("name", "is required")
	case !nameRe.MatchString(*in.Name):
		bad("name", "must be 1 to 512 lowercase letters, digits and underscores")
	default:
		spec.Name = *in.Name
	}
	switch {
	case in.Language == nil:
		bad("language", "is required")
	case !languageRe.MatchString(*in.Language):
		bad("language", "must be a WhatsApp language code such as en, en_US or pt_BR")
	default:
		spec.Language = *in.Language
	}
	switch {
	case in.Body == nil || *in.Body == "":
		bad("body", "is required")
	case len([]rune(*in.Body)) > maxBody:
		bad("body", "must be up to %d characters", maxBody)
	default:
		spec.Body = *in.Body
		if msg := templatetext.CheckPositions(spec.Body); msg != "" {
			bad("body", "%s", msg)
		}
	}
	if in.Category != nil {
		if !validCategory(*in.Category) {
			bad("whatsappCategory", "must be UTILITY, MARKETING or AUTHENTICATION")
		}
		spec.Category = v1alpha1.TemplateCategory(*in.Category)
	}
	if in.Variables != nil {
		spec.Variables = *in.Variables
		if n := len(templatetext.Placeholders(spec.Body)); len(spec.Variables) > n {
			bad("variables", "the body has %d placeholders and %d sample values are given", n, len(spec.Variables))
		}
	}
	for _, f := range []struct {
		path string
		v    *string
	}{{"smsBody", in.SMSBody}, {"telegramBody", in.TelegramBody}, {"instagramBody", in.InstagramBody}} {
		path, v := f.path, f.v
		if v == nil {
			continue
		}
		limit := maxChannelBody
		if path == "instagramBody" {
			limit = maxInstagramBody
		}
		if len([]rune(*v)) > limit {
			bad(path, "must be up to %d characters", limit)
		}
		// A channel's body uses the template's variables, any of them.
		if ps, n := templatetext.Placeholders(*v), len(templatetext.Placeholders(spec.Body)); len(ps) > 0 && ps[len(ps)-1] > n {
			bad(path, "uses {{%d}}, and the body has %d placeholders", ps[len(ps)-1], n)
		}
	}
	spec.SMSBody, spec.TelegramBody, spec.InstagramBody = deref(in.SMSBody), deref(in.TelegramBody), deref(in.InstagramBody)
	errs = append(errs, header(in, &spec)...)
	if in.Footer != nil {
		if len([]rune(*in.Footer)) > maxFooter {
			bad("footer", "must be up to %d characters", maxFooter)
		}
		spec.Footer = *in.Footer
	}
	if in.Buttons != nil {
		if len(*in.Buttons) > maxButtons {
			bad("buttons", "a template has at most %d buttons; %d are given", maxButtons, len(*in.Buttons))
		}
		for i, b := range *in.Buttons {
			button, bErrs := buttonOf(fmt.Sprintf("buttons[%d]", i), b, spec.Category)
			spec.Buttons = append(spec.Buttons, button)
			errs = append(errs, bErrs...)
		}
	}
	if in.AddSecurityRecommendation != nil {
		spec.AddSecurityRecommendation = *in.AddSecurityRecommendation
	}
	if in.CodeExpirationMinutes != nil {
		m := *in.CodeExpirationMinutes
		if m < 1 || m > 90 {
			bad("codeExpirationMinutes", "must be 1 to 90")
		}
		v := int32(m)
		spec.CodeExpirationMinutes = &v
	}
	if spec.Category != v1alpha1.CategoryAuthentication && (spec.AddSecurityRecommendation || spec.CodeExpirationMinutes != nil) {
		bad("whatsappCategory", "addSecurityRecommendation and codeExpirationMinutes are for AUTHENTICATION templates")
	}
	return spec, errs
}

// header reads the header fields: a text header may carry one placeholder; a media header's
// content is a sample file's URL.
func header(in Input, spec *v1alpha1.TemplateSpec) []apperror.FieldError {
	var errs []apperror.FieldError
	if in.HeaderType == nil {
		if in.HeaderContent != nil {
			errs = append(errs, apperror.FieldError{Path: "headerContent", Message: "needs headerType"})
		}
		return errs
	}
	h := &v1alpha1.TemplateHeader{Type: *in.HeaderType, Content: deref(in.HeaderContent)}
	switch {
	case !slices.Contains(headerTypes, h.Type):
		errs = append(errs, apperror.FieldError{Path: "headerType", Message: "must be text, image, video or document"})
	case h.Type == "text" && (h.Content == "" || len([]rune(h.Content)) > maxHeaderText):
		errs = append(errs, apperror.FieldError{Path: "headerContent", Message: fmt.Sprintf("a text header needs 1 to %d characters", maxHeaderText)})
	case h.Type == "text" && len(templatetext.Placeholders(h.Content)) > 1:
		errs = append(errs, apperror.FieldError{Path: "headerContent", Message: "a text header takes at most one placeholder, {{1}}"})
	case h.Type != "text" && h.Content != "" && !strings.HasPrefix(h.Content, "https://"):
		errs = append(errs, apperror.FieldError{Path: "headerContent", Message: "a media header's sample is an https URL"})
	}
	spec.Header = h
	return errs
}

// buttonOf reads one button, with its type's own fields.
func buttonOf(path string, in Button, category v1alpha1.TemplateCategory) (v1alpha1.TemplateButton, []apperror.FieldError) {
	var errs []apperror.FieldError
	bad := func(field, msg string) {
		errs = append(errs, apperror.FieldError{Path: path + "." + field, Message: msg})
	}
	b := v1alpha1.TemplateButton{Text: deref(in.Text), URL: deref(in.URL), Example: deref(in.Example), PhoneNumber: deref(in.PhoneNumber),
		OTPType: deref(in.OTPType), PackageName: deref(in.PackageName), SignatureHash: deref(in.SignatureHash)}
	if in.Type == nil || !slices.Contains(buttonTypes, *in.Type) {
		bad("type", "must be one of "+strings.Join(buttonTypes, ", "))
		return b, errs
	}
	b.Type = v1alpha1.TemplateButtonType(*in.Type)
	if len([]rune(b.Text)) > maxButtonText {
		bad("text", fmt.Sprintf("must be up to %d characters", maxButtonText))
	}
	if b.Type != v1alpha1.ButtonOTP && b.Text == "" {
		bad("text", "is required")
	}
	switch b.Type {
	case v1alpha1.ButtonURL:
		if !strings.HasPrefix(b.URL, "https://") && !strings.HasPrefix(b.URL, "http://") {
			bad("url", "must be an http(s) URL")
		}
		if strings.Contains(b.URL, "{{") && (!strings.HasSuffix(b.URL, "{{1}}") || b.Example == "") {
			bad("url", "a dynamic URL ends in {{1}} and needs an example")
		}
	case v1alpha1.ButtonPhone:
		if !addr.IsE164(b.PhoneNumber) {
			bad("phoneNumber", "must be an E.164 number")
		}
	case v1alpha1.ButtonOTP:
		switch {
		case category != v1alpha1.CategoryAuthentication:
			bad("type", "otp buttons are for AUTHENTICATION templates")
		case b.OTPType != "COPY_CODE" && b.OTPType != "ONE_TAP":
			bad("otpType", "must be COPY_CODE or ONE_TAP")
		case b.OTPType == "ONE_TAP" && (b.PackageName == "" || b.SignatureHash == ""):
			bad("packageName", "a ONE_TAP button needs packageName and signatureHash")
		}
	}
	if b.Type != v1alpha1.ButtonOTP && b.OTPType != "" {
		bad("otpType", "is for otp buttons")
	}
	return b, errs
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
