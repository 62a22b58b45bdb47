package twiliotest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// numbersOf are the phone numbers of an AvailablePhoneNumbers answer.
func numbersOf(body map[string]any) string {
	var out []string
	list, _ := body["available_phone_numbers"].([]any)
	for _, n := range list {
		out = append(out, n.(map[string]any)["phone_number"].(string))
	}
	return fmt.Sprint(out)
}

// isTwilioError reports whether body is Twilio's error body for status and code.
func isTwilioError(body map[string]any, status, code int) bool {
	return body["code"] == float64(code) && body["status"] == float64(status) && body["message"] != "" &&
		body["more_info"] == fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code)
}

func TestPeerAvailableNumbers(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	acct := peer.URL + "/2010-04-01/Accounts/" + twiliotest.AccountSID
	local := acct + "/AvailablePhoneNumbers/US/Local.json"

	status, _, body := do(t, "GET", local, nil, true)
	if status != 200 || numbersOf(body) != "[+14155550100 +14155550101 +14155550102 +14155550103 +14155550104]" ||
		body["next_page_uri"] != nil || body["page_size"] != float64(50) {
		t.Fatalf("US local = %d %v", status, body)
	}
	first := body["available_phone_numbers"].([]any)[0].(map[string]any)
	caps := first["capabilities"].(map[string]any)
	if first["friendly_name"] != "(415) 555-0100" || first["locality"] != "San Francisco" || first["region"] != "CA" ||
		first["iso_country"] != "US" || first["address_requirements"] != "none" || first["beta"] != false ||
		caps["voice"] != true || caps["SMS"] != true || caps["MMS"] != true || caps["fax"] != false {
		t.Errorf("first number = %v", first)
	}

	for query, want := range map[string]string{
		"?Contains=5550103":                     "[+14155550103]",
		"?Contains=%2B1415555010*":              "[+14155550100 +14155550101 +14155550102 +14155550103 +14155550104]",
		"?Contains=JKL":                         "[+14155550100 +14155550101 +14155550102 +14155550103 +14155550104]", // 555 on a keypad
		"?AreaCode=415&SmsEnabled=true":         "[+14155550100 +14155550101 +14155550102 +14155550103 +14155550104]",
		"?AreaCode=212":                         "[]",
		"?MmsEnabled=true&VoiceEnabled=true":    "[+14155550100 +14155550101 +14155550102 +14155550103 +14155550104]",
		"?SmsEnabled=false&Contains=5550100":    "[+14155550100]",
		"?PageSize=2&Page=2":                    "[+14155550104]",
		"?Contains=00&PageSize=1&Page=0":        "[+14155550100]",
		"?Contains=99999":                       "[]",
		"?Contains=0104&SmsEnabled=true&Page=0": "[+14155550104]",
	} {
		status, _, body := do(t, "GET", local+query, nil, true)
		if status != 200 || numbersOf(body) != want {
			t.Errorf("%s = %d %v, want %s", query, status, numbersOf(body), want)
		}
	}
	// Pages name the next one.
	_, _, body = do(t, "GET", local+"?PageSize=2", nil, true)
	next, _ := body["next_page_uri"].(string)
	if next == "" || body["previous_page_uri"] != nil {
		t.Fatalf("first page of 2 = %v", body)
	}
	if _, _, body := do(t, "GET", peer.URL+next, nil, true); numbersOf(body) != "[+14155550102 +14155550103]" || body["previous_page_uri"] == nil {
		t.Errorf("next page = %v", body)
	}

	if _, _, body := do(t, "GET", acct+"/AvailablePhoneNumbers/DE/Local.json?SmsEnabled=true", nil, true); numbersOf(body) != "[]" {
		t.Errorf("DE local with SMS = %v", body)
	}
	peer.AddAvailableNumber("de", "mobile", twiliotest.AvailableNumberSpec{PhoneNumber: "+4915100000001", SMS: true, Voice: true})
	if _, _, body := do(t, "GET", acct+"/AvailablePhoneNumbers/DE/Mobile.json", nil, true); numbersOf(body) != "[+4915100000001]" {
		t.Errorf("DE mobile after AddAvailableNumber = %v", body)
	}

	for _, c := range []struct {
		name, url    string
		auth         bool
		status, code int
	}{
		{"no credentials", local, false, 401, 20003},
		{"unknown country", acct + "/AvailablePhoneNumbers/FR/Local.json", true, 404, 20404},
		{"type not sold there", acct + "/AvailablePhoneNumbers/GB/TollFree.json", true, 404, 20404},
		{"unknown type", acct + "/AvailablePhoneNumbers/US/Landline.json", true, 404, 20404},
		{"bad Contains", local + "?Contains=41-5", true, 400, 20001},
		{"bad AreaCode", local + "?AreaCode=4155", true, 400, 20001},
		{"bad SmsEnabled", local + "?SmsEnabled=maybe", true, 400, 20001},
		{"bad PageSize", local + "?PageSize=0", true, 400, 20001},
	} {
		status, _, body := do(t, "GET", c.url, nil, c.auth)
		if status != c.status || !isTwilioError(body, c.status, c.code) {
			t.Errorf("%s: %d %v, want %d with Twilio's error body for %d", c.name, status, body, c.status, c.code)
		}
	}
	if status, _, body := do(t, "PUT", local, nil, true); status != 405 || !isTwilioError(body, 405, 20004) {
		t.Errorf("PUT = %d %v", status, body)
	}
}

// deleteRaw sends a DELETE as Twilio's clients do; the answer's status and body.
func deleteRaw(t *testing.T, target string, auth bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.SetBasicAuth(twiliotest.AccountSID, twiliotest.AuthToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPeerBuyAndRelease(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	acct := peer.URL + "/2010-04-01/Accounts/" + twiliotest.AccountSID
	incoming := acct + "/IncomingPhoneNumbers.json"

	buy := url.Values{"PhoneNumber": {"+14155550102"}, "SmsUrl": {"https://sb.example/sms"}, "SmsMethod": {"POST"},
		"VoiceUrl": {"https://sb.example/voice"}, "StatusCallback": {"https://sb.example/status"}}
	if status, _, body := do(t, "POST", incoming, buy, false); status != 401 || !isTwilioError(body, 401, 20003) {
		t.Fatalf("no credentials: %d %v", status, body)
	}
	status, _, body := do(t, "POST", incoming, buy, true)
	pn, _ := body["sid"].(string)
	if status != 201 || !regexp.MustCompile(`^PN[0-9a-f]{32}$`).MatchString(pn) || body["phone_number"] != "+14155550102" ||
		body["sms_url"] != "https://sb.example/sms" || body["voice_url"] != "https://sb.example/voice" ||
		body["status_callback"] != "https://sb.example/status" || body["status"] != "in-use" || body["bundle_sid"] != nil ||
		body["address_requirements"] != "none" || body["friendly_name"] != "(415) 555-0102" ||
		body["uri"] != "/2010-04-01/Accounts/"+twiliotest.AccountSID+"/IncomingPhoneNumbers/"+pn+".json" {
		t.Fatalf("buy = %d %v", status, body)
	}
	// The account's numbers list it, fetch answers it, and it is no longer for sale.
	if _, _, list := do(t, "GET", incoming+"?PhoneNumber=%2B14155550102", nil, true); len(list["incoming_phone_numbers"].([]any)) != 1 {
		t.Errorf("incoming numbers = %v", list)
	}
	if status, _, got := do(t, "GET", acct+"/IncomingPhoneNumbers/"+pn+".json", nil, true); status != 200 || got["sid"] != pn || got["sms_url"] != "https://sb.example/sms" {
		t.Errorf("fetch = %d %v", status, got)
	}
	if _, _, list := do(t, "GET", acct+"/AvailablePhoneNumbers/US/Local.json?Contains=0102", nil, true); numbersOf(list) != "[]" {
		t.Errorf("a bought number is for sale: %v", list)
	}
	if b := peer.Bought(); len(b) != 1 || b[0].SID != pn || b[0].SMSURL != "https://sb.example/sms" {
		t.Errorf("Bought = %+v", b)
	}

	de := url.Values{"PhoneNumber": {"+4930900100"}}
	bundleSID := peer.AddApprovedBundle("DE", "local", "business")
	withBundle := url.Values{"PhoneNumber": {"+4930900100"}, "BundleSid": {bundleSID}}
	for _, c := range []struct {
		name         string
		form         url.Values
		status, code int
	}{
		{"bought already", buy, 400, 21422},
		{"never for sale", url.Values{"PhoneNumber": {"+14155559999"}}, 400, 21422},
		{"no bundle", de, 400, 21649},
		{"a bundle Twilio does not have", url.Values{"PhoneNumber": {"+4930900100"}, "BundleSid": {"BU0123456789abcdef0123456789abcdef"}}, 400, 21649},
		{"no number", url.Values{}, 400, 21450},
		{"no number in the area code", url.Values{"AreaCode": {"212"}}, 400, 21452},
		{"bad BundleSid", url.Values{"PhoneNumber": {"+4930900100"}, "BundleSid": {"BUnope"}}, 400, 20001},
		{"bad SmsMethod", url.Values{"PhoneNumber": {"+14155550103"}, "SmsMethod": {"PUT"}}, 400, 20001},
	} {
		status, _, body := do(t, "POST", incoming, c.form, true)
		if status != c.status || !isTwilioError(body, c.status, c.code) {
			t.Errorf("%s: %d %v, want %d with Twilio's error body for %d", c.name, status, body, c.status, c.code)
		}
	}
	peer.AddAvailableNumber("US", "local", twiliotest.AvailableNumberSpec{PhoneNumber: "+12125550000", Voice: true, AddressRequirements: "any"})
	if status, _, body := do(t, "POST", incoming, url.Values{"PhoneNumber": {"+12125550000"}}, true); status != 400 || !isTwilioError(body, 400, 21631) {
		t.Errorf("no address: %d %v", status, body)
	}
	if status, _, body := do(t, "POST", incoming, withBundle, true); status != 201 || body["bundle_sid"] != bundleSID || body["address_requirements"] != "local" {
		t.Errorf("with a bundle: %d %v", status, body)
	}
	if status, _, body := do(t, "POST", incoming, url.Values{"AreaCode": {"415"}}, true); status != 201 || body["phone_number"] != "+14155550100" {
		t.Errorf("by area code: %d %v", status, body)
	}

	// Release: 204 without a body, then 404; the number is for sale again.
	if status, _ := deleteRaw(t, acct+"/IncomingPhoneNumbers/"+pn+".json", false); status != 401 {
		t.Errorf("release without credentials: %d", status)
	}
	if status, body := deleteRaw(t, acct+"/IncomingPhoneNumbers/"+pn+".json", true); status != 204 || body != "" {
		t.Fatalf("release = %d %q", status, body)
	}
	if status, _, body := do(t, "DELETE", acct+"/IncomingPhoneNumbers/"+pn+".json", nil, true); status != 404 || !isTwilioError(body, 404, 20404) {
		t.Errorf("released again = %d %v", status, body)
	}
	if _, _, list := do(t, "GET", acct+"/AvailablePhoneNumbers/US/Local.json?Contains=0102", nil, true); numbersOf(list) != "[+14155550102]" {
		t.Errorf("a released number is not for sale: %v", list)
	}
	if len(peer.Bought()) != 2 {
		t.Errorf("Bought after release = %+v", peer.Bought())
	}
}

func TestPeerRegulations(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	regs := peer.URL + "/v2/RegulatoryCompliance/Regulations"

	if status, _, body := do(t, "GET", regs+"?IsoCountry=DE", nil, false); status != 401 || !isTwilioError(body, 401, 20003) {
		t.Fatalf("no credentials: %d %v", status, body)
	}
	status, _, body := do(t, "GET", regs+"?IsoCountry=DE&NumberType=local&IncludeConstraints=true", nil, true)
	results, _ := body["results"].([]any)
	meta, _ := body["meta"].(map[string]any)
	if status != 200 || len(results) != 1 || meta["key"] != "results" || meta["page"] != float64(0) ||
		meta["page_size"] != float64(50) || meta["next_page_url"] != nil || meta["previous_page_url"] != nil || meta["first_page_url"] == nil {
		t.Fatalf("DE local = %d %v", status, body)
	}
	de := results[0].(map[string]any)
	if de["sid"] != twiliotest.RegulationDELocalBusiness || !regexp.MustCompile(`^RN[0-9a-f]{32}$`).MatchString(de["sid"].(string)) ||
		de["end_user_type"] != "business" || de["iso_country"] != "DE" || de["number_type"] != "local" {
		t.Errorf("DE regulation = %v", de)
	}
	req := de["requirements"].(map[string]any)
	endUser := req["end_user"].([]any)[0].(map[string]any)
	docs := req["supporting_document"].([]any)
	address := docs[1].([]any)[0].(map[string]any)
	accepted := address["accepted_documents"].([]any)[0].(map[string]any)
	if fmt.Sprint(endUser["fields"]) != "[business_name business_website]" || len(docs) != 2 ||
		address["name"] != "Business Address" || accepted["type"] != "address" {
		t.Errorf("DE requirements = %v", req)
	}

	for query, want := range map[string]int{
		"?IsoCountry=gb&NumberType=mobile":                      1,
		"?IsoCountry=GB&NumberType=mobile&EndUserType=business": 0,
		"?IsoCountry=US":                   0,
		"?IsoCountry=DE&NumberType=mobile": 0,
		"":                                 2,
	} {
		status, _, body := do(t, "GET", regs+query, nil, true)
		if list, _ := body["results"].([]any); status != 200 || len(list) != want {
			t.Errorf("%q = %d %v, want %d regulations", query, status, body, want)
		}
	}
	// Pages of one, the next named by next_page_url.
	_, _, body = do(t, "GET", regs+"?PageSize=1", nil, true)
	next, _ := body["meta"].(map[string]any)["next_page_url"].(string)
	if next == "" {
		t.Fatalf("first page of 1 = %v", body)
	}
	_, _, body = do(t, "GET", next, nil, true)
	if list, _ := body["results"].([]any); len(list) != 1 || list[0].(map[string]any)["sid"] != twiliotest.RegulationGBMobileIndividual ||
		body["meta"].(map[string]any)["next_page_url"] != nil {
		t.Errorf("second page = %v", body)
	}
	if status, _, body := do(t, "GET", regs+"/"+twiliotest.RegulationGBMobileIndividual, nil, true); status != 200 || body["end_user_type"] != "individual" {
		t.Errorf("fetch = %d %v", status, body)
	}

	for _, c := range []struct {
		name, url    string
		status, code int
	}{
		{"bad EndUserType", regs + "?EndUserType=robot", 400, 20001},
		{"bad IncludeConstraints", regs + "?IncludeConstraints=perhaps", 400, 20001},
		{"bad Page", regs + "?Page=-1", 400, 20001},
		{"unknown regulation", regs + "/RNffffffffffffffffffffffffffffffff", 404, 20404},
		{"unknown resource", peer.URL + "/v2/RegulatoryCompliance/Nothing", 404, 20404},
	} {
		status, _, body := do(t, "GET", c.url, nil, true)
		if status != c.status || !isTwilioError(body, c.status, c.code) {
			t.Errorf("%s: %d %v, want %d with Twilio's error body for %d", c.name, status, body, c.status, c.code)
		}
	}
}
