package meta

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Profile is a WhatsApp business profile, in Meta's field names.
type Profile struct {
	About       string `json:"about,omitempty"`
	Address     string `json:"address,omitempty"`
	Description string `json:"description,omitempty"`
	Email       string `json:"email,omitempty"`
	// ProfilePictureURL is read only: UpdateProfile does not send it.
	ProfilePictureURL string   `json:"profile_picture_url,omitempty"`
	Websites          []string `json:"websites,omitempty"`
	// Vertical is the business's industry (RETAIL, EDU, OTHER…).
	Vertical string `json:"vertical,omitempty"`
}

const profileFields = "about,address,description,email,profile_picture_url,websites,vertical"

// GetProfile reads the business profile of a phone number
// (GET /{phone-number-id}/whatsapp_business_profile). An empty token is the Provider's.
func (t *Transport) GetProfile(ctx context.Context, token, phoneNumberID string) (Profile, error) {
	var out struct {
		Data []Profile `json:"data"`
	}
	const op = "get business profile"
	if err := t.call(ctx, request{op: op, method: http.MethodGet, path: []string{phoneNumberID, "whatsapp_business_profile"},
		query: url.Values{"fields": {profileFields}}, token: t.token(token)}, &out); err != nil {
		return Profile{}, err
	}
	if len(out.Data) == 0 {
		return Profile{}, fmt.Errorf("meta: %s: the answer holds no profile", op)
	}
	return out.Data[0], nil
}

// UpdateProfile changes the business profile of a phone number (POST
// /{phone-number-id}/whatsapp_business_profile): the fields p sets; an empty field is left as
// it is. The picture is not changed here (Meta takes it as an uploaded file handle).
func (t *Transport) UpdateProfile(ctx context.Context, token, phoneNumberID string, p Profile) error {
	body := obj{"messaging_product": "whatsapp"}
	for k, v := range map[string]string{"about": p.About, "address": p.Address, "description": p.Description,
		"email": p.Email, "vertical": p.Vertical} {
		if v != "" {
			body[k] = v
		}
	}
	if len(p.Websites) > 0 {
		body["websites"] = p.Websites
	}
	return t.callForSuccess(ctx, request{op: "update business profile", method: http.MethodPost,
		path: []string{phoneNumberID, "whatsapp_business_profile"}, body: body, token: t.token(token)})
}

// PhoneNumber is what Meta says of a business phone number.
type PhoneNumber struct {
	ID                 string `json:"id"`
	DisplayPhoneNumber string `json:"display_phone_number"`
	VerifiedName       string `json:"verified_name"`
	// QualityRating is GREEN, YELLOW, RED or UNKNOWN.
	QualityRating string `json:"quality_rating"`
	// CodeVerificationStatus is VERIFIED, NOT_VERIFIED or EXPIRED; NameStatus the display
	// name's review (APPROVED, PENDING_REVIEW, DECLINED…); Status the number's (CONNECTED,
	// PENDING, DISCONNECTED…); PlatformType CLOUD_API, ON_PREMISE or NOT_APPLICABLE.
	CodeVerificationStatus string `json:"code_verification_status"`
	NameStatus             string `json:"name_status"`
	Status                 string `json:"status"`
	PlatformType           string `json:"platform_type"`
	Throughput             struct {
		Level string `json:"level"`
	} `json:"throughput"`
	HealthStatus HealthStatus `json:"health_status"`
}

// HealthStatus is Meta's health_status of a node: whether messages can go through it and the
// nodes on the way (phone number, WABA, business, app).
type HealthStatus struct {
	// CanSendMessage is AVAILABLE, LIMITED or BLOCKED.
	CanSendMessage string `json:"can_send_message"`
	Entities       []struct {
		EntityType     string `json:"entity_type"`
		ID             string `json:"id"`
		CanSendMessage string `json:"can_send_message"`
		Errors         []struct {
			ErrorCode        int    `json:"error_code"`
			ErrorDescription string `json:"error_description"`
			PossibleSolution string `json:"possible_solution"`
		} `json:"errors"`
	} `json:"entities"`
}

// SetupStatus sums up how far the number's setup is: "complete" once it is connected, its code
// verified and its display name approved; else the first step pending: the number's status
// ("pending", "disconnected", "flagged"…, lower case), "pending_verification", or the name's
// review ("pending_name_review", "name_declined").
func (p PhoneNumber) SetupStatus() string {
	switch {
	case p.Status != "" && p.Status != "CONNECTED":
		return strings.ToLower(p.Status)
	case p.CodeVerificationStatus != "" && p.CodeVerificationStatus != "VERIFIED":
		return "pending_verification"
	case p.NameStatus == "DECLINED" || p.NameStatus == "NON_EXISTS":
		return "name_declined"
	case p.NameStatus != "" && p.NameStatus != "APPROVED" && p.NameStatus != "AVAILABLE_WITHOUT_REVIEW":
		return "pending_name_review"
	}
	return "complete"
}

const phoneNumberFields = "id,display_phone_number,verified_name,quality_rating,code_verification_status,name_status,status,platform_type,throughput,health_status"

// PhoneNumber reads a business phone number (GET /{phone-number-id}?fields=…). An empty token
// is the Provider's.
func (t *Transport) PhoneNumber(ctx context.Context, token, phoneNumberID string) (PhoneNumber, error) {
	var p PhoneNumber
	err := t.call(ctx, request{op: "get phone number", method: http.MethodGet, path: []string{phoneNumberID},
		query: url.Values{"fields": {phoneNumberFields}}, token: t.token(token)}, &p)
	return p, err
}

// PaymentStatus is what a WhatsApp Business Account says of its payment: Meta has no payment
// status field, so it is read from the WABA's primary_funding_id (set once a payment method is
// attached) and its health_status.
type PaymentStatus struct {
	FundingID    string       `json:"primary_funding_id"`
	HealthStatus HealthStatus `json:"health_status"`
}

// MethodSet reports whether the account has a payment method (a primary funding source).
func (p PaymentStatus) MethodSet() bool { return p.FundingID != "" }

// CanSendTemplates reports whether template messages (which Meta bills) can go out: a payment
// method is set and Meta does not block the account.
func (p PaymentStatus) CanSendTemplates() bool {
	return p.MethodSet() && p.HealthStatus.CanSendMessage != "" && p.HealthStatus.CanSendMessage != "BLOCKED"
}

// PaymentStatus reads a WhatsApp Business Account's payment status
// (GET /{waba-id}?fields=primary_funding_id,health_status). An empty token is the Provider's.
func (t *Transport) PaymentStatus(ctx context.Context, token, wabaID string) (PaymentStatus, error) {
	var p PaymentStatus
	err := t.call(ctx, request{op: "get payment status", method: http.MethodGet, path: []string{wabaID},
		query: url.Values{"fields": {"primary_funding_id,health_status"}}, token: t.token(token)}, &p)
	return p, err
}
