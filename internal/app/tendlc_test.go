package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// unregister deletes the key's mode's 10DLC campaigns, through the API.
func unregister(t testing.TB, in *instance, key string) {
	t.Helper()
	r := in.get("/v1/10dlc/campaigns", key)
	for _, c := range r.body["items"].([]any) {
		id := c.(map[string]any)["id"].(string)
		if d := in.do(http.MethodDelete, "/v1/10dlc/campaigns/"+id, key, nil); d.status != 204 {
			t.Fatalf("delete campaign %s = %d %v", id, d.status, d.body)
		}
	}
}

// verify sets a project's verification, as its operator does.
func verify(t testing.TB, in *instance, project string, v v1alpha1.Verification) {
	t.Helper()
	updateProject(t, in, project, func(s *v1alpha1.ProjectSpec) { s.Verification = v })
}

// updateProject changes a Project's spec, again when the controller wrote it meanwhile.
func updateProject(t testing.TB, in *instance, project string, change func(*v1alpha1.ProjectSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p v1alpha1.Project
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: project, Name: "project"}, &p); err != nil {
			return err
		}
		change(&p.Spec)
		return in.k8s.Update(context.Background(), &p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

const (
	brandBody = `{"displayName":"Acme","companyName":"Acme Inc","entityType":"PRIVATE_PROFIT","ein":"12-3456789",
		"vertical":"TECHNOLOGY","email":"ops@acme.example","phone":"+14155550100","street":"1 Main St","city":"San Francisco",
		"state":"CA","postalCode":"94105","country":"US","firstName":"Ada","lastName":"Lovelace","website":"https://acme.example"}`
	campaignFields = `"name":"%s","description":"Order and account notifications for Acme's customers who signed up.",
		"useCase":"ACCOUNT_NOTIFICATION","sampleMessages":["Your Acme order 1234 has shipped and arrives Friday."],
		"messageFlow":"Customers tick a box on Acme's checkout page to receive order updates by SMS.",
		"affiliateMarketing":false,"ageGated":false,"directLending":false,"embeddedLink":false,"embeddedPhone":false,
		"numberPooling":false,"subscriberHelp":false,"subscriberOptIn":true,"subscriberOptOut":true,"optOutKeywords":["stop"]`
)

func campaignBody(brandID, name string) string {
	return `{"brandId":"` + brandID + `",` + fmt.Sprintf(campaignFields, name) + `}`
}

// stepPaths are the method and path of each step of a v2 ten_dlc_required body.
func stepPaths(r response) []string {
	details, _ := r.body["details"].(map[string]any)
	steps, _ := details["registration"].([]any)
	out := []string{}
	for _, s := range steps {
		m := s.(map[string]any)
		method, _ := m["method"].(string)
		path, _ := m["path"].(string)
		out = append(out, strings.TrimSpace(method+" "+path))
	}
	return out
}

func TestTenDLCRegistrationLetsSMSToPlusOneGo(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.TenDLCSyncEvery = 100 * time.Millisecond })
	acme, key := unregisteredProject(t, in, v1alpha1.ProjectSpec{Verification: v1alpha1.VerificationBusinessApproved}, nil, apikey.Test)
	messages := func() int { return in.count(`SELECT count(*) FROM messages WHERE project = $1`, acme) }

	// Without a campaign: v1 403, nothing stored or counted; not +1 goes.
	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Your code is 1234"}`)
	if r.status != 403 || r.body["code"] != "ten_dlc_required" || !strings.Contains(r.body["message"].(string), "10DLC") {
		t.Fatalf("v1 +1 SMS without 10DLC = %d %v", r.status, r.body)
	}
	if n := messages(); n != 0 {
		t.Fatalf("a refused send stored %d messages", n)
	}
	if n := in.count(`SELECT count(*) FROM usage_counters WHERE project = $1`, acme); n != 0 {
		t.Errorf("a refused send took %d counters", n)
	}
	smsAvailable := func() bool {
		chans, _ := in.post("/v1/introspect/phone", key, `{"phoneNumber":"+14155550123"}`).body["availableChannels"].([]any)
		return slices.Contains(chans, any("sms"))
	}
	if smsAvailable() {
		t.Error("introspection offers SMS to a +1 number without 10DLC")
	}
	if r := in.post("/v1/messages", key, `{"to":"+447700900100","text":"x"}`); r.status != 200 {
		t.Fatalf("UK SMS = %d %v", r.status, r.body)
	}
	// A +1 WhatsApp message needs no 10DLC.
	openWindow(t, in, key, "+15005550101")
	if r := in.post("/v1/messages", key, `{"to":"+15005550101","text":"x","channel":"whatsapp"}`); r.status != 200 {
		t.Fatalf("+1 WhatsApp = %d %v", r.status, r.body)
	}

	// v2: the registration as ordered calls, and the sender's channels that reach the person.
	r = in.post("/v2/messages", key, `{"from":"+15005550006","to":"+15005550100","text":"x","channel":"sms"}`)
	want := []string{"POST /v1/10dlc/brands", "POST /v1/10dlc/brands/{brandId}/submit", "POST /v1/10dlc/brands/{brandId}/sync",
		"POST /v1/10dlc/campaigns", "POST /v1/10dlc/campaigns/{campaignId}/submit", "POST /v1/10dlc/campaigns/{campaignId}/sync",
		"POST /v1/10dlc/campaigns/{campaignId}/phone-numbers"}
	if r.status != 403 || r.body["code"] != "ten_dlc_required" || !slices.Equal(stepPaths(r), want) {
		t.Fatalf("v2 +1 SMS without 10DLC = %d %v\nsteps %v", r.status, r.body, stepPaths(r))
	}
	alts := r.body["details"].(map[string]any)["alternatives"].([]any)
	if len(alts) != 1 || alts[0].(map[string]any)["channel"] != "whatsapp" {
		t.Errorf("alternatives = %v", alts)
	}

	// Register: a brand, submitted; a campaign cannot be submitted before its brand is registered.
	r = in.post("/v1/10dlc/brands", key, brandBody)
	if r.status != 201 {
		t.Fatalf("create brand = %d %v", r.status, r.body)
	}
	brand := r.body["brand"].(map[string]any)
	brandID := brand["id"].(string)
	if brand["status"] != "draft" || brand["companyName"] != "Acme Inc" || brand["country"] != "US" {
		t.Errorf("brand = %v", brand)
	}
	if r := in.post("/v1/10dlc/brands/"+brandID+"/submit", key, ""); r.status != 200 || r.body["brand"].(map[string]any)["status"] != "pending" {
		t.Fatalf("submit brand = %d %v", r.status, r.body)
	}
	r = in.post("/v1/10dlc/campaigns", key, campaignBody(brandID, "Orders"))
	if r.status != 201 {
		t.Fatalf("create campaign = %d %v", r.status, r.body)
	}
	campaign := r.body["campaign"].(map[string]any)
	campaignID := campaign["id"].(string)
	if campaign["status"] != "draft" || campaign["registrationCostCents"] != 1500.0 || campaign["monthlyFeeCents"] != 1000.0 {
		t.Errorf("campaign = %v", campaign)
	}
	if r := in.post("/v1/10dlc/campaigns/"+campaignID+"/submit", key, ""); r.status != 400 || !strings.Contains(r.body["message"].(string), "pending") {
		t.Errorf("submit under a pending brand = %d %v", r.status, r.body)
	}
	// v2 now names the ids and what is left.
	r = in.post("/v2/messages", key, `{"from":"+15005550006","to":"+15005550100","text":"x","channel":"sms"}`)
	want = []string{"POST /v1/10dlc/brands/" + brandID + "/sync", "POST /v1/10dlc/campaigns/" + campaignID + "/submit",
		"POST /v1/10dlc/campaigns/" + campaignID + "/sync", "POST /v1/10dlc/campaigns/" + campaignID + "/phone-numbers"}
	if got := stepPaths(r); !slices.Equal(got, want) {
		t.Errorf("steps with a pending brand and a draft campaign = %v", got)
	}

	// The sandbox verifies the brand after its delay; the syncer records it.
	waitFor(t, func() bool {
		return in.get("/v1/10dlc/brands/"+brandID, key).body["brand"].(map[string]any)["status"] == "verified"
	})
	brand = in.get("/v1/10dlc/brands/"+brandID, key).body["brand"].(map[string]any)
	if brand["identityStatus"] != "VERIFIED" || brand["verifiedAt"] == nil || brand["submittedAt"] == nil {
		t.Errorf("verified brand = %v", brand)
	}
	if r := in.post("/v1/10dlc/campaigns/"+campaignID+"/submit", key, ""); r.status != 200 || r.body["campaign"].(map[string]any)["status"] != "pending" {
		t.Fatalf("submit campaign = %d %v", r.status, r.body)
	}
	// Still refused while the campaign is under review.
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"x"}`); r.status != 403 {
		t.Errorf("+1 SMS with a pending campaign = %d", r.status)
	}
	waitFor(t, func() bool {
		return in.post("/v1/10dlc/campaigns/"+campaignID+"/sync", key, "").body["campaign"].(map[string]any)["status"] == "approved"
	})
	campaign = in.get("/v1/10dlc/campaigns/"+campaignID, key).body["campaign"].(map[string]any)
	if campaign["approvedAt"] == nil || campaign["dailyLimit"] != 200000.0 {
		t.Errorf("approved campaign = %v", campaign)
	}
	r = in.post("/v1/messages", key, `{"to":"+15005550100","text":"Your code is 1234"}`)
	if r.status != 200 {
		t.Fatalf("+1 SMS with an approved campaign = %d %v", r.status, r.body)
	}
	if !smsAvailable() {
		t.Error("introspection leaves SMS out with an approved campaign")
	}

	// The sender's number goes under the campaign, once.
	r = in.post("/v1/10dlc/campaigns/"+campaignID+"/phone-numbers", key, `{"phoneNumberId":"main"}`)
	if r.status != 201 || r.body["assignment"].(map[string]any)["status"] != "active" || r.body["assignment"].(map[string]any)["phoneNumber"] != "+15005550006" {
		t.Fatalf("assign = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/10dlc/campaigns/"+campaignID+"/phone-numbers", key, `{"phoneNumberId":"main"}`); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"phoneNumberId"}) {
		t.Errorf("assign twice = %d %v", r.status, r.body)
	}
	if items := in.get("/v1/10dlc/campaigns/"+campaignID+"/phone-numbers", key).body["items"].([]any); len(items) != 1 {
		t.Errorf("numbers = %v", items)
	}

	// Live keys have their own registrations (TestTenDLCLiveThroughTwilio): the sandbox's are not theirs.
	live := newKey(t, in, acme, apikey.Live)
	if items := in.get("/v1/10dlc/brands", live).body["items"].([]any); len(items) != 0 {
		t.Errorf("live key sees test brands: %v", items)
	}

	// Deleting the campaign stops +1 SMS at once.
	if r := in.do(http.MethodDelete, "/v1/10dlc/campaigns/"+campaignID, key, nil); r.status != 204 {
		t.Fatalf("delete campaign = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"x"}`); r.status != 403 {
		t.Errorf("+1 SMS after the campaign went = %d", r.status)
	}
}

func TestTenDLCBrandNeedsBusinessVerification(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := unregisteredProject(t, in, v1alpha1.ProjectSpec{Verification: v1alpha1.VerificationIdentityApproved}, nil, apikey.Test)
	brandID := in.post("/v1/10dlc/brands", key, brandBody).body["brand"].(map[string]any)["id"].(string)
	r := in.post("/v1/10dlc/brands/"+brandID+"/submit", key, "")
	if r.status != 403 || r.body["code"] != "kyb_required" {
		t.Fatalf("submit without business verification = %d %v", r.status, r.body)
	}
	if b := in.get("/v1/10dlc/brands/"+brandID, key).body["brand"].(map[string]any); b["status"] != "draft" || b["submittedAt"] != nil {
		t.Errorf("refused brand changed: %v", b)
	}
	// v2 starts with the operator's step, then the draft's submission.
	r = in.post("/v2/messages", key, `{"from":"+15005550006","to":"+15005550100","text":"x","channel":"sms"}`)
	steps := r.body["details"].(map[string]any)["registration"].([]any)
	first := steps[0].(map[string]any)
	if first["method"] != nil || !strings.Contains(first["description"].(string), "business_approved") ||
		steps[1].(map[string]any)["path"] != "/v1/10dlc/brands/"+brandID+"/submit" {
		t.Errorf("steps without business verification = %v", steps)
	}
	// Once approved, it submits.
	verify(t, in, acme, v1alpha1.VerificationBusinessApproved)
	waitFor(t, func() bool { return in.post("/v1/10dlc/brands/"+brandID+"/submit", key, "").status == 200 })
}

func TestTenDLCBadInputChangesNothing(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := unregisteredProject(t, in, v1alpha1.ProjectSpec{Verification: v1alpha1.VerificationBusinessApproved}, nil, apikey.Test)
	brands := func() int { return len(in.get("/v1/10dlc/brands", key).body["items"].([]any)) }

	for body, paths := range map[string][]string{
		`{}`: {"city", "country", "displayName", "email", "entityType", "phone", "postalCode", "state", "street", "vertical"},
		strings.Replace(strings.Replace(brandBody, `"US"`, `"USA"`, 1), `"12-3456789"`, `"123456789"`, 1):                     {"country", "ein"},
		strings.Replace(strings.Replace(brandBody, `"PRIVATE_PROFIT"`, `"LLC"`, 1), `"ops@acme.example"`, `"ops at acme"`, 1): {"email", "entityType"},
		strings.Replace(brandBody, `"+14155550100"`, `"4155550100"`, 1):                                                       {"phone"},
		strings.Replace(brandBody, `"https://acme.example"`, `"acme.example"`, 1):                                             {"website"},
	} {
		r := in.post("/v1/10dlc/brands", key, body)
		if r.status != 400 || r.body["code"] != "invalid_request" || !slices.Equal(fieldPaths(r), paths) {
			t.Errorf("brand %s = %d %v, want %v", body, r.status, fieldPaths(r), paths)
		}
	}
	if r := in.post("/v1/10dlc/brands", key, `{"displayName":`); r.status != 400 || r.body["code"] != "invalid_json" {
		t.Errorf("broken JSON = %d %v", r.status, r.body)
	}
	if n := brands(); n != 0 {
		t.Fatalf("refused brands stored: %d", n)
	}

	// A brand incomplete for its entity type is created as a draft but not submitted.
	incomplete := strings.Replace(strings.Replace(brandBody, `"ein":"12-3456789",`, "", 1), `"firstName":"Ada",`, "", 1)
	brandID := in.post("/v1/10dlc/brands", key, incomplete).body["brand"].(map[string]any)["id"].(string)
	if r := in.post("/v1/10dlc/brands/"+brandID+"/submit", key, ""); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"firstName", "ein"}) {
		t.Errorf("submit incomplete = %d %v", r.status, r.body)
	}
	if r := in.do(http.MethodPatch, "/v1/10dlc/brands/"+brandID, key, strings.NewReader(`{"ein":"12-3456789","firstName":"Ada"}`)); r.status != 200 {
		t.Fatalf("patch draft = %d %v", r.status, r.body)
	}

	// Campaigns: every field's rule, an unknown brand, nothing stored.
	for body, paths := range map[string][]string{
		`{}`: {"brandId", "name", "description", "useCase", "affiliateMarketing", "ageGated", "directLending", "embeddedLink",
			"embeddedPhone", "numberPooling", "subscriberHelp", "subscriberOptIn", "subscriberOptOut", "sampleMessages"},
		campaignBody("brand_nope", "x"): {"brandId"},
		strings.Replace(campaignBody(brandID, "x"), `"ACCOUNT_NOTIFICATION"`, `"SPAM"`, 1):                                             {"useCase"},
		strings.Replace(campaignBody(brandID, "x"), `Order and account notifications for Acme's customers who signed up.`, "short", 1): {"description"},
		strings.Replace(campaignBody(brandID, "x"), `["Your Acme order 1234 has shipped and arrives Friday."]`, `["hi"]`, 1):           {"sampleMessages[0]"},
		strings.Replace(campaignBody(brandID, "x"), `["stop"]`, `["stop now"]`, 1):                                                     {"optOutKeywords[0]"},
		strings.Replace(campaignBody(brandID, "x"), `"optOutKeywords"`, `"subUseCases":["MARKETING"],"optOutKeywords"`, 1):             {"subUseCases"},
	} {
		r := in.post("/v1/10dlc/campaigns", key, body)
		if r.status != 400 || !slices.Equal(fieldPaths(r), paths) {
			t.Errorf("campaign %.80s = %d %v, want %v", body, r.status, fieldPaths(r), paths)
		}
	}
	if items := in.get("/v1/10dlc/campaigns", key).body["items"].([]any); len(items) != 0 {
		t.Fatalf("refused campaigns stored: %v", items)
	}

	// A brand with campaigns is not deleted; a submitted one is not changed; unknown ids are 404.
	campaignID := in.post("/v1/10dlc/campaigns", key, campaignBody(brandID, "Orders")).body["campaign"].(map[string]any)["id"].(string)
	if r := in.do(http.MethodDelete, "/v1/10dlc/brands/"+brandID, key, nil); r.status != 400 {
		t.Errorf("delete a brand with a campaign = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/10dlc/brands/"+brandID+"/submit", key, ""); r.status != 200 {
		t.Fatalf("submit = %d %v", r.status, r.body)
	}
	if r := in.do(http.MethodPatch, "/v1/10dlc/brands/"+brandID, key, strings.NewReader(`{"city":"Oakland"}`)); r.status != 400 {
		t.Errorf("patch a pending brand = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/10dlc/brands/"+brandID+"/submit", key, ""); r.status != 400 {
		t.Errorf("submit twice = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/10dlc/campaigns/"+campaignID+"/phone-numbers", key, `{"phoneNumberId":"main"}`); r.status != 400 {
		t.Errorf("assign to a draft campaign = %d %v", r.status, r.body)
	}
	for _, path := range []string{"/v1/10dlc/brands/brand_nope", "/v1/10dlc/campaigns/cmp_nope", "/v1/10dlc/campaigns/cmp_nope/phone-numbers"} {
		if r := in.get(path, key); r.status != 404 {
			t.Errorf("GET %s = %d", path, r.status)
		}
	}
	// Another project's brand is not found.
	_, other := unregisteredProject(t, in, v1alpha1.ProjectSpec{}, nil, apikey.Test)
	if r := in.get("/v1/10dlc/brands/"+brandID, other); r.status != 404 {
		t.Errorf("another project's brand = %d", r.status)
	}

	// The use cases; a page of one brand with a cursor to the next.
	if uc := in.get("/v1/10dlc/brands/use-cases", key).body["useCases"].([]any); len(uc) != 12 || uc[0].(map[string]any)["name"] != "2FA" {
		t.Errorf("use cases = %v", uc)
	}
	in.post("/v1/10dlc/brands", key, brandBody)
	page := in.get("/v1/10dlc/brands?limit=1", key)
	next, _ := page.body["nextCursor"].(string)
	if len(page.body["items"].([]any)) != 1 || next == "" {
		t.Fatalf("first page = %v", page.body)
	}
	if p2 := in.get("/v1/10dlc/brands?limit=1&cursor="+next, key); len(p2.body["items"].([]any)) != 1 || p2.body["nextCursor"] != "" {
		t.Errorf("second page = %v", p2.body)
	}
	// A key without full access reads but does not register.
	acmeRead := newKey(t, in, acme, apikey.Test, string(apikey.PermissionMessagesRead))
	if r := in.post("/v1/10dlc/brands", acmeRead, brandBody); r.status != 403 {
		t.Errorf("register with a read key = %d", r.status)
	}
}

func TestTenDLCLiveThroughTwilio(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted(), publicAtListener)
	acme, key := twilioProject(t, in, peer, rcv)
	verify(t, in, acme, v1alpha1.VerificationBusinessApproved)
	// Unregistered, though twilioProject's projects are registered (before any send).
	if _, err := in.db.Exec(context.Background(), `DELETE FROM ten_dlc_campaigns WHERE project = $1`, acme); err != nil {
		t.Fatal(err)
	}
	if r := in.post("/v1/messages", key, `{"to":"+14155550123","text":"x"}`); r.status != 403 || r.body["code"] != "ten_dlc_required" {
		t.Fatalf("live +1 SMS without 10DLC = %d %v", r.status, r.body)
	}
	if n := len(peer.Messages()); n != 0 {
		t.Fatalf("a refused send reached Twilio: %d messages", n)
	}

	// The brand goes through Trust Hub: both bundles submitted, then the brand registration.
	brandID := in.post("/v1/10dlc/brands", key, brandBody).body["brand"].(map[string]any)["id"].(string)
	var r response
	waitFor(t, func() bool { r = in.post("/v1/10dlc/brands/"+brandID+"/submit", key, ""); return r.status != 403 })
	if r.status != 200 || r.body["brand"].(map[string]any)["status"] != "pending" {
		t.Fatalf("submit through Twilio = %d %v", r.status, r.body)
	}
	reg := peer.Registrations()
	if len(reg.Brands) != 1 || len(reg.CustomerProfiles) != 1 || len(reg.TrustProducts) != 1 ||
		reg.CustomerProfiles[0].Status != twiliotest.BundlePendingReview || reg.TrustProducts[0].Status != twiliotest.BundlePendingReview ||
		reg.Brands[0].CustomerProfileBundleSID != reg.CustomerProfiles[0].SID || reg.Brands[0].A2PProfileBundleSID != reg.TrustProducts[0].SID {
		t.Fatalf("Twilio holds %+v", reg)
	}
	// Twilio still pending: sync changes nothing; approved with a verified identity: verified.
	if b := in.post("/v1/10dlc/brands/"+brandID+"/sync", key, "").body["brand"].(map[string]any); b["status"] != "pending" {
		t.Errorf("brand while Twilio reviews = %v", b)
	}
	peer.DecideBrand(reg.Brands[0].SID, "APPROVED", "VERIFIED", 87, "")
	b := in.post("/v1/10dlc/brands/"+brandID+"/sync", key, "").body["brand"].(map[string]any)
	if b["status"] != "verified" || b["brandScore"] != 87.0 || b["identityStatus"] != "VERIFIED" {
		t.Fatalf("brand after Twilio approved = %v", b)
	}

	// Twilio refuses a campaign: 400 with its words, the campaign stays a draft.
	campaignID := in.post("/v1/10dlc/campaigns", key, campaignBody(brandID, "Orders")).body["campaign"].(map[string]any)["id"].(string)
	peer.FailNext("/v1/Services", 400, 21714, "Messaging Service limit reached")
	r = in.post("/v1/10dlc/campaigns/"+campaignID+"/submit", key, "")
	if r.status != 400 || !strings.Contains(r.body["message"].(string), "21714") {
		t.Errorf("Twilio's refusal = %d %v", r.status, r.body)
	}
	if c := in.get("/v1/10dlc/campaigns/"+campaignID, key).body["campaign"].(map[string]any); c["status"] != "draft" || c["submittedAt"] != nil {
		t.Errorf("refused campaign changed: %v", c)
	}
	if r := in.post("/v1/10dlc/campaigns/"+campaignID+"/submit", key, ""); r.status != 200 {
		t.Fatalf("submit campaign = %d %v", r.status, r.body)
	}
	reg = peer.Registrations()
	if len(reg.Campaigns) != 1 || reg.Campaigns[0].Usecase != "ACCOUNT_NOTIFICATION" || reg.Campaigns[0].BrandSID != reg.Brands[0].SID ||
		!slices.Equal(reg.Campaigns[0].OptOutKeywords, []string{"STOP"}) {
		t.Fatalf("Twilio's campaign = %+v", reg.Campaigns)
	}
	peer.DecideCampaign(reg.Campaigns[0].SID, "VERIFIED", "")
	if c := in.post("/v1/10dlc/campaigns/"+campaignID+"/sync", key, "").body["campaign"].(map[string]any); c["status"] != "approved" {
		t.Fatalf("campaign after Twilio verified it = %v", c)
	}

	// The sender's number joins the campaign's messaging service; a number Twilio does not hold is refused.
	pn := peer.AddIncomingNumber("+15005550006")
	if r := in.post("/v1/10dlc/campaigns/"+campaignID+"/phone-numbers", key, `{"phoneNumberId":"main"}`); r.status != 201 {
		t.Fatalf("assign = %d %v", r.status, r.body)
	}
	if svc := peer.Registrations().Services; len(svc) != 1 || !slices.Equal(svc[0].PhoneNumberSIDs, []string{pn}) {
		t.Errorf("messaging service = %+v", svc)
	}
	if r := in.post("/v1/messages", key, `{"to":"+14155550123","text":"Your order has shipped"}`); r.status != 200 {
		t.Fatalf("live +1 SMS with an approved campaign = %d %v", r.status, r.body)
	}
}
