package meta

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// The calls a client's onboarding makes: a client connects a WhatsApp Business Account through
// Embedded Signup, or a Facebook Page through Facebook Login. Both end with an OAuth code,
// traded for the user's token (ExchangeCode); what the user granted is read with the app's
// token (GrantedScopes) or the user's (Permissions, Pages); then the app subscribes to the
// account's webhooks and, for WhatsApp, registers the phone number on the Cloud API.

// Page is a Facebook Page the user administers, with its page access token.
type Page struct {
	ID, Name, AccessToken string
	// Tasks are what the user may do on the Page (MANAGE, MESSAGING, MODERATE…).
	Tasks []string
}

// BusinessPhone is a phone number of a WhatsApp Business Account.
type BusinessPhone struct {
	ID, DisplayPhoneNumber, VerifiedName string
}

// pageWebhookFields are the Page webhook fields the app subscribes a Page to: the messages,
// the postbacks of buttons, and the delivery and read receipts.
const pageWebhookFields = "messages,messaging_postbacks,message_deliveries,message_reads"

// maxListPages stops a listing after this many pages (100 Pages each for /me/accounts).
const maxListPages = 10

var twoStepPIN = regexp.MustCompile(`^[0-9]{6}$`)

// ExchangeCode trades an OAuth code (of Facebook Login or Embedded Signup) for the user's access
// token: GET /oauth/access_token with the app's id and secret, without an Authorization header.
// redirectURI is the one the OAuth dialog was opened with; empty for a code the JavaScript SDK
// got (Meta then wants none). A wrong app id or secret is a Failure with CodeAuthFailed; a code
// used already, expired or of another redirect URI one with CodeInvalidRequest.
func (t *Transport) ExchangeCode(ctx context.Context, appID, appSecret, code, redirectURI string) (string, error) {
	const op = "exchange code"
	if appID == "" || appSecret == "" || code == "" {
		return "", invalid("An OAuth code exchange needs the app's id and secret, and the code.")
	}
	q := url.Values{"client_id": {appID}, "client_secret": {appSecret}, "code": {code}}
	if redirectURI != "" {
		q.Set("redirect_uri", redirectURI)
	}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	err := t.call(ctx, request{op: op, method: http.MethodGet, path: []string{"oauth", "access_token"}, query: q,
		anonymous: true, secrets: []string{appSecret, code}}, &out)
	if err != nil {
		return "", appRefused(err)
	}
	if out.AccessToken == "" {
		return "", acceptedUnreadable(op)
	}
	return out.AccessToken, nil
}

// appRefused makes a refusal of the app's credentials by the OAuth endpoint a Failure. Meta
// answers a wrong secret with code 1 at HTTP 400, which elsewhere is its passing trouble (and
// classify tries it again); a wrong app id with code 101, which the table does not know.
func appRefused(err error) error {
	var tmp *transport.Temporary
	if errors.As(err, &tmp) && tmp.ProviderCode == "1" && strings.Contains(tmp.Err.Error(), fmt.Sprintf("HTTP %d,", http.StatusBadRequest)) {
		// tmp.Err is classify's words, secrets already scrubbed.
		return &transport.Failure{Code: CodeAuthFailed, Message: "Meta refused the app's secret: " + tmp.Err.Error(), ProviderCode: tmp.ProviderCode}
	}
	if f := transport.AsFailure(err); f != nil && f.ProviderCode == "101" {
		f.Code = CodeAuthFailed
	}
	return err
}

// GrantedScopes reads, with the app's token (appID|appSecret), which objects the user token was
// granted per permission: GET /debug_token?input_token=…, its granular_scopes, as permission →
// target ids (the Pages of pages_messaging, the WhatsApp Business Account of
// whatsapp_business_management…). A permission Meta grants on every object has no target ids;
// permissions that are not granular (public_profile, email) are not listed. A token Meta says
// is not valid (expired, revoked, unknown) is an error wrapping ErrInvalidToken; a wrong app
// secret is a Failure with CodeAuthFailed.
func (t *Transport) GrantedScopes(ctx context.Context, appID, appSecret, userToken string) (map[string][]string, error) {
	const op = "debug token"
	if appID == "" || appSecret == "" || userToken == "" {
		return nil, invalid("A token's debug needs the app's id and secret, and the token.")
	}
	var out struct {
		Data *struct {
			IsValid bool `json:"is_valid"`
			Error   *struct {
				Code    int `json:"code"`
				Subcode int `json:"subcode"`
			} `json:"error"`
			GranularScopes []struct {
				Scope     string   `json:"scope"`
				TargetIDs []string `json:"target_ids"`
			} `json:"granular_scopes"`
		} `json:"data"`
	}
	// The input token is a query parameter, as Meta wants it; the app's token goes as Bearer.
	err := t.call(ctx, request{op: op, method: http.MethodGet, path: []string{"debug_token"},
		query: url.Values{"input_token": {userToken}}, token: appID + "|" + appSecret, secrets: []string{appSecret, userToken}}, &out)
	if err != nil {
		return nil, err
	}
	d := out.Data
	switch {
	case d == nil:
		return nil, acceptedUnreadable(op)
	case !d.IsValid && d.Error != nil && d.Error.Code != 0:
		return nil, fmt.Errorf("%w (Meta code %s)", ErrInvalidToken, ProviderCode(d.Error.Code, d.Error.Subcode))
	case !d.IsValid:
		return nil, ErrInvalidToken
	}
	scopes := make(map[string][]string, len(d.GranularScopes))
	for _, g := range d.GranularScopes {
		if g.Scope != "" {
			scopes[g.Scope] = append(scopes[g.Scope], g.TargetIDs...)
		}
	}
	return scopes, nil
}

// Permissions reads the permissions the user answered, with the user's token
// (GET /me/permissions): permission → status, "granted", "declined" (unticked in the dialog)
// or "expired".
func (t *Transport) Permissions(ctx context.Context, userToken string) (map[string]string, error) {
	if userToken == "" {
		return nil, noToken("user")
	}
	var out struct {
		Data []struct {
			Permission string `json:"permission"`
			Status     string `json:"status"`
		} `json:"data"`
	}
	if err := t.call(ctx, request{op: "read permissions", method: http.MethodGet, path: []string{"me", "permissions"},
		token: userToken}, &out); err != nil {
		return nil, err
	}
	perms := make(map[string]string, len(out.Data))
	for _, p := range out.Data {
		if p.Permission != "" {
			perms[p.Permission] = p.Status
		}
	}
	return perms, nil
}

// Pages lists the Facebook Pages the user granted the app, each with its page access token,
// with the user's token (GET /me/accounts), following Meta's next pages (up to 10 of 100).
func (t *Transport) Pages(ctx context.Context, userToken string) ([]Page, error) {
	if userToken == "" {
		return nil, noToken("user")
	}
	type page struct {
		ID          string   `json:"id"`
		Name        string   `json:"name"`
		AccessToken string   `json:"access_token"`
		Tasks       []string `json:"tasks"`
	}
	listed, err := listAll[page](ctx, t, request{op: "list pages", method: http.MethodGet, path: []string{"me", "accounts"},
		query: url.Values{"fields": {"id,name,access_token,tasks"}, "limit": {"100"}}, token: userToken})
	if err != nil {
		return nil, err
	}
	pages := make([]Page, 0, len(listed))
	for _, p := range listed {
		pages = append(pages, Page{ID: p.ID, Name: p.Name, AccessToken: p.AccessToken, Tasks: p.Tasks})
	}
	return pages, nil
}

// SubscribePage subscribes the app to the Page's webhooks (messages, postbacks, deliveries,
// reads) with the Page's own token, as Meta wants it: POST /{page-id}/subscribed_apps.
func (t *Transport) SubscribePage(ctx context.Context, pageToken, pageID string) error {
	if pageToken == "" {
		return noToken("Page")
	}
	return t.callForSuccess(ctx, request{op: "subscribe page", method: http.MethodPost, path: []string{pageID, "subscribed_apps"},
		query: url.Values{"subscribed_fields": {pageWebhookFields}}, token: pageToken})
}

// SubscribeWABA subscribes the app to the WhatsApp Business Account's webhooks:
// POST /{waba-id}/subscribed_apps. An empty token is the Provider's.
func (t *Transport) SubscribeWABA(ctx context.Context, token, wabaID string) error {
	return t.callForSuccess(ctx, request{op: "subscribe waba", method: http.MethodPost, path: []string{wabaID, "subscribed_apps"},
		token: t.token(token)})
}

// RegisterPhone registers the phone number on the Cloud API with its two-step verification PIN
// (6 digits; a number that has one already needs that one): POST /{phone-number-id}/register.
// An empty token is the Provider's.
func (t *Transport) RegisterPhone(ctx context.Context, token, phoneNumberID, pin string) error {
	if !twoStepPIN.MatchString(pin) {
		return invalid("A two-step verification PIN is 6 digits.")
	}
	return t.callForSuccess(ctx, request{op: "register phone", method: http.MethodPost, path: []string{phoneNumberID, "register"},
		body: obj{"messaging_product": "whatsapp", "pin": pin}, token: t.token(token), secrets: []string{pin}})
}

// WABAPhoneNumbers lists the phone numbers of the WhatsApp Business Account
// (GET /{waba-id}/phone_numbers), following Meta's next pages. An empty token is the Provider's.
func (t *Transport) WABAPhoneNumbers(ctx context.Context, token, wabaID string) ([]BusinessPhone, error) {
	type phone struct {
		ID                 string `json:"id"`
		DisplayPhoneNumber string `json:"display_phone_number"`
		VerifiedName       string `json:"verified_name"`
	}
	listed, err := listAll[phone](ctx, t, request{op: "list phone numbers", method: http.MethodGet, path: []string{wabaID, "phone_numbers"},
		query: url.Values{"fields": {"id,display_phone_number,verified_name"}}, token: t.token(token)})
	if err != nil {
		return nil, err
	}
	phones := make([]BusinessPhone, 0, len(listed))
	for _, p := range listed {
		phones = append(phones, BusinessPhone(p))
	}
	return phones, nil
}

// PreVerifiedNumber reads the number of one of the business's pre-verified phone numbers
// (GET /{pre-verified-id}?fields=phone_number,code_verification_status) with the Provider's
// token: the number a client connects instead of one of theirs. A number not verified yet is
// a Failure: Embedded Signup offers only verified ones.
func (t *Transport) PreVerifiedNumber(ctx context.Context, id string) (string, error) {
	var out struct {
		PhoneNumber string `json:"phone_number"`
		Status      string `json:"code_verification_status"`
	}
	if err := t.call(ctx, request{op: "read pre-verified number", method: http.MethodGet, path: []string{id},
		query: url.Values{"fields": {"phone_number,code_verification_status"}}, token: t.token("")}, &out); err != nil {
		return "", err
	}
	if out.Status != "VERIFIED" {
		return "", &transport.Failure{Code: CodeInvalidRequest,
			Message: fmt.Sprintf("Pre-verified number %s is %s, not VERIFIED: verify it before inviting a client to it.", id, out.Status)}
	}
	return out.PhoneNumber, nil
}

// noToken: the call acts for a user or a Page, so the Provider's token does not stand in.
func noToken(whose string) error {
	return &transport.Failure{Code: CodeAuthFailed, Message: fmt.Sprintf("There is no %s access token for this call.", whose)}
}

// listAll reads every item of a Graph API list: the page r asks for, then the pages Meta's
// paging.next names, at most maxListPages. The token goes with a next page only to the base
// URL's scheme and host, in the header (an access_token Meta put in the link is dropped).
func listAll[T any](ctx context.Context, t *Transport, r request) ([]T, error) {
	type page struct {
		Data   []T `json:"data"`
		Paging struct {
			Next string `json:"next"`
		} `json:"paging"`
	}
	var all []T
	var p page
	err := t.call(ctx, r, &p)
	for n := 1; ; n++ {
		if err != nil {
			return nil, err
		}
		all = append(all, p.Data...)
		if p.Paging.Next == "" {
			return all, nil
		}
		if n == maxListPages {
			return nil, fmt.Errorf("meta: %s: more than %d pages", r.op, maxListPages)
		}
		next, ok := t.nextPage(p.Paging.Next)
		if !ok {
			return nil, fmt.Errorf("meta: %s: Meta's answer names a next page off the Graph API's host", r.op)
		}
		p = page{}
		err = t.send(ctx, r, next, &p)
	}
}

// nextPage is a paging.next link when it is on the base URL's scheme, host and path, without
// its access_token.
func (t *Transport) nextPage(link string) (url.URL, bool) {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != t.base.Scheme || u.Host != t.base.Host || u.User != nil ||
		!strings.HasPrefix(u.Path, strings.TrimRight(t.base.Path, "/")+"/") {
		return url.URL{}, false
	}
	q := u.Query()
	q.Del("access_token")
	u.RawQuery, u.Fragment = q.Encode(), ""
	return *u, true
}
