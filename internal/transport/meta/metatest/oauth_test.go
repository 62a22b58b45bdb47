package metatest_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

const (
	redirectURI = "https://app.example.com/invitations/callback?i=7"
	userPage1   = "104000000000011"
	userPage2   = "104000000000012"
	userWABA    = "102290129340477"
	userPhone1  = "106540352240001"
	userPhone2  = "106540352240002"
)

// noRedirects is a client that hands a redirect back instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// dialogPeer is a peer whose dialog user administers two Pages and owns a WABA with two numbers.
func dialogPeer(t *testing.T) *metatest.Server {
	t.Helper()
	s := newPeer(t, metatest.Options{})
	s.SetDialogUser(metatest.DialogUser{
		Pages:  []metatest.DialogPage{{ID: userPage1, Name: "Acme Bakery"}, {ID: userPage2, Name: "Acme Café"}},
		WABAID: userWABA,
		PhoneNumbers: []metatest.PhoneNumber{{ID: userPhone1, Display: "+1 555-010-0001"},
			{ID: userPhone2, Display: "+1 555-010-0002", VerifiedName: "Acme Café"}},
	})
	return s
}

// getDialog opens the OAuth dialog with q and returns its status and page.
func getDialog(t *testing.T, s *metatest.Server, q url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get(s.URL + "/v21.0/dialog/oauth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("the dialog answered %s", ct)
	}
	return resp.StatusCode, string(b)
}

var dialogField = regexp.MustCompile(`name="dialog" value="([0-9a-f]+)"`)

// answerDialog opens the dialog with q and posts its form with the choices (action, permission,
// page, phone); it returns the answer, unfollowed, and its body.
func answerDialog(t *testing.T, s *metatest.Server, q, choices url.Values) (*http.Response, string) {
	t.Helper()
	status, page := getDialog(t, s, q)
	m := dialogField.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil {
		t.Fatalf("the dialog answered %d without a form:\n%s", status, page)
	}
	form := url.Values{"dialog": {m[1]}}
	for k, v := range choices {
		form[k] = v
	}
	resp, err := noRedirects.PostForm(s.URL+"/v21.0/dialog/oauth/confirm", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func loginQuery(scope, state string) url.Values {
	return url.Values{"client_id": {metatest.AppID}, "redirect_uri": {redirectURI}, "state": {state},
		"response_type": {"code"}, "scope": {scope}}
}

func signupQuery() url.Values {
	return url.Values{"client_id": {metatest.AppID}, "display": {"popup"}, "response_type": {"code"},
		"config_id": {"987654321"}, "extras": {`{"setup":{},"featureType":"","sessionInfoVersion":"3"}`},
		"origin": {"http://127.0.0.1:8080"}}
}

// exchange trades a code at the peer's /oauth/access_token.
func exchange(t *testing.T, s *metatest.Server, clientID, secret, code, redirect string) (int, map[string]any) {
	t.Helper()
	q := url.Values{"client_id": {clientID}, "client_secret": {secret}, "code": {code}}
	if redirect != "" {
		q.Set("redirect_uri", redirect)
	}
	status, _, answer := call(t, s, http.MethodGet, "/v21.0/oauth/access_token?"+q.Encode(), "", nil)
	return status, answer
}

func TestDialogRefuses(t *testing.T) {
	t.Parallel()
	s := dialogPeer(t)
	for name, q := range map[string]url.Values{
		"another app":        {"client_id": {"999"}, "redirect_uri": {redirectURI}, "scope": {"pages_messaging"}},
		"no client_id":       {"redirect_uri": {redirectURI}},
		"no redirect_uri":    {"client_id": {metatest.AppID}, "scope": {"pages_messaging"}},
		"a relative one":     {"client_id": {metatest.AppID}, "redirect_uri": {"/callback"}},
		"a token flow":       {"client_id": {metatest.AppID}, "redirect_uri": {redirectURI}, "response_type": {"token"}},
		"a malformed scope":  {"client_id": {metatest.AppID}, "redirect_uri": {redirectURI}, "scope": {"pages messaging!"}},
		"extras not JSON":    {"client_id": {metatest.AppID}, "display": {"popup"}, "config_id": {"1"}, "extras": {"{"}},
		"signup without one": nil,
	} {
		if q == nil {
			bare := newPeer(t, metatest.Options{})
			if status, page := getDialog(t, bare, signupQuery()); status != http.StatusBadRequest || !strings.Contains(page, `id="error"`) {
				t.Errorf("%s: %d\n%s", name, status, page)
			}
			continue
		}
		status, page := getDialog(t, s, q)
		if status != http.StatusBadRequest || !strings.Contains(page, `id="error"`) || strings.Contains(page, `id="continue"`) {
			t.Errorf("%s: the dialog answered %d\n%s", name, status, page)
		}
	}
	if _, page := getDialog(t, s, url.Values{"client_id": {"999"}, "redirect_uri": {redirectURI}}); !strings.Contains(page, "Invalid App ID") {
		t.Errorf("another app's dialog does not say Invalid App ID:\n%s", page)
	}
	// A form is answered once, and only for a dialog the peer opened.
	resp, _ := noRedirects.PostForm(s.URL+"/v21.0/dialog/oauth/confirm", url.Values{"dialog": {"0123abcd"}, "action": {"continue"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a form of no dialog answered %d", resp.StatusCode)
	}
	// A Page the user does not administer, a permission not asked for.
	for _, choices := range []url.Values{
		{"action": {"continue"}, "permission": {"pages_messaging"}, "page": {pageID}},
		{"action": {"continue"}, "permission": {"ads_management"}},
	} {
		if resp, _ := answerDialog(t, s, loginQuery("pages_messaging", "s"), choices); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%v: answered %d", choices, resp.StatusCode)
		}
	}
}

func TestDialogFacebookLogin(t *testing.T) {
	t.Parallel()
	s := dialogPeer(t)
	q := loginQuery("pages_show_list,pages_messaging,pages_manage_metadata,public_profile", "st-1")
	status, page := getDialog(t, s, q)
	if status != http.StatusOK {
		t.Fatalf("the dialog answered %d:\n%s", status, page)
	}
	for _, want := range []string{
		`<button type="submit" id="continue"`, `<button type="submit" id="cancel"`,
		`name="permission" value="pages_show_list" checked`, `name="permission" value="pages_messaging" checked`,
		`name="permission" value="pages_manage_metadata" checked`,
		`name="page" value="` + userPage1 + `" checked`, `name="page" value="` + userPage2 + `" checked`,
		`<label for="page-` + userPage2 + `">Acme Café</label>`, `<html lang="en">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the dialog has no %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, `value="public_profile"`) || strings.Contains(page, `id="phone"`) {
		t.Errorf("the dialog offers public_profile or a phone:\n%s", page)
	}
	// Continue with one permission unticked and one Page.
	resp, _ := answerDialog(t, s, q, url.Values{"action": {"continue"},
		"permission": {"pages_show_list", "pages_messaging"}, "page": {userPage2}})
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("Continue answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	code := loc.Query().Get("code")
	if loc.Host != "app.example.com" || loc.Path != "/invitations/callback" || loc.Query().Get("i") != "7" ||
		loc.Query().Get("state") != "st-1" || !strings.HasPrefix(code, "AQ") || loc.Fragment != "_=_" {
		t.Fatalf("Continue redirected to %s", loc)
	}
	status, answer := exchange(t, s, metatest.AppID, metatest.AppSecret, code, redirectURI)
	token, _ := answer["access_token"].(string)
	if status != 200 || token == "" || answer["token_type"] != "bearer" || answer["expires_in"] != float64(5183944) {
		t.Fatalf("exchange = %d %v", status, answer)
	}
	_, _, perms := call(t, s, http.MethodGet, "/v21.0/me/permissions", token, nil)
	got := map[string]string{}
	for _, p := range perms["data"].([]any) {
		pm := p.(map[string]any)
		got[pm["permission"].(string)] = pm["status"].(string)
	}
	want := map[string]string{"public_profile": "granted", "pages_show_list": "granted", "pages_messaging": "granted", "pages_manage_metadata": "declined"}
	if len(got) != len(want) {
		t.Fatalf("permissions = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("permissions = %v, want %v", got, want)
		}
	}
	// Only the Page ticked, with a token of its own that is the Page's.
	_, _, accounts := call(t, s, http.MethodGet, "/v21.0/me/accounts", token, nil)
	data, _ := accounts["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("/me/accounts = %v", accounts)
	}
	acct := data[0].(map[string]any)
	pageToken, _ := acct["access_token"].(string)
	if acct["id"] != userPage2 || acct["name"] != "Acme Café" || pageToken == "" || len(acct["tasks"].([]any)) != 6 {
		t.Fatalf("/me/accounts = %v", accounts)
	}
	if _, _, me := call(t, s, http.MethodGet, "/v21.0/me", pageToken, nil); me["id"] != userPage2 {
		t.Fatalf("/me with the Page token = %v", me)
	}
	if _, _, me := call(t, s, http.MethodGet, "/v21.0/me", token, nil); me["id"] != metatest.DialogUserID {
		t.Fatalf("/me with the user token = %v", me)
	}
	if _, _, me := call(t, s, http.MethodGet, "/v21.0/me", metatest.Token, nil); me["id"] != metatest.UserID {
		t.Fatalf("/me with the system user token = %v", me)
	}
	// The same token again on a second read.
	_, _, again := call(t, s, http.MethodGet, "/v21.0/me/accounts", token, nil)
	if again["data"].([]any)[0].(map[string]any)["access_token"] != pageToken {
		t.Fatal("a second /me/accounts minted another Page token")
	}
}

func TestDialogCancelRedirect(t *testing.T) {
	t.Parallel()
	s := dialogPeer(t)
	resp, _ := answerDialog(t, s, loginQuery("pages_messaging", "abc 1"), url.Values{"action": {"cancel"}})
	want := redirectURI + "&error=access_denied&error_code=200&error_description=Permissions+error&error_reason=user_denied&state=abc+1#_=_"
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
		t.Fatalf("Cancel answered %d, Location\n%s\nwant\n%s", resp.StatusCode, resp.Header.Get("Location"), want)
	}
}

var loginCode = regexp.MustCompile(`"code":"(AQ[A-Za-z0-9_-]+)"`)

func TestEmbeddedSignupPopup(t *testing.T) {
	t.Parallel()
	s := dialogPeer(t)
	status, page := getDialog(t, s, signupQuery())
	if status != http.StatusOK {
		t.Fatalf("the dialog answered %d:\n%s", status, page)
	}
	for _, want := range []string{`<select id="phone" name="phone">`, `<option value="` + userPhone1 + `">&#43;1 555-010-0001 (` + metatest.VerifiedName + `)</option>`,
		`<option value="` + userPhone2 + `">&#43;1 555-010-0002 (Acme Café)</option>`, `id="continue"`, `id="cancel"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the dialog has no %s:\n%s", want, page)
		}
	}
	resp, body := answerDialog(t, s, signupQuery(), url.Values{"action": {"continue"}, "phone": {userPhone2}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Continue answered %d:\n%s", resp.StatusCode, body)
	}
	finish := `opener.postMessage(JSON.stringify({"data":{"business_id":"` + metatest.BusinessID + `","phone_number_id":"` + userPhone2 +
		`","waba_id":"` + userWABA + `"},"event":"FINISH","type":"WA_EMBEDDED_SIGNUP","version":"3"}), '*');`
	m := loginCode.FindStringSubmatch(body)
	if !strings.Contains(body, finish) || m == nil || !strings.Contains(body, `"http://127.0.0.1:8080");`) ||
		!strings.Contains(body, "window.close()") || strings.Index(body, finish) > strings.Index(body, "metatestLogin") {
		t.Fatalf("the popup's answer is not FINISH then the login result:\n%s", body)
	}
	// A code of the SDK is exchanged without a redirect_uri.
	if status, answer := exchange(t, s, metatest.AppID, metatest.AppSecret, m[1], redirectURI); status != 400 {
		t.Fatalf("exchange with a redirect_uri = %d %v", status, answer)
	}
	status, answer := exchange(t, s, metatest.AppID, metatest.AppSecret, m[1], "")
	token, _ := answer["access_token"].(string)
	if status != 200 || token == "" {
		t.Fatalf("exchange = %d %v", status, answer)
	}
	// The user token may manage the WABA it was granted, not another.
	if status, _, answer := call(t, s, http.MethodPost, "/v21.0/"+userWABA+"/subscribed_apps", token, nil); status != 200 || answer["success"] != true {
		t.Fatalf("subscribed_apps = %d %v", status, answer)
	}
	if !s.WABASubscribed(userWABA) || s.WABASubscribed(wabaID) {
		t.Fatal("WABASubscribed does not say the WABA alone")
	}
	if status, _, answer := call(t, s, http.MethodPost, "/v21.0/"+wabaID+"/subscribed_apps", token, nil); status != 403 {
		t.Fatalf("subscribed_apps of another WABA = %d %v", status, answer)
	}

	// Cancel: CANCEL, then the login result without a code.
	_, body = answerDialog(t, s, signupQuery(), url.Values{"action": {"cancel"}})
	cancel := `JSON.stringify({"data":{"current_step":"PHONE_NUMBER_SETUP"},"event":"CANCEL","type":"WA_EMBEDDED_SIGNUP","version":"3"})`
	if !strings.Contains(body, cancel) || loginCode.MatchString(body) || !strings.Contains(body, `"error":"access_denied"`) {
		t.Fatalf("the popup's answer to Cancel:\n%s", body)
	}
	// Facebook Login in a popup posts the login result only.
	q := loginQuery("pages_messaging", "")
	q.Del("redirect_uri")
	q.Set("display", "popup")
	_, body = answerDialog(t, s, q, url.Values{"action": {"continue"}, "permission": {"pages_messaging"}})
	if strings.Contains(body, "WA_EMBEDDED_SIGNUP") || !loginCode.MatchString(body) || !strings.Contains(body, `}, "*");`) {
		t.Fatalf("the popup's answer to Facebook Login:\n%s", body)
	}
}

func TestSDK(t *testing.T) {
	t.Parallel()
	s := newPeer(t, metatest.Options{})
	resp, err := http.Get(s.URL + metatest.SDKPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	js := string(b)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/javascript") {
		t.Fatalf("sdk.js answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"window.FB = {", "init: function (options)", "login: function (callback, options)",
		`var peer = "` + s.URL + `";`, "'/dialog/oauth?'", "'fb-login', 'width=600,height=700'", "q.set('display', 'popup')",
		"q.set('config_id'", "JSON.stringify(options.extras)", "metatestLogin", "status: 'connected'", "popup.closed",
		"window.fbAsyncInit()"} {
		if !strings.Contains(js, want) {
			t.Errorf("sdk.js has no %s", want)
		}
	}
	if strings.Contains(js, "__") {
		t.Error("sdk.js keeps a placeholder")
	}
}

func TestAccessToken(t *testing.T) {
	t.Parallel()
	s := dialogPeer(t)
	resp, _ := answerDialog(t, s, loginQuery("pages_messaging", ""), url.Values{"permission": {"pages_messaging"}, "page": {userPage1}})
	loc, _ := url.Parse(resp.Header.Get("Location"))
	code := loc.Query().Get("code")
	if code == "" || loc.Query().Has("state") {
		t.Fatalf("Continue (Enter, no action) redirected to %s", loc)
	}
	for _, c := range []struct {
		name                   string
		clientID, secret, code string
		redirect               string
		code_, subcode         int
	}{
		{"another app", "999", metatest.AppSecret, code, redirectURI, 101, 0},
		{"a wrong secret", metatest.AppID, "nope", code, redirectURI, 1, 0},
		{"an unknown code", metatest.AppID, metatest.AppSecret, "AQnope", redirectURI, 100, 36009},
		{"another redirect_uri", metatest.AppID, metatest.AppSecret, code, "https://app.example.com/other", 100, 36008},
		{"no redirect_uri", metatest.AppID, metatest.AppSecret, code, "", 100, 36008},
	} {
		status, answer := exchange(t, s, c.clientID, c.secret, c.code, c.redirect)
		code_, subcode, _ := graphErr(answer)
		msg, _ := answer["error"].(map[string]any)["message"].(string)
		if status != 400 || code_ != c.code_ || subcode != c.subcode || strings.HasPrefix(msg, "(#") {
			t.Errorf("%s: %d %v", c.name, status, answer)
		}
	}
	if s.Exchanged() != 0 {
		t.Fatalf("Exchanged() = %d after refusals", s.Exchanged())
	}
	if status, answer := exchange(t, s, metatest.AppID, metatest.AppSecret, code, redirectURI); status != 200 {
		t.Fatalf("exchange = %d %v", status, answer)
	}
	status, answer := exchange(t, s, metatest.AppID, metatest.AppSecret, code, redirectURI)
	if c, sc, _ := graphErr(answer); status != 400 || c != 100 || sc != 36009 || answer["error"].(map[string]any)["message"] != "This authorization code has been used." {
		t.Fatalf("a second exchange = %d %v", status, answer)
	}
	if s.Exchanged() != 1 {
		t.Fatalf("Exchanged() = %d", s.Exchanged())
	}
}

func TestDebugToken(t *testing.T) {
	t.Parallel()
	s := dialogPeer(t)
	_, body := answerDialog(t, s, signupQuery(), url.Values{"action": {"continue"}, "phone": {userPhone1}})
	_, answer := exchange(t, s, metatest.AppID, metatest.AppSecret, loginCode.FindStringSubmatch(body)[1], "")
	user := answer["access_token"].(string)
	app := metatest.AppID + "|" + metatest.AppSecret

	if status, _, answer := call(t, s, http.MethodGet, "/v21.0/debug_token?input_token="+user, metatest.Token, nil); status != 400 {
		t.Fatalf("debug_token with the system user's token = %d %v", status, answer)
	} else if c, _, _ := graphErr(answer); c != 190 {
		t.Fatalf("debug_token with the system user's token = %v", answer)
	}
	_, _, answer = call(t, s, http.MethodGet, "/v21.0/debug_token?input_token="+user, app, nil)
	d := answer["data"].(map[string]any)
	if d["is_valid"] != true || d["type"] != "USER" || d["app_id"] != metatest.AppID || d["application"] != "Switchboard Test" || d["user_id"] != metatest.DialogUserID {
		t.Fatalf("debug_token = %v", answer)
	}
	var scopes []string
	for _, g := range d["granular_scopes"].([]any) {
		gm := g.(map[string]any)
		targets := gm["target_ids"].([]any)
		if len(targets) != 1 || targets[0] != userWABA {
			t.Fatalf("granular_scopes = %v", d["granular_scopes"])
		}
		scopes = append(scopes, gm["scope"].(string))
	}
	if !slices.Equal(scopes, []string{"whatsapp_business_management", "whatsapp_business_messaging"}) {
		t.Fatalf("granular_scopes = %v", d["granular_scopes"])
	}
	for _, input := range []string{"EAAnotatoken", metatest.ExpiredToken} {
		_, _, answer = call(t, s, http.MethodGet, "/v21.0/debug_token?input_token="+input, app, nil)
		d = answer["data"].(map[string]any)
		if d["is_valid"] != false || d["error"].(map[string]any)["code"] != float64(190) {
			t.Fatalf("debug_token of %s = %v", input, answer)
		}
	}
}

func TestPagesAndPhones(t *testing.T) {
	t.Parallel()
	s := dialogPeer(t)
	resp, _ := answerDialog(t, s, loginQuery("pages_messaging", ""), url.Values{"permission": {"pages_messaging"}, "page": {userPage1, userPage2}})
	loc, _ := url.Parse(resp.Header.Get("Location"))
	_, answer := exchange(t, s, metatest.AppID, metatest.AppSecret, loc.Query().Get("code"), redirectURI)
	user := answer["access_token"].(string)

	// A page at a time, by Meta's next link.
	_, _, first := call(t, s, http.MethodGet, "/v21.0/me/accounts?fields=id,name&limit=1", user, nil)
	next, _ := first["paging"].(map[string]any)["next"].(string)
	if len(first["data"].([]any)) != 1 || !strings.HasPrefix(next, s.URL+"/v21.0/me/accounts?") {
		t.Fatalf("first page = %v", first)
	}
	_, _, second := call(t, s, http.MethodGet, strings.TrimPrefix(next, s.URL), user, nil)
	if d := second["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != userPage2 || d[0].(map[string]any)["access_token"] != nil {
		t.Fatalf("second page = %v", second)
	}
	if _, ok := second["paging"].(map[string]any)["next"]; ok {
		t.Fatalf("the last page names a next one: %v", second)
	}
	_, _, all := call(t, s, http.MethodGet, "/v21.0/me/accounts", user, nil)
	page1Token := all["data"].([]any)[0].(map[string]any)["access_token"].(string)

	// subscribed_apps takes the Page's own token and fields Meta knows.
	for _, c := range []struct {
		token, query  string
		status, code_ int
	}{
		{user, "?subscribed_fields=messages", 403, 210},
		{metatest.Token, "?subscribed_fields=messages", 403, 210},
		{page1Token, "", 400, 100},
		{page1Token, "?subscribed_fields=messages,bogus", 400, 100},
	} {
		status, _, answer := call(t, s, http.MethodPost, "/v21.0/"+userPage1+"/subscribed_apps"+c.query, c.token, nil)
		if code_, _, _ := graphErr(answer); status != c.status || code_ != c.code_ {
			t.Errorf("subscribed_apps%s = %d %v", c.query, status, answer)
		}
	}
	if status, _, answer := call(t, s, http.MethodPost, "/v21.0/"+userPage2+"/subscribed_apps?subscribed_fields=messages", page1Token, nil); status != 403 {
		t.Errorf("another Page's subscribed_apps = %d %v", status, answer)
	}
	status, _, answer := call(t, s, http.MethodPost, "/v21.0/"+userPage1+"/subscribed_apps?subscribed_fields=messages,message_reads", page1Token, nil)
	if status != 200 || answer["success"] != true || !slices.Equal(s.PageSubscriptions(userPage1), []string{"messages", "message_reads"}) {
		t.Fatalf("subscribed_apps = %d %v; PageSubscriptions = %v", status, answer, s.PageSubscriptions(userPage1))
	}

	// A Facebook Login grants no WABA; the system user's token manages every one.
	if status, _, _ := call(t, s, http.MethodGet, "/v21.0/"+userWABA+"/phone_numbers", user, nil); status != 403 {
		t.Fatalf("phone_numbers with a Facebook Login token = %d", status)
	}
	_, _, phones := call(t, s, http.MethodGet, "/v21.0/"+userWABA+"/phone_numbers", metatest.Token, nil)
	d := phones["data"].([]any)
	if len(d) != 2 || d[0].(map[string]any)["id"] != userPhone1 || d[1].(map[string]any)["verified_name"] != "Acme Café" ||
		d[0].(map[string]any)["quality_rating"] != "GREEN" || d[0].(map[string]any)["display_phone_number"] != "+1 555-010-0001" {
		t.Fatalf("phone_numbers = %v", phones)
	}

	// register: 6 digits, and the same PIN again.
	for _, c := range []struct {
		body          map[string]any
		status, code_ int
	}{
		{map[string]any{"messaging_product": "whatsapp", "pin": "12345"}, 400, 100},
		{map[string]any{"messaging_product": "whatsapp", "pin": 123456}, 400, 100},
		{map[string]any{"pin": "123456"}, 400, 100},
		{map[string]any{"messaging_product": "whatsapp", "pin": "123456"}, 200, 0},
		{map[string]any{"messaging_product": "whatsapp", "pin": "123456"}, 200, 0},
		{map[string]any{"messaging_product": "whatsapp", "pin": "654321"}, 400, 133005},
	} {
		status, _, answer := call(t, s, http.MethodPost, "/v21.0/"+userPhone1+"/register", metatest.Token, c.body)
		code_, _, details := graphErr(answer)
		if status != c.status || code_ != c.code_ || (status == 400 && details == "") {
			t.Errorf("register %v = %d %v", c.body, status, answer)
		}
	}
	if pin, ok := s.Registered(userPhone1); !ok || pin != "123456" {
		t.Fatalf("Registered = %q, %v", pin, ok)
	}
	if _, ok := s.Registered(userPhone2); ok {
		t.Fatal("a number never registered is Registered")
	}
}
