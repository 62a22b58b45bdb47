package tendlc

import (
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Brand statuses: a draft is Switchboard's alone; submitted, it is pending until the registrar
// (The Campaign Registry through the provider) verifies it, or takes it as unverified, or
// rejects it. failed means the registrar could not process it.
const (
	BrandDraft      = "draft"
	BrandPending    = "pending"
	BrandVerified   = "verified"
	BrandUnverified = "unverified"
	BrandRejected   = "rejected"
	BrandFailed     = "failed"
)

// registered says whether a brand's campaigns may be submitted.
func registered(status string) bool { return status == BrandVerified || status == BrandUnverified }

// Entity types of a brand (The Campaign Registry's).
var entityTypes = []string{"PRIVATE_PROFIT", "PUBLIC_PROFIT", "NON_PROFIT", "GOVERNMENT", "SOLE_PROPRIETOR"}

// verticals are The Campaign Registry's industry segments.
var verticals = []string{"AGRICULTURE", "COMMUNICATION", "CONSTRUCTION", "EDUCATION", "ENERGY", "ENTERTAINMENT",
	"FINANCIAL", "GAMBLING", "GOVERNMENT", "HEALTHCARE", "HOSPITALITY", "HUMAN_RESOURCES", "INSURANCE", "LEGAL",
	"MANUFACTURING", "NGO", "POLITICAL", "POSTAL", "PROFESSIONAL", "REAL_ESTATE", "RETAIL", "TECHNOLOGY", "TRANSPORTATION"}

// stockExchanges a public company's brand may name.
var stockExchanges = []string{"NONE", "NASDAQ", "NYSE", "AMEX", "AMX", "ASX", "B3", "BME", "BSE", "FRA", "ICEX", "JPX",
	"JSE", "KRX", "LON", "NSE", "OMX", "SEHK", "SSE", "STO", "SWX", "SZSE", "TSX", "TWSE", "VSE", "OTHER"}

var (
	countryCode = regexp.MustCompile(`^[A-Z]{2}$`)
	e164        = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	einFormat   = regexp.MustCompile(`^[0-9]{2}-[0-9]{7}$`)
)

// BrandInput is a brand's create or update request: nil is a field not given.
type BrandInput struct {
	City          *string `json:"city"`
	Country       *string `json:"country"`
	DisplayName   *string `json:"displayName"`
	Email         *string `json:"email"`
	EntityType    *string `json:"entityType"`
	Phone         *string `json:"phone"`
	PostalCode    *string `json:"postalCode"`
	State         *string `json:"state"`
	Street        *string `json:"street"`
	Vertical      *string `json:"vertical"`
	CompanyName   *string `json:"companyName"`
	EIN           *string `json:"ein"`
	FirstName     *string `json:"firstName"`
	LastName      *string `json:"lastName"`
	StockExchange *string `json:"stockExchange"`
	StockSymbol   *string `json:"stockSymbol"`
	Website       *string `json:"website"`
}

// BrandDetails is what the client said of its business, kept as given.
type BrandDetails struct {
	City          string `json:"city"`
	Country       string `json:"country"`
	DisplayName   string `json:"displayName"`
	Email         string `json:"email"`
	EntityType    string `json:"entityType"`
	Phone         string `json:"phone"`
	PostalCode    string `json:"postalCode"`
	State         string `json:"state"`
	Street        string `json:"street"`
	Vertical      string `json:"vertical"`
	CompanyName   string `json:"companyName,omitempty"`
	EIN           string `json:"ein,omitempty"`
	FirstName     string `json:"firstName,omitempty"`
	LastName      string `json:"lastName,omitempty"`
	StockExchange string `json:"stockExchange,omitempty"`
	StockSymbol   string `json:"stockSymbol,omitempty"`
	Website       string `json:"website,omitempty"`
}

// Brand is a brand as the API shows it (the published client's TenDlcBrand).
type Brand struct {
	ID string `json:"id"`
	BrandDetails
	Status         string     `json:"status"`
	IdentityStatus *string    `json:"identityStatus,omitempty"`
	BrandScore     *int32     `json:"brandScore,omitempty"`
	FailureReason  *string    `json:"failureReason,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	SubmittedAt    *time.Time `json:"submittedAt,omitempty"`
	VerifiedAt     *time.Time `json:"verifiedAt,omitempty"`

	// What only Switchboard sees: the registrar's reference and what it made.
	Project      string `json:"-"`
	TestMode     bool   `json:"-"`
	ProviderRef  string `json:"-"`
	ProviderData []byte `json:"-"`
}

// text is one string field of a request: its path, what was given, where it goes, its bound.
type text struct {
	path     string
	given    *string
	into     *string
	required bool
	max      int
}

// apply merges the input into d (create: d is empty and every required field must be given;
// update: what is given replaces), and returns the field errors.
func (in BrandInput) apply(d *BrandDetails, create bool) []apperror.FieldError {
	fields := []text{
		{"city", in.City, &d.City, true, 100},
		{"country", in.Country, &d.Country, true, 2},
		{"displayName", in.DisplayName, &d.DisplayName, true, 255},
		{"email", in.Email, &d.Email, true, 100},
		{"entityType", in.EntityType, &d.EntityType, true, 20},
		{"phone", in.Phone, &d.Phone, true, 16},
		{"postalCode", in.PostalCode, &d.PostalCode, true, 10},
		{"state", in.State, &d.State, true, 20},
		{"street", in.Street, &d.Street, true, 100},
		{"vertical", in.Vertical, &d.Vertical, true, 50},
		{"companyName", in.CompanyName, &d.CompanyName, false, 255},
		{"ein", in.EIN, &d.EIN, false, 10},
		{"firstName", in.FirstName, &d.FirstName, false, 100},
		{"lastName", in.LastName, &d.LastName, false, 100},
		{"stockExchange", in.StockExchange, &d.StockExchange, false, 10},
		{"stockSymbol", in.StockSymbol, &d.StockSymbol, false, 10},
		{"website", in.Website, &d.Website, false, 255},
	}
	errs := applyTexts(fields, create)
	check := func(path, value string, ok bool, msg string) {
		if value != "" && !ok {
			errs = append(errs, apperror.FieldError{Path: path, Message: msg})
		}
	}
	check("country", d.Country, countryCode.MatchString(d.Country), "must be an ISO 3166-1 alpha-2 code, such as US")
	check("email", d.Email, validEmail(d.Email), "must be an email address")
	check("entityType", d.EntityType, slices.Contains(entityTypes, d.EntityType), "must be one of "+strings.Join(entityTypes, ", "))
	check("phone", d.Phone, e164.MatchString(d.Phone), "must be an E.164 number, such as +14155550100")
	check("vertical", d.Vertical, slices.Contains(verticals, d.Vertical), "must be one of "+strings.Join(verticals, ", "))
	check("ein", d.EIN, einFormat.MatchString(d.EIN), "must be written XX-XXXXXXX")
	check("stockExchange", d.StockExchange, slices.Contains(stockExchanges, d.StockExchange), "must be one of "+strings.Join(stockExchanges, ", "))
	check("website", d.Website, validWebsite(d.Website), "must be an http or https URL")
	return errs
}

// complete is what a brand needs before it is submitted (The Campaign Registry's rules): its
// authorized representative, and for a company its name and tax id, for a public one its
// listing.
func (d BrandDetails) complete() []apperror.FieldError {
	var errs []apperror.FieldError
	need := func(path, value, why string) {
		if value == "" {
			errs = append(errs, apperror.FieldError{Path: path, Message: "is required " + why})
		}
	}
	// The registry records an authorized representative for every brand (the proprietor
	// themself for a sole proprietor).
	need("firstName", d.FirstName, "before submitting: the authorized representative's")
	need("lastName", d.LastName, "before submitting: the authorized representative's")
	if d.EntityType != "SOLE_PROPRIETOR" {
		need("companyName", d.CompanyName, "for "+d.EntityType)
		need("ein", d.EIN, "for "+d.EntityType+" (the US tax id, XX-XXXXXXX)")
		if d.EntityType == "PUBLIC_PROFIT" {
			need("stockExchange", d.StockExchange, "for a public company")
			need("stockSymbol", d.StockSymbol, "for a public company")
		}
	}
	return errs
}

func applyTexts(fields []text, create bool) []apperror.FieldError {
	var errs []apperror.FieldError
	for _, f := range fields {
		switch {
		case f.given == nil && create && f.required:
			errs = append(errs, apperror.FieldError{Path: f.path, Message: "is required"})
		case f.given == nil:
		case strings.TrimSpace(*f.given) == "" && f.required:
			errs = append(errs, apperror.FieldError{Path: f.path, Message: "must not be empty"})
		case len([]rune(*f.given)) > f.max:
			errs = append(errs, apperror.FieldError{Path: f.path, Message: "must be at most " + itoa(f.max) + " characters"})
		default:
			*f.into = strings.TrimSpace(*f.given)
		}
	}
	return errs
}

func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}

func validWebsite(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
