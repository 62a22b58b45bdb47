package metatest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A client's onboarding as the server answers it:
//
//	GET    /sdk.js                                a stand-in of Meta's JavaScript SDK (FB.init, FB.login)
//	GET    /{v}/dialog/oauth                      the OAuth dialog: Facebook Login (scope) or Embedded Signup (config_id)
//	POST   /{v}/dialog/oauth/confirm              its form: Continue or Cancel
//	GET    /{v}/oauth/access_token                a code for the user's token, with the app's id and secret
//	GET    /{v}/debug_token?input_token=…         with the app's token, AppID|AppSecret
//	GET    /{v}/me/permissions, /{v}/me/accounts  with a user token
//	POST   /{v}/{page-id}/subscribed_apps         with the Page's token; GET, DELETE the same
//	POST   /{v}/{waba-id}/subscribed_apps         GET, DELETE the same
//	GET    /{v}/{waba-id}/phone_numbers
//	POST   /{v}/{phone-number-id}/register
//
// sdk.js, the dialog, its form and the code exchange take no access token (Meta's dialog is a
// page of www.facebook.com the user is signed in to), debug_token takes the app's: serve sends
// them here before its token check.
//
// The dialog's page, for a browser or chromedp: a form with button#continue and button#cancel;
// for Facebook Login a checkbox input[name=permission][value=<permission>] per permission asked
// (public_profile is always granted, without one) and input[name=page][value=<page id>] per
// Page of the dialog user, all ticked; for Embedded Signup a select#phone of the dialog user's
// phone numbers (option value: the phone number id). Its hidden field dialog names the open
// dialog, answered once. An error is a page with p#error, HTTP 400.
//
// Continue mints a code bound to the dialog's client_id and redirect_uri ("" for the SDK's
// popup, as Meta's codes of the JavaScript SDK) and to the grant: the permissions ticked (the
// others declined), the Pages ticked, the WABA and the phone number chosen. Without
// display=popup the dialog redirects (302) to redirect_uri?code=…&state=…#_=_, or on Cancel to
// redirect_uri?error=access_denied&error_code=200&error_description=Permissions+error&error_reason=user_denied&state=…#_=_.
// With display=popup it answers a page whose script posts to window.opener, then closes: for
// Embedded Signup first Meta's session info, a string, with targetOrigin "*":
//
//	{"type":"WA_EMBEDDED_SIGNUP","event":"FINISH","data":{"phone_number_id","waba_id","business_id"},"version":"3"}
//	{"type":"WA_EMBEDDED_SIGNUP","event":"FINISH_ONLY_WABA","data":{"waba_id","business_id"},"version":"3"}  (no phone number)
//	{"type":"WA_EMBEDDED_SIGNUP","event":"CANCEL","data":{"current_step":"PHONE_NUMBER_SETUP"},"version":"3"}
//
// then the login result for sdk.js, an object, {"metatestLogin": {"code", "state"}} or
// {"metatestLogin": {"error": "access_denied", "state"}}, to the origin sdk.js named (its origin
// parameter; "*" without one). sdk.js's FB.login opens the dialog in a popup
// (display=popup&client_id&response_type=code&config_id&extras&scope&origin) and calls back
// {status: "connected", authResponse: {code, userID}}, or {status: "unknown", authResponse:
// null} on Cancel or when the popup is closed without an answer.

// SDKPath is where the server serves its stand-in of Meta's JavaScript SDK
// (https://connect.facebook.net/en_US/sdk.js).
const SDKPath = "/sdk.js"

// DialogUserID and DialogUserName are who signs in to the OAuth dialog (GET /me with their
// token, debug_token's user_id).
const (
	DialogUserID   = "100000000000077"
	DialogUserName = "Dialog Test User"
)

// BusinessID is the business portfolio of the dialog user's WABA (Embedded Signup's
// business_id).
const BusinessID = "100000000000007"

// appName is the app's name, as debug_token and subscribed_apps say it.
const appName = "Switchboard Test"

// sdkVersion is the Graph API version sdk.js's dialog names when FB.init gave none.
const sdkVersion = "v21.0"

// userTokenLifetime is the expires_in of a user token: about 60 days, as Meta's long-lived ones.
const userTokenLifetime = 5183944

// Embedded Signup's permissions: what the configurations of its template ask.
var signupScopes = []string{"whatsapp_business_management", "whatsapp_business_messaging"}

// systemScopes are the permissions of the system user's token (and of the tokens AddToken adds).
var systemScopes = []string{"business_management", "whatsapp_business_management", "whatsapp_business_messaging",
	"pages_show_list", "pages_messaging", "pages_manage_metadata", "instagram_basic", "instagram_manage_messages"}

// pageTasks are the tasks of a Page admin.
var pageTasks = []string{"MODERATE", "MESSAGING", "ANALYZE", "ADVERTISE", "CREATE_CONTENT", "MANAGE"}

// pageFields are the Page webhook fields an app may subscribe to.
var pageFields = []string{"messages", "messaging_postbacks", "messaging_optins", "message_deliveries", "message_reads",
	"messaging_referrals", "message_echoes", "message_reactions", "messaging_handovers", "messaging_policy_enforcement",
	"messaging_account_linking", "messaging_game_plays", "standby", "inbox_labels", "message_edits", "feed"}

var (
	permissionName = regexp.MustCompile(`^[a-z][a-z_]{1,63}$`)
	pinDigits      = regexp.MustCompile(`^[0-9]{6}$`)
)

// DialogUser is who signs in to the OAuth dialog: the Pages they administer and, for Embedded
// Signup, the WhatsApp Business Account and phone numbers they own or create in the flow.
type DialogUser struct {
	Pages  []DialogPage
	WABAID string
	// PhoneNumbers are the WABA's numbers (a number without WABAID is of WABAID).
	PhoneNumbers []PhoneNumber
}

// DialogPage is a Facebook Page the dialog user administers.
type DialogPage struct {
	ID, Name string
}

// oauthState is what the onboarding endpoints keep, under Server.mu.
type oauthState struct {
	user    DialogUser
	dialogs map[string]*dialog // open dialogs, by the form's dialog field
	codes   map[string]*grant  // codes not exchanged yet
	grants  map[string]*grant  // by user token
	// pageTokens are the Page tokens /me/accounts minted.
	pageTokens map[string]pageToken
	pageSubs   map[string][]string // a Page's subscribed fields
	wabaSubs   map[string]bool
	registered map[string]string // a phone number's two-step verification PIN
	// preVerified are the pre-verified numbers of the business (AddPreVerifiedPhone), by id.
	preVerified map[string]string
	exchanged   int
}

func newOAuthState() oauthState {
	return oauthState{dialogs: map[string]*dialog{}, codes: map[string]*grant{}, grants: map[string]*grant{},
		pageTokens: map[string]pageToken{}, pageSubs: map[string][]string{}, wabaSubs: map[string]bool{},
		registered: map[string]string{}, preVerified: map[string]string{}}
}

// dialog is an open OAuth dialog.
type dialog struct {
	clientID, redirectURI, state string
	popup                        bool
	// origin is where the popup posts the login result ("*" when sdk.js named none).
	origin string
	// signup: Embedded Signup (config_id); onlyWABA when it shares no phone number.
	signup, onlyWABA bool
	// preVerified are the pre-verified numbers extras.setup.preVerifiedPhone.ids offered.
	preVerified []string
	scopes      []string // Facebook Login's permissions asked, public_profile aside
}

// grant is what a user answered in the dialog: a code's, then its user token's.
type grant struct {
	clientID, redirectURI string
	signup                bool
	granted, declined     []string
	pages                 []string
	wabaID, phoneID       string
	// pageTokens are the Page tokens minted for the user token, by Page id.
	pageTokens map[string]string
}

type pageToken struct{ pageID, userToken string }

// SetDialogUser sets who signs in to the OAuth dialog, and adds their Pages (AddPage), WABA and
// phone numbers (AddPhoneNumber) to the Graph API.
func (s *Server) SetDialogUser(u DialogUser) {
	u.Pages = slices.Clone(u.Pages)
	u.PhoneNumbers = slices.Clone(u.PhoneNumbers)
	for _, p := range u.Pages {
		s.AddPage(p.ID, p.Name)
	}
	for i, p := range u.PhoneNumbers {
		if p.WABAID == "" {
			u.PhoneNumbers[i].WABAID, p.WABAID = u.WABAID, u.WABAID
		}
		s.AddPhoneNumber(p.ID, p.Display, p.WABAID)
		s.mu.Lock()
		if p.VerifiedName != "" {
			s.phones[p.ID].VerifiedName = p.VerifiedName
		}
		u.PhoneNumbers[i].VerifiedName = s.phones[p.ID].VerifiedName
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.WABAID != "" && s.wabas[u.WABAID] == nil {
		s.wabas[u.WABAID] = &waba{}
	}
	s.oauth.user = u
}

// AddPreVerifiedPhone adds a pre-verified number of the business (Meta's WhatsApp Business
// Pre-Verified Phone Number, GET /{id}): Embedded Signup offers it when its extras name it in
// setup.preVerifiedPhone.ids, and a client who picks it gets it in their WABA under a new phone
// number id, as Meta replaces the temporary object.
func (s *Server) AddPreVerifiedPhone(id, display string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth.preVerified[id] = display
}

// Exchanged is how many codes were exchanged for a user token.
func (s *Server) Exchanged() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauth.exchanged
}

// PageSubscriptions are the webhook fields the app is subscribed to on the Page (nil: none).
func (s *Server) PageSubscriptions(pageID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.oauth.pageSubs[pageID])
}

// WABASubscribed tells whether the app is subscribed to the WABA's webhooks.
func (s *Server) WABASubscribed(wabaID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauth.wabaSubs[wabaID]
}

// Registered returns the two-step verification PIN the phone number was registered with.
func (s *Server) Registered(phoneNumberID string) (pin string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pin, ok = s.oauth.registered[phoneNumberID]
	return pin, ok
}

// serveOAuth answers the requests that carry no access token of a user: sdk.js, the dialog
// and its form, the code exchange and debug_token. It tells whether r was one.
func (s *Server) serveOAuth(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == SDKPath {
		s.sdk(w, r)
		return true
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) < 2 || !graphVersion.MatchString(segs[0]) {
		return false
	}
	switch strings.Join(segs[1:], "/") {
	case "dialog/oauth":
		s.openDialog(w, r, segs[0])
	case "dialog/oauth/confirm":
		s.confirmDialog(w, r)
	case "oauth/access_token":
		s.accessToken(w, r)
	case "debug_token":
		s.debugToken(w, r)
	default:
		return false
	}
	return true
}

// writeOAuthError writes an error of the OAuth endpoints: Meta's words without "(#code)", and
// no error_data.
func writeOAuthError(w http.ResponseWriter, code, subcode int, message string) {
	body := map[string]any{"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "A" + randomHex(11)}
	if subcode != 0 {
		body["error_subcode"] = subcode
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": body})
}

var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Error</title></head>
<body>
<main>
<h1>Sorry, something went wrong.</h1>
<p id="error" role="alert">{{.}}</p>
</main>
</body>
</html>
`))

// dialogError answers a dialog request it refuses: a page saying why, HTTP 400.
func dialogError(w http.ResponseWriter, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_ = errorPage.Execute(w, message)
}

var dialogPage = template.Must(template.New("dialog").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}}</title></head>
<body>
<main>
<h1>{{.Title}}</h1>
<p>Signed in as {{.UserName}}. {{.App}} asks for access to your account.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="dialog" value="{{.ID}}">
{{- if .Signup}}
{{- if .Phones}}
<p><label for="phone">WhatsApp business phone number</label>
<select id="phone" name="phone">
{{- range .Phones}}
<option value="{{.ID}}">{{.Display}} ({{.VerifiedName}})</option>
{{- end}}
</select></p>
{{- else}}
<p>Your WhatsApp Business Account {{.WABAID}} is shared without a phone number.</p>
{{- end}}
{{- else}}
<fieldset>
<legend>What {{.App}} may do</legend>
<p>Your public profile is always shared.</p>
{{- range .Permissions}}
<p><input type="checkbox" id="permission-{{.}}" name="permission" value="{{.}}" checked> <label for="permission-{{.}}">{{.}}</label></p>
{{- end}}
</fieldset>
{{- if .Pages}}
<fieldset>
<legend>Pages {{.App}} may use</legend>
{{- range .Pages}}
<p><input type="checkbox" id="page-{{.ID}}" name="page" value="{{.ID}}" checked> <label for="page-{{.ID}}">{{.Name}}</label></p>
{{- end}}
</fieldset>
{{- end}}
{{- end}}
<p><button type="submit" id="continue" name="action" value="continue">Continue</button>
<button type="submit" id="cancel" name="action" value="cancel">Cancel</button></p>
</form>
</main>
</body>
</html>
`))

// openDialog answers GET /{v}/dialog/oauth: the consent page.
func (s *Server) openDialog(w http.ResponseWriter, r *http.Request, version string) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	d := &dialog{clientID: q.Get("client_id"), state: q.Get("state"), popup: q.Get("display") == "popup", origin: "*"}
	switch {
	case d.clientID != AppID:
		dialogError(w, "Invalid App ID: The provided app ID does not look like a valid app ID.")
		return
	case q.Get("response_type") != "" && q.Get("response_type") != "code":
		dialogError(w, "metatest's dialog answers response_type=code only.")
		return
	}
	if !d.popup {
		u, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
			dialogError(w, "URL blocked: This redirect failed because the redirect URI is not whitelisted in the app's Client OAuth Settings.")
			return
		}
		d.redirectURI = q.Get("redirect_uri")
	}
	if o, err := url.Parse(q.Get("origin")); err == nil && (o.Scheme == "http" || o.Scheme == "https") && o.Host != "" &&
		o.Path == "" && o.RawQuery == "" && o.User == nil {
		d.origin = o.Scheme + "://" + o.Host
	}
	s.mu.Lock()
	user := s.oauth.user
	s.mu.Unlock()
	view := map[string]any{"App": appName, "UserName": DialogUserName, "Action": "/" + version + "/dialog/oauth/confirm"}
	if q.Get("config_id") != "" {
		var extras struct {
			FeatureType string `json:"featureType"`
			Setup       struct {
				PreVerifiedPhone struct {
					IDs []string `json:"ids"`
				} `json:"preVerifiedPhone"`
			} `json:"setup"`
		}
		if e := q.Get("extras"); e != "" && json.Unmarshal([]byte(e), &extras) != nil {
			dialogError(w, "Invalid extras: not a JSON object.")
			return
		}
		if user.WABAID == "" && len(user.PhoneNumbers) == 0 {
			dialogError(w, "metatest: the dialog user has no WhatsApp Business Account (SetDialogUser).")
			return
		}
		d.signup = true
		d.onlyWABA = extras.FeatureType == "only_waba_sharing" || len(user.PhoneNumbers) == 0
		view["Title"], view["Signup"], view["WABAID"] = "Connect your WhatsApp Business Account", true, user.WABAID
		offered := slices.Clone(user.PhoneNumbers)
		s.mu.Lock()
		for _, id := range extras.Setup.PreVerifiedPhone.IDs {
			if display, ok := s.oauth.preVerified[id]; ok {
				d.preVerified = append(d.preVerified, id)
				offered = append(offered, PhoneNumber{ID: id, Display: display, VerifiedName: "pre-verified"})
			}
		}
		s.mu.Unlock()
		d.onlyWABA = d.onlyWABA && len(d.preVerified) == 0
		if !d.onlyWABA {
			view["Phones"] = offered
		}
	} else {
		for _, p := range strings.Split(q.Get("scope"), ",") {
			p = strings.TrimSpace(p)
			switch {
			case p == "" || p == "public_profile" || slices.Contains(d.scopes, p):
			case !permissionName.MatchString(p):
				dialogError(w, "Invalid Scopes: "+p+". This message is only shown to developers.")
				return
			default:
				d.scopes = append(d.scopes, p)
			}
		}
		view["Title"], view["Permissions"], view["Pages"] = "Log in with Facebook", d.scopes, user.Pages
	}
	id := randomHex(16)
	view["ID"] = id
	s.mu.Lock()
	s.oauth.dialogs[id] = d
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = dialogPage.Execute(w, view)
}

// confirmDialog answers the dialog's form: Continue mints a code, Cancel refuses.
func (s *Server) confirmDialog(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		dialogError(w, "The form could not be read.")
		return
	}
	s.mu.Lock()
	d := s.oauth.dialogs[r.PostForm.Get("dialog")]
	delete(s.oauth.dialogs, r.PostForm.Get("dialog"))
	user := s.oauth.user
	s.mu.Unlock()
	if d == nil {
		dialogError(w, "This dialog was answered already, or never opened.")
		return
	}
	switch r.PostForm.Get("action") {
	case "cancel":
		s.answerDialog(w, r, d, "", nil)
		return
	case "continue", "":
	default:
		dialogError(w, "The form's action is continue or cancel.")
		return
	}
	g := &grant{clientID: d.clientID, redirectURI: d.redirectURI, signup: d.signup, granted: []string{"public_profile"}}
	if d.signup {
		g.granted = append(g.granted, signupScopes...)
		g.wabaID = user.WABAID
		chosen := r.PostForm.Get("phone")
		if slices.Contains(d.preVerified, chosen) {
			// The pre-verified number joins the client's WABA under an id of its own.
			g.phoneID = s.claimPreVerified(chosen, user)
		} else if !d.onlyWABA {
			i := slices.IndexFunc(user.PhoneNumbers, func(p PhoneNumber) bool { return p.ID == chosen })
			if i < 0 {
				dialogError(w, "Choose one of your phone numbers.")
				return
			}
			g.phoneID, g.wabaID = user.PhoneNumbers[i].ID, user.PhoneNumbers[i].WABAID
		} else if g.wabaID == "" && len(user.PhoneNumbers) > 0 {
			// Only the WABA is shared: the one of the user's numbers.
			g.wabaID = user.PhoneNumbers[0].WABAID
		}
	} else {
		ticked := r.PostForm["permission"]
		for _, p := range ticked {
			if !slices.Contains(d.scopes, p) {
				dialogError(w, "The permission "+p+" was not asked for.")
				return
			}
		}
		for _, p := range d.scopes {
			if slices.Contains(ticked, p) {
				g.granted = append(g.granted, p)
			} else {
				g.declined = append(g.declined, p)
			}
		}
		for _, id := range r.PostForm["page"] {
			if !slices.ContainsFunc(user.Pages, func(p DialogPage) bool { return p.ID == id }) {
				dialogError(w, "The Page "+id+" is not one of yours.")
				return
			}
			if !slices.Contains(g.pages, id) {
				g.pages = append(g.pages, id)
			}
		}
	}
	code := authCode()
	s.mu.Lock()
	s.oauth.codes[code] = g
	s.mu.Unlock()
	s.answerDialog(w, r, d, code, g)
}

// claimPreVerified adds the pre-verified number id to the user's WABA as a phone number with a
// new id (the verified name of the user's numbers, if any), and returns that id.
func (s *Server) claimPreVerified(id string, user DialogUser) string {
	s.mu.Lock()
	display := s.oauth.preVerified[id]
	s.mu.Unlock()
	n, _ := rand.Int(rand.Reader, big.NewInt(1e14))
	phoneID := fmt.Sprintf("1%014d", n.Int64())
	s.AddPhoneNumber(phoneID, display, user.WABAID)
	if len(user.PhoneNumbers) > 0 {
		s.mu.Lock()
		s.phones[phoneID].VerifiedName = user.PhoneNumbers[0].VerifiedName
		s.mu.Unlock()
	}
	return phoneID
}

// authCode is an authorization code shaped like Meta's: "AQ" and url-safe base64.
func authCode() string {
	b := make([]byte, 96)
	_, _ = rand.Read(b)
	return "AQ" + base64.RawURLEncoding.EncodeToString(b)
}

var popupPage = template.Must(template.New("popup").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{{.App}}</title></head>
<body>
<main>
<h1>{{.Heading}}</h1>
<p>This window closes by itself.</p>
</main>
<script>
(function () {
  var opener = window.opener;
  if (opener) {
{{- if .Signup}}
    opener.postMessage(JSON.stringify({{.Signup}}), '*');
{{- end}}
    opener.postMessage({metatestLogin: {{.Login}}}, {{.Origin}});
  }
  window.close();
})();
</script>
</body>
</html>
`))

// answerDialog ends the dialog d: with code and its grant (Continue), or without (Cancel).
func (s *Server) answerDialog(w http.ResponseWriter, r *http.Request, d *dialog, code string, g *grant) {
	if !d.popup {
		q := url.Values{}
		if code != "" {
			q.Set("code", code)
		} else {
			q.Set("error", "access_denied")
			q.Set("error_code", "200")
			q.Set("error_description", "Permissions error")
			q.Set("error_reason", "user_denied")
		}
		if d.state != "" {
			q.Set("state", d.state)
		}
		u, _ := url.Parse(d.redirectURI)
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += q.Encode()
		// Facebook ends the redirect with an empty fragment of its own.
		u.Fragment = "_=_"
		http.Redirect(w, r, u.String(), http.StatusFound)
		return
	}
	login := map[string]any{"state": d.state}
	view := map[string]any{"App": appName, "Heading": "You're all set", "Origin": d.origin, "Login": login}
	if code != "" {
		login["code"] = code
	} else {
		login["error"] = "access_denied"
		view["Heading"] = "You cancelled"
	}
	if d.signup {
		event := map[string]any{"type": "WA_EMBEDDED_SIGNUP", "version": "3"}
		switch {
		case g == nil:
			event["event"], event["data"] = "CANCEL", map[string]any{"current_step": "PHONE_NUMBER_SETUP"}
		case g.phoneID == "":
			event["event"], event["data"] = "FINISH_ONLY_WABA", map[string]any{"waba_id": g.wabaID, "business_id": BusinessID}
		default:
			event["event"], event["data"] = "FINISH", map[string]any{"phone_number_id": g.phoneID, "waba_id": g.wabaID, "business_id": BusinessID}
		}
		view["Signup"] = event
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = popupPage.Execute(w, view)
}

// accessToken answers GET /{v}/oauth/access_token: a code for the user's token.
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		writeOAuthError(w, 100, 0, "Unsupported method: the code exchange is GET or POST.")
		return
	}
	_ = r.ParseForm()
	q := r.Form
	switch {
	case q.Get("client_id") != AppID:
		writeOAuthError(w, 101, 0, "Error validating application. Invalid application ID.")
		return
	case q.Get("client_secret") != AppSecret:
		writeOAuthError(w, 1, 0, "Error validating client secret.")
		return
	}
	code := q.Get("code")
	s.mu.Lock()
	g := s.oauth.codes[code]
	s.mu.Unlock()
	switch {
	case g == nil || g.clientID != q.Get("client_id"):
		writeOAuthError(w, 100, 36009, "This authorization code has been used.")
		return
	case q.Get("redirect_uri") != g.redirectURI:
		writeOAuthError(w, 100, 36008, "Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request")
		return
	}
	// A failure FailNext asked for leaves the code unused.
	if f, ok := s.takeFailure(); ok {
		s.writeError(w, &apiError{status: f.status, code: f.code, subcode: f.subcode, title: f.message})
		return
	}
	token := "EAAMetaTestUser" + randomHex(24) + "ZDZD"
	s.mu.Lock()
	if s.oauth.codes[code] != g {
		s.mu.Unlock()
		writeOAuthError(w, 100, 36009, "This authorization code has been used.")
		return
	}
	delete(s.oauth.codes, code)
	g.pageTokens = map[string]string{}
	s.oauth.grants[token] = g
	s.tokens[token] = true
	s.oauth.exchanged++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "token_type": "bearer", "expires_in": userTokenLifetime})
}

// debugToken answers GET /{v}/debug_token?input_token=…, with the app's token.
func (s *Server) debugToken(w http.ResponseWriter, r *http.Request) {
	switch app := bearer(r); {
	case r.Method != http.MethodGet:
		s.writeError(w, unsupportedRequest(r.Method, "debug_token"))
		return
	case app == "":
		s.writeError(w, &apiError{status: http.StatusBadRequest, code: 104, title: "An access token is required to request this resource."})
		return
	case app != AppID+"|"+AppSecret:
		writeOAuthError(w, 190, 0, "Invalid OAuth access token signature.")
		return
	}
	if f, ok := s.takeFailure(); ok {
		s.writeError(w, &apiError{status: f.status, code: f.code, subcode: f.subcode, title: f.message})
		return
	}
	input := r.URL.Query().Get("input_token")
	if input == "" {
		s.writeError(w, badParam("The parameter input_token is required."))
		return
	}
	now := time.Now().Unix()
	data := map[string]any{"app_id": AppID, "application": appName, "is_valid": true, "issued_at": now,
		"expires_at": now + userTokenLifetime, "data_access_expires_at": now + 90*24*3600}
	s.mu.Lock()
	g, pt, known := s.oauth.grants[input], s.oauth.pageTokens[input], s.tokens[input]
	if pt.pageID != "" {
		g = s.oauth.grants[pt.userToken]
	}
	var wabas []string
	for id := range s.wabas {
		wabas = append(wabas, id)
	}
	s.mu.Unlock()
	sort.Strings(wabas)
	switch {
	case input == ExpiredToken:
		data["type"], data["user_id"], data["is_valid"], data["expires_at"] = "SYSTEM_USER", UserID, false, now-3600
		data["scopes"] = systemScopes
		data["error"] = map[string]any{"code": 190, "subcode": 463, "message": "Error validating access token: Session has expired on Monday, 01-Jan-24 00:00:00 PST."}
	case g != nil:
		data["type"], data["user_id"] = "USER", DialogUserID
		if pt.pageID != "" {
			data["type"], data["profile_id"] = "PAGE", pt.pageID
		}
		data["scopes"], data["granular_scopes"] = g.granted, granular(g)
	case known:
		data["type"], data["user_id"], data["expires_at"] = "SYSTEM_USER", UserID, 0
		data["scopes"] = systemScopes
		data["granular_scopes"] = []any{
			map[string]any{"scope": "business_management"},
			map[string]any{"scope": "whatsapp_business_management", "target_ids": wabas},
			map[string]any{"scope": "whatsapp_business_messaging", "target_ids": wabas}}
	default:
		data = map[string]any{"is_valid": false, "scopes": []string{},
			"error": map[string]any{"code": 190, "message": "Invalid OAuth access token - Cannot parse access token"}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

// granular is the granular_scopes of a grant: a Page permission's target ids are the Pages
// ticked (which stand for their Instagram accounts too), a WhatsApp one's the WABA.
func granular(g *grant) []any {
	out := []any{}
	for _, scope := range g.granted {
		var targets []string
		switch {
		case strings.HasPrefix(scope, "pages_") || strings.HasPrefix(scope, "instagram_"):
			targets = g.pages
		case strings.HasPrefix(scope, "whatsapp_business_") && g.wabaID != "":
			targets = []string{g.wabaID}
		case scope == "business_management":
			out = append(out, map[string]any{"scope": scope})
			continue
		default:
			continue
		}
		if len(targets) > 0 {
			out = append(out, map[string]any{"scope": scope, "target_ids": targets})
		}
	}
	return out
}

// nonexistingField is Meta's answer to an edge the token's node does not have.
func nonexistingField(field, node string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: 100, title: "Tried accessing nonexisting field (" + field + ") on node type (" + node + ")"}
}

// onboarding answers the Graph API calls of a client's onboarding with a known token; handled
// is false for a request that is none of them (route answers it).
func (s *Server) onboarding(w http.ResponseWriter, r *http.Request, token, id, edge string) (handled bool, e *apiError) {
	s.mu.Lock()
	g, pt := s.oauth.grants[token], s.oauth.pageTokens[token]
	isPage, phone := s.pages[id] != "", s.phones[id]
	_, isWABA := s.wabas[id]
	pageName := s.pages[pt.pageID]
	preVerified := s.oauth.preVerified[id]
	s.mu.Unlock()
	get, post := r.Method == http.MethodGet, r.Method == http.MethodPost
	switch {
	case id == "me" && edge == "" && get && g != nil:
		writeJSON(w, http.StatusOK, map[string]any{"id": DialogUserID, "name": DialogUserName})
	case id == "me" && edge == "" && get && pt.pageID != "":
		writeJSON(w, http.StatusOK, map[string]any{"id": pt.pageID, "name": pageName})
	case id == "me" && edge == "permissions" && get:
		return true, s.permissions(w, g, pt)
	case id == "me" && edge == "accounts" && get:
		return true, s.accounts(w, r, token, g, pt)
	case isPage && edge == "subscribed_apps":
		return true, s.pageSubscribedApps(w, r, id, pt)
	case isWABA && edge == "subscribed_apps":
		return true, s.wabaSubscribedApps(w, r, token, id)
	case isWABA && edge == "phone_numbers" && get:
		return true, s.phoneNumbers(w, r, token, id)
	case phone != nil && edge == "register" && post:
		return true, s.register(w, r, token, *phone)
	case preVerified != "" && edge == "" && get:
		writeJSON(w, http.StatusOK, pick(map[string]any{"id": id, "phone_number": preVerified, "code_verification_status": "VERIFIED"},
			r.URL.Query().Get("fields"), "code_verification_status,phone_number,id"))
	default:
		return false, nil
	}
	return true, nil
}

// permissions answers GET /me/permissions.
func (s *Server) permissions(w http.ResponseWriter, g *grant, pt pageToken) *apiError {
	var data []any
	switch {
	case pt.pageID != "":
		return nonexistingField("permissions", "Page")
	case g != nil:
		for _, p := range g.granted {
			data = append(data, map[string]any{"permission": p, "status": "granted"})
		}
		for _, p := range g.declined {
			data = append(data, map[string]any{"permission": p, "status": "declined"})
		}
	default:
		for _, p := range systemScopes {
			data = append(data, map[string]any{"permission": p, "status": "granted"})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
	return nil
}

// accounts answers GET /me/accounts: the Pages granted, each with a Page token of its own
// (minted once per user token and Page).
func (s *Server) accounts(w http.ResponseWriter, r *http.Request, token string, g *grant, pt pageToken) *apiError {
	if pt.pageID != "" {
		return nonexistingField("accounts", "Page")
	}
	var all []map[string]any
	if g != nil {
		s.mu.Lock()
		for _, id := range g.pages {
			tok := g.pageTokens[id]
			if tok == "" {
				tok = "EAAMetaTestPage" + randomHex(24) + "ZDZD"
				g.pageTokens[id] = tok
				s.tokens[tok] = true
				s.oauth.pageTokens[tok] = pageToken{pageID: id, userToken: token}
			}
			node := map[string]any{"id": id, "name": s.pages[id], "access_token": tok, "category": "Software",
				"category_list": []any{map[string]any{"id": "2211", "name": "Software"}}, "tasks": pageTasks}
			all = append(all, pick(node, r.URL.Query().Get("fields"), "access_token,category,category_list,name,id,tasks"))
		}
		s.mu.Unlock()
	}
	s.writeList(w, r, all)
	return nil
}

// writeList answers a list edge a page at a time: limit (25 unless less, at most 100) from the
// after cursor, with Meta's paging cursors and next link.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, all []map[string]any) {
	size := 25
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		size = min(n, 100)
	}
	s.writePage(w, r, all, size)
}

// pageSubscribedApps answers /{page-id}/subscribed_apps, which takes the Page's own token.
func (s *Server) pageSubscribedApps(w http.ResponseWriter, r *http.Request, pageID string, pt pageToken) *apiError {
	if pt.pageID != pageID {
		return &apiError{status: http.StatusForbidden, code: 210, title: "A page access token is required to request this resource."}
	}
	switch r.Method {
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		_ = r.ParseForm()
		var fields []string
		for _, f := range strings.Split(r.Form.Get("subscribed_fields"), ",") {
			if f = strings.TrimSpace(f); f == "" || slices.Contains(fields, f) {
				continue
			}
			if !slices.Contains(pageFields, f) {
				return badParam("Param subscribed_fields[%d] must be one of {%s} - got %q.", len(fields), strings.Join(pageFields, ", "), f)
			}
			fields = append(fields, f)
		}
		if len(fields) == 0 {
			return badParam("The parameter subscribed_fields is required.")
		}
		s.mu.Lock()
		s.oauth.pageSubs[pageID] = fields
		s.mu.Unlock()
	case http.MethodGet:
		data := []any{}
		if fields := s.PageSubscriptions(pageID); fields != nil {
			data = append(data, map[string]any{"category": "Business", "link": "https://www.facebook.com/games/?app_id=" + AppID,
				"name": appName, "id": AppID, "subscribed_fields": fields})
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": data})
		return nil
	case http.MethodDelete:
		s.mu.Lock()
		delete(s.oauth.pageSubs, pageID)
		s.mu.Unlock()
	default:
		return unsupportedRequest(r.Method, pageID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

// mayManageWABA tells whether token may manage the WABA: the system user's (Token, and those
// AddToken adds), or the user token of an Embedded Signup that shared it.
func (s *Server) mayManageWABA(token, wabaID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.oauth.grants[token]; g != nil {
		return g.wabaID == wabaID
	}
	return s.tokens[token] && s.oauth.pageTokens[token].pageID == ""
}

var permissionsError = &apiError{status: http.StatusForbidden, code: 200, title: "Permissions error"}

// wabaSubscribedApps answers /{waba-id}/subscribed_apps.
func (s *Server) wabaSubscribedApps(w http.ResponseWriter, r *http.Request, token, wabaID string) *apiError {
	if !s.mayManageWABA(token, wabaID) {
		return permissionsError
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodPost:
		s.oauth.wabaSubs[wabaID] = true
	case http.MethodGet:
		data := []any{}
		if s.oauth.wabaSubs[wabaID] {
			data = append(data, map[string]any{"whatsapp_business_api_data": map[string]any{
				"id": AppID, "link": "https://www.facebook.com/games/?app_id=" + AppID, "name": appName}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": data})
		return nil
	case http.MethodDelete:
		delete(s.oauth.wabaSubs, wabaID)
	default:
		return unsupportedRequest(r.Method, wabaID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

// phoneNumbers answers GET /{waba-id}/phone_numbers, the WABA's numbers by id.
func (s *Server) phoneNumbers(w http.ResponseWriter, r *http.Request, token, wabaID string) *apiError {
	if !s.mayManageWABA(token, wabaID) {
		return permissionsError
	}
	s.mu.Lock()
	var phones []PhoneNumber
	for _, p := range s.phones {
		if p.WABAID == wabaID {
			phones = append(phones, *p)
		}
	}
	s.mu.Unlock()
	sort.Slice(phones, func(i, j int) bool { return phones[i].ID < phones[j].ID })
	var all []map[string]any
	for _, p := range phones {
		all = append(all, pick(s.phoneNode(p), r.URL.Query().Get("fields"), "verified_name,code_verification_status,display_phone_number,quality_rating,platform_type,throughput,id"))
	}
	s.writeList(w, r, all)
	return nil
}

// register answers POST /{phone-number-id}/register: the number on the Cloud API, with its
// two-step verification PIN (which a number registered before must repeat).
func (s *Server) register(w http.ResponseWriter, r *http.Request, token string, phone PhoneNumber) *apiError {
	if !s.mayManageWABA(token, phone.WABAID) {
		return permissionsError
	}
	_, body, e := readJSON(r)
	if e != nil {
		return e
	}
	pin, _ := body["pin"].(string)
	switch {
	case str(body, "messaging_product") != "whatsapp":
		return badParam("The parameter messaging_product is required and must be whatsapp.")
	case !pinDigits.MatchString(pin):
		return badParam("Param pin must be a 6-digit two-step verification PIN.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.oauth.registered[phone.ID]; ok && old != pin {
		return &apiError{status: http.StatusBadRequest, code: 133005, title: "Two step verification PIN Mismatch",
			details: "The PIN does not match the phone number's two-step verification PIN."}
	}
	s.oauth.registered[phone.ID] = pin
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

// sdk serves sdk.js: window.FB with init and login, whose popup is the server's dialog.
func (s *Server) sdk(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	quote := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	js := strings.NewReplacer("__PEER__", quote(s.URL), "__VERSION__", quote(sdkVersion), "__USER__", quote(DialogUserID)).Replace(sdkJS)
	w.Header().Set("Content-Type", "application/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(js))
}

// sdkJS is sdk.js; __PEER__, __VERSION__ and __USER__ are JSON strings.
const sdkJS = `// metatest's stand-in of Meta's JavaScript SDK: FB.init and FB.login (a popup of the
// OAuth dialog), for tests only.
(function () {
  'use strict';
  var peer = __PEER__;
  var peerOrigin = new URL(peer).origin;
  var settings = null;
  var pending = null;
  var unknown = function () { return {status: 'unknown', authResponse: null}; };

  function finish(login, response) {
    if (pending !== login) { return; }
    pending = null;
    clearInterval(login.timer);
    login.callback(response);
  }

  window.addEventListener('message', function (e) {
    var login = pending;
    if (!login || e.origin !== peerOrigin || e.source !== login.popup) { return; }
    var d = e.data;
    if (!d || typeof d !== 'object' || !d.metatestLogin) { return; }
    var r = d.metatestLogin;
    if (r.code) {
      finish(login, {status: 'connected', authResponse: {code: r.code, userID: __USER__}});
    } else {
      finish(login, unknown());
    }
  });

  window.FB = {
    init: function (options) {
      settings = options || {};
    },
    getLoginStatus: function (callback) {
      if (typeof callback === 'function') { callback(unknown()); }
    },
    login: function (callback, options) {
      callback = typeof callback === 'function' ? callback : function () {};
      options = options || {};
      if (!settings || !settings.appId) {
        console.error('FB.login() called before FB.init().');
        callback(unknown());
        return;
      }
      if (pending) { finish(pending, unknown()); }
      var q = new URLSearchParams();
      q.set('display', 'popup');
      q.set('client_id', String(settings.appId));
      q.set('response_type', 'code');
      q.set('origin', window.location.origin);
      if (options.config_id) { q.set('config_id', String(options.config_id)); }
      if (options.extras) { q.set('extras', JSON.stringify(options.extras)); }
      if (options.scope) { q.set('scope', String(options.scope)); }
      if (options.state) { q.set('state', String(options.state)); }
      var version = settings.version || __VERSION__;
      var popup = window.open(peer + '/' + version + '/dialog/oauth?' + q.toString(), 'fb-login', 'width=600,height=700');
      if (!popup) {
        callback(unknown());
        return;
      }
      var login = {callback: callback, popup: popup, timer: null};
      pending = login;
      login.timer = setInterval(function () {
        if (!popup.closed) { return; }
        clearInterval(login.timer);
        // The popup posts its answer and closes at once: let the message arrive first.
        setTimeout(function () { finish(login, unknown()); }, 300);
      }, 250);
    }
  };

  if (typeof window.fbAsyncInit === 'function') {
    window.fbAsyncInit();
  }
})();
`
