package tendlc

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Campaign statuses: a draft is Switchboard's alone; submitted, it is pending until the
// carriers' review approves or rejects it. A rejected campaign is not resubmitted: its faults are
// fixed in a new one.
const (
	CampaignDraft    = "draft"
	CampaignPending  = "pending"
	CampaignApproved = "approved"
	CampaignRejected = "rejected"
)

// UseCase is one of The Campaign Registry's campaign use cases.
type UseCase struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// UseCases are the standard use cases a brand's campaign may declare (GET
// /v1/10dlc/brands/use-cases). Special use cases (political, charity, sweepstakes, ...) need a
// carrier's vetting outside this API.
var UseCases = []UseCase{
	{"2FA", "One-time passwords and authentication codes."},
	{"ACCOUNT_NOTIFICATION", "Notices about the state of an account the recipient holds."},
	{"CUSTOMER_CARE", "Conversations about a customer's account or support."},
	{"DELIVERY_NOTIFICATION", "The status of a product or service being delivered."},
	{"FRAUD_ALERT", "Warnings of possibly fraudulent activity on an account."},
	{"HIGHER_EDUCATION", "Messages of colleges and universities to their students."},
	{"LOW_VOLUME", "A mix of use cases at a low volume (a few thousand messages a day at most)."},
	{"MARKETING", "Promotional and advertising content."},
	{"MIXED", "Several of the standard use cases from one campaign."},
	{"POLLING_VOTING", "Surveys and polls, not for political campaigns."},
	{"PUBLIC_SERVICE_ANNOUNCEMENT", "Information that raises awareness of a public matter."},
	{"SECURITY_ALERT", "Notices that a system or account may have been compromised."},
}

// mixedUseCases may carry sub-use cases.
var mixedUseCases = []string{"MIXED", "LOW_VOLUME"}

// keyword is an opt-in or opt-out word: one token of letters and digits.
var keyword = regexp.MustCompile(`^[A-Za-z0-9]{1,30}$`)

// Fees of a campaign in US cents, as the carriers' registry charges them through the provider
// (the provider bills them to the installation's account; Switchboard shows them).
func fees(useCase string) (registration, monthly int32) {
	if useCase == "LOW_VOLUME" {
		return 200, 200
	}
	return 1500, 1000
}

// CampaignInput is a campaign's create or update request: nil is a field not given.
type CampaignInput struct {
	BrandID            *string   `json:"brandId"`
	Name               *string   `json:"name"`
	Description        *string   `json:"description"`
	UseCase            *string   `json:"useCase"`
	SampleMessages     *[]string `json:"sampleMessages"`
	AffiliateMarketing *bool     `json:"affiliateMarketing"`
	AgeGated           *bool     `json:"ageGated"`
	DirectLending      *bool     `json:"directLending"`
	EmbeddedLink       *bool     `json:"embeddedLink"`
	EmbeddedPhone      *bool     `json:"embeddedPhone"`
	NumberPooling      *bool     `json:"numberPooling"`
	SubscriberHelp     *bool     `json:"subscriberHelp"`
	SubscriberOptIn    *bool     `json:"subscriberOptIn"`
	SubscriberOptOut   *bool     `json:"subscriberOptOut"`
	HelpMessage        *string   `json:"helpMessage"`
	MessageFlow        *string   `json:"messageFlow"`
	OptInKeywords      *[]string `json:"optInKeywords"`
	OptOutKeywords     *[]string `json:"optOutKeywords"`
	SubUseCases        *[]string `json:"subUseCases"`
}

// CampaignDetails is what the client said of its campaign, kept as given.
type CampaignDetails struct {
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	UseCase            string   `json:"useCase"`
	SampleMessages     []string `json:"sampleMessages"`
	AffiliateMarketing bool     `json:"affiliateMarketing"`
	AgeGated           bool     `json:"ageGated"`
	DirectLending      bool     `json:"directLending"`
	EmbeddedLink       bool     `json:"embeddedLink"`
	EmbeddedPhone      bool     `json:"embeddedPhone"`
	NumberPooling      bool     `json:"numberPooling"`
	SubscriberHelp     bool     `json:"subscriberHelp"`
	SubscriberOptIn    bool     `json:"subscriberOptIn"`
	SubscriberOptOut   bool     `json:"subscriberOptOut"`
	HelpMessage        string   `json:"helpMessage,omitempty"`
	MessageFlow        string   `json:"messageFlow,omitempty"`
	OptInKeywords      []string `json:"optInKeywords,omitempty"`
	OptOutKeywords     []string `json:"optOutKeywords,omitempty"`
	SubUseCases        []string `json:"subUseCases,omitempty"`
}

// Campaign is a campaign as the API shows it (the published client's TenDlcCampaign).
type Campaign struct {
	ID      string `json:"id"`
	BrandID string `json:"brandId"`
	CampaignDetails
	Status                string     `json:"status"`
	DailyLimit            *int32     `json:"dailyLimit,omitempty"`
	FailureReason         *string    `json:"failureReason,omitempty"`
	MonthlyFeeCents       *int32     `json:"monthlyFeeCents,omitempty"`
	RegistrationCostCents *int32     `json:"registrationCostCents,omitempty"`
	CreatedAt             time.Time  `json:"createdAt"`
	UpdatedAt             time.Time  `json:"updatedAt"`
	SubmittedAt           *time.Time `json:"submittedAt,omitempty"`
	ApprovedAt            *time.Time `json:"approvedAt,omitempty"`

	Project      string `json:"-"`
	TestMode     bool   `json:"-"`
	ProviderRef  string `json:"-"`
	ProviderData []byte `json:"-"`
}

// apply merges the input into d (create: every required field must be given; update: what is
// given replaces) and returns the field errors. brandId is the service's to check.
func (in CampaignInput) apply(d *CampaignDetails, create bool) []apperror.FieldError {
	errs := applyTexts([]text{
		{"name", in.Name, &d.Name, true, 100},
		{"description", in.Description, &d.Description, true, 4096},
		{"useCase", in.UseCase, &d.UseCase, true, 40},
		{"helpMessage", in.HelpMessage, &d.HelpMessage, false, 255},
		{"messageFlow", in.MessageFlow, &d.MessageFlow, false, 2048},
	}, create)
	flags := []struct {
		path  string
		given *bool
		into  *bool
	}{
		{"affiliateMarketing", in.AffiliateMarketing, &d.AffiliateMarketing}, {"ageGated", in.AgeGated, &d.AgeGated},
		{"directLending", in.DirectLending, &d.DirectLending}, {"embeddedLink", in.EmbeddedLink, &d.EmbeddedLink},
		{"embeddedPhone", in.EmbeddedPhone, &d.EmbeddedPhone}, {"numberPooling", in.NumberPooling, &d.NumberPooling},
		{"subscriberHelp", in.SubscriberHelp, &d.SubscriberHelp}, {"subscriberOptIn", in.SubscriberOptIn, &d.SubscriberOptIn},
		{"subscriberOptOut", in.SubscriberOptOut, &d.SubscriberOptOut},
	}
	for _, f := range flags {
		switch {
		case f.given != nil:
			*f.into = *f.given
		case create:
			errs = append(errs, apperror.FieldError{Path: f.path, Message: "is required (true or false)"})
		}
	}
	if in.Description != nil && len([]rune(strings.TrimSpace(*in.Description))) < 40 {
		errs = append(errs, apperror.FieldError{Path: "description", Message: "must be at least 40 characters: what the campaign sends, to whom and why"})
	}
	if in.MessageFlow != nil && *in.MessageFlow != "" && len([]rune(*in.MessageFlow)) < 40 {
		errs = append(errs, apperror.FieldError{Path: "messageFlow", Message: "must be at least 40 characters: how a recipient opts in"})
	}
	if in.HelpMessage != nil && *in.HelpMessage != "" && len([]rune(*in.HelpMessage)) < 20 {
		errs = append(errs, apperror.FieldError{Path: "helpMessage", Message: "must be at least 20 characters"})
	}
	if in.UseCase != nil && !knownUseCase(d.UseCase) {
		errs = append(errs, apperror.FieldError{Path: "useCase", Message: "must be one of GET /v1/10dlc/brands/use-cases"})
	}
	switch {
	case in.SampleMessages != nil:
		errs = append(errs, listErrors("sampleMessages", *in.SampleMessages, 1, 5, func(s string) string {
			if n := len([]rune(strings.TrimSpace(s))); n < 20 || n > 1024 {
				return "must be 20 to 1024 characters: a message as recipients will see it"
			}
			return ""
		})...)
		d.SampleMessages = trimmed(*in.SampleMessages)
	case create:
		errs = append(errs, apperror.FieldError{Path: "sampleMessages", Message: "is required: one to five messages as recipients will see them"})
	}
	for _, kw := range []struct {
		path  string
		given *[]string
		into  *[]string
	}{{"optInKeywords", in.OptInKeywords, &d.OptInKeywords}, {"optOutKeywords", in.OptOutKeywords, &d.OptOutKeywords}} {
		if kw.given == nil {
			continue
		}
		errs = append(errs, listErrors(kw.path, *kw.given, 0, 10, func(s string) string {
			if !keyword.MatchString(s) {
				return "must be one word of letters and digits, at most 30"
			}
			return ""
		})...)
		*kw.into = upper(*kw.given)
	}
	if in.SubUseCases != nil {
		errs = append(errs, listErrors("subUseCases", *in.SubUseCases, 0, 5, func(s string) string {
			if !knownUseCase(s) || slices.Contains(mixedUseCases, s) {
				return "must be a standard use case other than MIXED and LOW_VOLUME"
			}
			return ""
		})...)
		d.SubUseCases = trimmed(*in.SubUseCases)
	}
	if len(d.SubUseCases) > 0 && d.UseCase != "" && !slices.Contains(mixedUseCases, d.UseCase) {
		errs = append(errs, apperror.FieldError{Path: "subUseCases", Message: "are only for a MIXED or LOW_VOLUME campaign"})
	}
	return errs
}

// complete is what the carriers' review needs before a campaign is submitted.
func (d CampaignDetails) complete() []apperror.FieldError {
	var errs []apperror.FieldError
	if d.MessageFlow == "" {
		errs = append(errs, apperror.FieldError{Path: "messageFlow", Message: "is required before submitting: how a recipient opts in to these messages"})
	}
	if slices.Contains(mixedUseCases, d.UseCase) && len(d.SubUseCases) < 2 {
		errs = append(errs, apperror.FieldError{Path: "subUseCases", Message: "a " + d.UseCase + " campaign names two to five of the use cases it mixes"})
	}
	if d.SubscriberHelp && d.HelpMessage == "" {
		errs = append(errs, apperror.FieldError{Path: "helpMessage", Message: "is required when subscriberHelp is true: the answer to HELP"})
	}
	return errs
}

func knownUseCase(name string) bool {
	return slices.ContainsFunc(UseCases, func(u UseCase) bool { return u.Name == name })
}

func listErrors(path string, items []string, min, max int, check func(string) string) []apperror.FieldError {
	var errs []apperror.FieldError
	if len(items) < min || len(items) > max {
		errs = append(errs, apperror.FieldError{Path: path, Message: "must have " + itoa(min) + " to " + itoa(max) + " items"})
	}
	for i, s := range items {
		if msg := check(s); msg != "" {
			errs = append(errs, apperror.FieldError{Path: path + "[" + itoa(i) + "]", Message: msg})
		}
	}
	return errs
}

func trimmed(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

func upper(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.ToUpper(s)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
