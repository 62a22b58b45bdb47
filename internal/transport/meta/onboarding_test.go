package meta_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

const (
	callbackURI = "https://app.example.com/invitations/callback"
	userWABA    = "102290129340477"
	userPhone1  = "106540352240001"
	userPhone2  = "106540352240002"
)

// onboardingPeer is graphPeer with a dialog user who administers pages Pages and owns a WABA
// of two numbers.
func onboardingPeer(t *testing.T, pages int) (*metatest.Server, *meta.Transport) {
	t.Helper()
	peer, tr := graphPeer(t, metatest.Options{})
	u := metatest.DialogUser{WABAID: userWABA, PhoneNumbers: []metatest.PhoneNumber{
		{ID: userPhone1, Display: "+1 555-010-0001"}, {ID: userPhone2, Display: "+1 555-010-0002", VerifiedName: "Acme Café"}}}
	for i := range pages {
		u.Pages = append(u.Pages, metatest.DialogPage{ID: fmt.Sprint(104000000001000 + i), Name: fmt.Sprint("Acme ", i)})
	}
	peer.SetDialogUser(u)
	return peer, tr
}

var (
	dialogField = regexp.MustCompile(`name="dialog" value="([0-9a-f]+)"`)
	popupCode   = regexp.MustCompile(`metatestLogin: \{"code":"(AQ[A-Za-z0-9_-]+)"`)
)

// consent opens the peer's OAuth dialog with q, as a browser would, answers its form with
// choices and returns the code: the redirect's, or the popup's login message's.
func consent(t *testing.T, peer *metatest.Server, q, choices url.Values) string {
	t.Helper()
	q.Set("client_id", metatest.AppID)
	q.Set("response_type", "code")
	resp, err := http.Get(peer.URL + "/v21.0/dialog/oauth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := dialogField.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("the dialog answered %d:\n%s", resp.StatusCode, page)
	}
	form := url.Values{"dialog": {string(m[1])}, "action": {"continue"}}
	for k, v := range choices {
		form[k] = v
	}
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirects.PostForm(peer.URL+"/v21.0/dialog/oauth/confirm", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if q.Get("display") == "popup" {
		body, _ := io.ReadAll(resp.Body)
		m := popupCode.FindSubmatch(body)
		if m == nil {
			t.Fatalf("the popup's answer has no code:\n%s", body)
		}
		return string(m[1])
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("the dialog answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

// loginCode is the code of a Facebook Login (redirect) granting scope on pages.
func loginCode(t *testing.T, peer *metatest.Server, scope []string, pages ...string) string {
	t.Helper()
	return consent(t, peer, url.Values{"redirect_uri": {callbackURI}, "scope": {strings.Join(scope, ",")}, "state": {"s1"}},
		url.Values{"permission": scope, "page": pages})
}

// signupToken is the user token of an Embedded Signup (the SDK's popup) choosing phone.
func signupToken(t *testing.T, peer *metatest.Server, tr *meta.Transport, phone string) string {
	t.Helper()
	code := consent(t, peer, url.Values{"display": {"popup"}, "config_id": {"987654321"},
		"extras": {`{"setup":{},"featureType":"","sessionInfoVersion":"3"}`}}, url.Values{"phone": {phone}})
	token, err := tr.ExchangeCode(context.Background(), metatest.AppID, metatest.AppSecret, code, "")
	if err != nil {
		t.Fatalf("ExchangeCode: %v", err)
	}
	return token
}

// loginToken is the user token of a Facebook Login granting scope on pages.
func loginToken(t *testing.T, peer *metatest.Server, tr *meta.Transport, scope []string, pages ...string) string {
	t.Helper()
	token, err := tr.ExchangeCode(context.Background(), metatest.AppID, metatest.AppSecret, loginCode(t, peer, scope, pages...), callbackURI)
	if err != nil {
		t.Fatalf("ExchangeCode: %v", err)
	}
	return token
}

// failure is err's Failure, or the test ends.
func failure(t *testing.T, what string, err error, code, providerCode string) *transport.Failure {
	t.Helper()
	f := transport.AsFailure(err)
	if f == nil || f.Code != code || f.ProviderCode != providerCode {
		t.Fatalf("%s: err = %v, want %s (%s)", what, err, code, providerCode)
	}
	return f
}

// headers records the Authorization header of each request.
type headers struct {
	mu   sync.Mutex
	auth []string
}

func (h *headers) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.auth = append(h.auth, r.Header.Get("Authorization"))
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestExchangeCode(t *testing.T) {
	t.Parallel()
	peer, _ := onboardingPeer(t, 1)
	rec := &headers{}
	tr := meta.New(meta.Config{BaseURL: peer.URL, HTTP: &http.Client{Transport: rec}})
	ctx := context.Background()
	code := loginCode(t, peer, []string{"pages_messaging"}, "104000000001000")

	_, err := tr.ExchangeCode(ctx, "999", metatest.AppSecret, code, callbackURI)
	failure(t, "another app id", err, meta.CodeAuthFailed, "101")
	_, err = tr.ExchangeCode(ctx, metatest.AppID, "not-the-secret", code, callbackURI)
	failure(t, "a wrong secret", err, meta.CodeAuthFailed, "1")
	_, err = tr.ExchangeCode(ctx, metatest.AppID, metatest.AppSecret, code, "https://app.example.com/elsewhere")
	f := failure(t, "another redirect_uri", err, meta.CodeInvalidRequest, "100/36008")
	if strings.Contains(f.Error(), code) || strings.Contains(f.Error(), metatest.AppSecret) {
		t.Fatalf("the error repeats the code or the secret: %v", f)
	}
	// Meta's outage is tried again, the code still good.
	peer.FailNext(1, http.StatusInternalServerError, 1, 0, "An unknown error has occurred.")
	_, err = tr.ExchangeCode(ctx, metatest.AppID, metatest.AppSecret, code, callbackURI)
	var tmp *transport.Temporary
	if !errors.As(err, &tmp) {
		t.Fatalf("an outage: err = %v, want Temporary", err)
	}
	if peer.Exchanged() != 0 {
		t.Fatalf("Exchanged() = %d after refusals", peer.Exchanged())
	}

	token, err := tr.ExchangeCode(ctx, metatest.AppID, metatest.AppSecret, code, callbackURI)
	if err != nil || !strings.HasPrefix(token, "EAA") || peer.Exchanged() != 1 {
		t.Fatalf("ExchangeCode = %q, %v (%d exchanges)", token, err, peer.Exchanged())
	}
	_, err = tr.ExchangeCode(ctx, metatest.AppID, metatest.AppSecret, code, callbackURI)
	failure(t, "a code used", err, meta.CodeInvalidRequest, "100/36009")

	rec.mu.Lock()
	for i, a := range rec.auth {
		if a != "" {
			t.Errorf("exchange %d carried Authorization %q", i, a)
		}
	}
	rec.mu.Unlock()
	// What the transport refuses itself.
	if _, err := tr.ExchangeCode(ctx, metatest.AppID, metatest.AppSecret, "", ""); transport.AsFailure(err) == nil {
		t.Fatalf("an empty code: err = %v", err)
	}
}

func TestGrantedScopes(t *testing.T) {
	t.Parallel()
	peer, tr := onboardingPeer(t, 2)
	ctx := context.Background()
	user := signupToken(t, peer, tr, userPhone2)
	scopes, err := tr.GrantedScopes(ctx, metatest.AppID, metatest.AppSecret, user)
	want := map[string][]string{"whatsapp_business_management": {userWABA}, "whatsapp_business_messaging": {userWABA}}
	if err != nil || !reflect.DeepEqual(scopes, want) {
		t.Fatalf("GrantedScopes of an Embedded Signup = %v, %v; want %v", scopes, err, want)
	}
	user = loginToken(t, peer, tr, []string{"pages_show_list", "pages_messaging"}, "104000000001001")
	scopes, err = tr.GrantedScopes(ctx, metatest.AppID, metatest.AppSecret, user)
	want = map[string][]string{"pages_show_list": {"104000000001001"}, "pages_messaging": {"104000000001001"}}
	if err != nil || !reflect.DeepEqual(scopes, want) {
		t.Fatalf("GrantedScopes of a Facebook Login = %v, %v; want %v", scopes, err, want)
	}

	for _, token := range []string{"EAAnotatoken", metatest.ExpiredToken} {
		if _, err := tr.GrantedScopes(ctx, metatest.AppID, metatest.AppSecret, token); !errors.Is(err, meta.ErrInvalidToken) {
			t.Errorf("GrantedScopes of %s: err = %v, want ErrInvalidToken", token, err)
		}
	}
	_, err = tr.GrantedScopes(ctx, metatest.AppID, "0a1b2c3d4e5f60718293a4b5c6d7e8f0", user)
	if f := failure(t, "a wrong app secret", err, meta.CodeAuthFailed, "190"); errors.Is(err, meta.ErrInvalidToken) || strings.Contains(f.Error(), user) {
		t.Fatalf("a wrong app secret: err = %v", err)
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	peer, tr := onboardingPeer(t, 1)
	code := consent(t, peer, url.Values{"redirect_uri": {callbackURI}, "scope": {"pages_show_list,pages_messaging,pages_manage_metadata"}},
		url.Values{"permission": {"pages_messaging", "pages_show_list"}, "page": {"104000000001000"}})
	user, err := tr.ExchangeCode(context.Background(), metatest.AppID, metatest.AppSecret, code, callbackURI)
	if err != nil {
		t.Fatal(err)
	}
	perms, err := tr.Permissions(context.Background(), user)
	want := map[string]string{"public_profile": "granted", "pages_show_list": "granted", "pages_messaging": "granted", "pages_manage_metadata": "declined"}
	if err != nil || !reflect.DeepEqual(perms, want) {
		t.Fatalf("Permissions = %v, %v; want %v", perms, err, want)
	}
	_, err = tr.Permissions(context.Background(), metatest.ExpiredToken)
	failure(t, "an expired token", err, meta.CodeAuthFailed, "190/463")
	_, err = tr.Permissions(context.Background(), "")
	failure(t, "no token", err, meta.CodeAuthFailed, "")
}

func TestPages(t *testing.T) {
	t.Parallel()
	// More Pages than one answer holds: the second comes by Meta's next link.
	peer, tr := onboardingPeer(t, 150)
	var ids []string
	for i := range 150 {
		if i != 7 {
			ids = append(ids, fmt.Sprint(104000000001000+i))
		}
	}
	user := loginToken(t, peer, tr, []string{"pages_show_list", "pages_messaging"}, ids...)
	pages, err := tr.Pages(context.Background(), user)
	if err != nil || len(pages) != len(ids) {
		t.Fatalf("Pages = %d pages, %v; want %d", len(pages), err, len(ids))
	}
	seen := map[string]bool{}
	for i, p := range pages {
		if p.ID != ids[i] || p.Name == "" || !strings.HasPrefix(p.AccessToken, "EAA") || seen[p.AccessToken] || len(p.Tasks) == 0 {
			t.Fatalf("pages[%d] = %+v, want Page %s with a token of its own", i, p, ids[i])
		}
		seen[p.AccessToken] = true
	}
	_, err = tr.Pages(context.Background(), "")
	failure(t, "no token", err, meta.CodeAuthFailed, "")
}

func TestPagesNextOffHost(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"id":"1","name":"A","access_token":"EAApage","tasks":["MANAGE"]}],
			"paging":{"next":"https://elsewhere.example.com/v21.0/me/accounts?after=x"}}`)
	}))
	t.Cleanup(srv.Close)
	tr := meta.New(meta.Config{BaseURL: srv.URL})
	if _, err := tr.Pages(context.Background(), "EAAuser"); err == nil || calls.Load() != 1 {
		t.Fatalf("a next page off the host: err = %v after %d calls", err, calls.Load())
	}
}

func TestSubscribePage(t *testing.T) {
	t.Parallel()
	peer, tr := onboardingPeer(t, 2)
	ctx := context.Background()
	user := loginToken(t, peer, tr, []string{"pages_messaging", "pages_manage_metadata"}, "104000000001000", "104000000001001")
	pages, err := tr.Pages(ctx, user)
	if err != nil || len(pages) != 2 {
		t.Fatalf("Pages = %v, %v", pages, err)
	}
	if err := tr.SubscribePage(ctx, pages[0].AccessToken, pages[0].ID); err != nil {
		t.Fatalf("SubscribePage: %v", err)
	}
	want := []string{"messages", "messaging_postbacks", "message_deliveries", "message_reads"}
	if got := peer.PageSubscriptions(pages[0].ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("PageSubscriptions = %v, want %v", got, want)
	}
	// Not the Page's own token: the user's, another Page's, none.
	err = tr.SubscribePage(ctx, user, pages[1].ID)
	f := failure(t, "the user token", err, meta.CodePermissionDenied, "210")
	if strings.Contains(f.Error(), user) {
		t.Fatalf("the error repeats the token: %v", f)
	}
	err = tr.SubscribePage(ctx, pages[0].AccessToken, pages[1].ID)
	failure(t, "another Page's token", err, meta.CodePermissionDenied, "210")
	err = tr.SubscribePage(ctx, "", pages[1].ID)
	failure(t, "no token", err, meta.CodeAuthFailed, "")
	if peer.PageSubscriptions(pages[1].ID) != nil {
		t.Fatal("a refused subscription was recorded")
	}
}

func TestSubscribeWABA(t *testing.T) {
	t.Parallel()
	peer, tr := onboardingPeer(t, 1)
	ctx := context.Background()
	user := signupToken(t, peer, tr, userPhone1)
	if err := tr.SubscribeWABA(ctx, user, userWABA); err != nil || !peer.WABASubscribed(userWABA) {
		t.Fatalf("SubscribeWABA: %v (subscribed: %v)", err, peer.WABASubscribed(userWABA))
	}
	// The business token reaches its WABA only; the Provider's every one.
	err := tr.SubscribeWABA(ctx, user, graphWABA)
	failure(t, "another WABA", err, meta.CodePermissionDenied, "200")
	if err := tr.SubscribeWABA(ctx, "", graphWABA); err != nil || !peer.WABASubscribed(graphWABA) {
		t.Fatalf("SubscribeWABA with the Provider's token: %v", err)
	}
}

func TestRegisterPhone(t *testing.T) {
	t.Parallel()
	peer, tr := onboardingPeer(t, 1)
	ctx := context.Background()
	user := signupToken(t, peer, tr, userPhone1)
	if err := tr.RegisterPhone(ctx, user, userPhone1, "246810"); err != nil {
		t.Fatalf("RegisterPhone: %v", err)
	}
	if pin, ok := peer.Registered(userPhone1); !ok || pin != "246810" {
		t.Fatalf("Registered = %q, %v", pin, ok)
	}
	// A PIN that is not 6 digits is refused before Meta is asked.
	for _, pin := range []string{"", "12345", "1234567", "12345a"} {
		err := tr.RegisterPhone(ctx, user, userPhone2, pin)
		if f := failure(t, "pin "+pin, err, meta.CodeInvalidRequest, ""); pin != "" && strings.Contains(f.Error(), pin) {
			t.Fatalf("the error repeats the PIN: %v", f)
		}
	}
	if _, ok := peer.Registered(userPhone2); ok {
		t.Fatal("a refused PIN registered the number")
	}
	// A number registered before wants its PIN again; Meta's refusal does not repeat it.
	err := tr.RegisterPhone(ctx, user, userPhone1, "135799")
	if f := failure(t, "another PIN", err, meta.CodeRejected, "133005"); strings.Contains(f.Error(), "135799") {
		t.Fatalf("the error repeats the PIN: %v", f)
	}
}

func TestWABAPhoneNumbers(t *testing.T) {
	t.Parallel()
	peer, tr := onboardingPeer(t, 1)
	user := signupToken(t, peer, tr, userPhone2)
	phones, err := tr.WABAPhoneNumbers(context.Background(), user, userWABA)
	want := []meta.BusinessPhone{
		{ID: userPhone1, DisplayPhoneNumber: "+1 555-010-0001", VerifiedName: metatest.VerifiedName},
		{ID: userPhone2, DisplayPhoneNumber: "+1 555-010-0002", VerifiedName: "Acme Café"}}
	if err != nil || !reflect.DeepEqual(phones, want) {
		t.Fatalf("WABAPhoneNumbers = %+v, %v; want %+v", phones, err, want)
	}
	_, err = tr.WABAPhoneNumbers(context.Background(), user, graphWABA)
	failure(t, "another WABA", err, meta.CodePermissionDenied, "200")
}

// A pre-verified number: read with the Provider's token, offered by Embedded Signup when its
// extras name it, and in the client's WABA under a new id once picked.
func TestPreVerifiedNumber(t *testing.T) {
	t.Parallel()
	peer, tr := onboardingPeer(t, 0)
	peer.AddPreVerifiedPhone("900000000000001", "+1 555-010-0099")
	number, err := tr.PreVerifiedNumber(context.Background(), "900000000000001")
	if err != nil || number != "+1 555-010-0099" {
		t.Fatalf("PreVerifiedNumber = %q, %v", number, err)
	}
	if _, err := tr.PreVerifiedNumber(context.Background(), "900000000000002"); err == nil {
		t.Error("an unknown pre-verified number was read")
	}
	code := consent(t, peer, url.Values{"display": {"popup"}, "config_id": {"987654321"},
		"extras": {`{"setup":{"preVerifiedPhone":{"ids":["900000000000001"]}},"featureType":"","sessionInfoVersion":"3"}`}},
		url.Values{"phone": {"900000000000001"}})
	user, err := tr.ExchangeCode(context.Background(), metatest.AppID, metatest.AppSecret, code, "")
	if err != nil {
		t.Fatal(err)
	}
	phones, err := tr.WABAPhoneNumbers(context.Background(), user, userWABA)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(phones, func(p meta.BusinessPhone) bool { return p.DisplayPhoneNumber == "+1 555-010-0099" })
	if i < 0 || phones[i].ID == "900000000000001" || len(phones) != 3 {
		t.Errorf("the client's numbers after the signup = %+v", phones)
	}
}
