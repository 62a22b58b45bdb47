package twiliotest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// do sends a raw request to the peer, as curl would to Twilio, and decodes the JSON answer.
func do(t *testing.T, method, target string, form url.Values, auth bool) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if auth {
		req.SetBasicAuth(twiliotest.AccountSID, twiliotest.AuthToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", method, target, err)
	}
	return resp.StatusCode, resp.Header, body
}

func TestPeerFollowsTwiliosReference(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	messages := peer.URL + "/2010-04-01/Accounts/" + twiliotest.AccountSID + "/Messages.json"
	ok := url.Values{"To": {"+14155550100"}, "From": {"+15017122661"}, "Body": {"hi"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for key, vals := range ok {
			f[key] = vals
		}
		if v == "" {
			f.Del(k)
		} else {
			f.Set(k, v)
		}
		return f
	}
	errs := []struct {
		name         string
		method, url  string
		form         url.Values
		auth         bool
		status, code int
	}{
		{"no credentials", "POST", messages, ok, false, 401, 20003},
		{"no To", "POST", messages, with("To", ""), true, 400, 21604},
		{"no From", "POST", messages, with("From", ""), true, 400, 21603},
		{"no Body", "POST", messages, with("Body", ""), true, 400, 21602},
		{"To not E.164", "POST", messages, with("To", "4155550100"), true, 400, 21211},
		{"From invalid", "POST", messages, with("From", "not-a-sender!"), true, 400, 21212},
		{"body over 1600", "POST", messages, with("Body", strings.Repeat("a", 1601)), true, 400, 21617},
		{"another account", "GET", peer.URL + "/2010-04-01/Accounts/ACffffffffffffffffffffffffffffffff.json", nil, true, 404, 20404},
		{"GET on create", "GET", messages, nil, true, 405, 20004},
	}
	for _, c := range errs {
		status, _, body := do(t, c.method, c.url, c.form, c.auth)
		if status != c.status || body["code"] != float64(c.code) || body["status"] != float64(c.status) ||
			body["more_info"] != "https://www.twilio.com/docs/errors/"+itoa(c.code) || body["message"] == "" {
			t.Errorf("%s: %d %v, want %d with Twilio's error body for %d", c.name, status, body, c.status, c.code)
		}
	}

	status, _, body := do(t, "POST", messages, ok, true)
	sid, _ := body["sid"].(string)
	if status != 201 || !regexp.MustCompile(`^SM[0-9a-f]{32}$`).MatchString(sid) || body["status"] != "queued" ||
		body["num_media"] != "0" || body["account_sid"] != twiliotest.AccountSID || body["direction"] != "outbound-api" ||
		body["uri"] != "/2010-04-01/Accounts/"+twiliotest.AccountSID+"/Messages/"+sid+".json" || body["error_code"] != nil {
		t.Fatalf("create message: %d %v", status, body)
	}

	peer.Storm(1, 429)
	status, header, body := do(t, "POST", messages, ok, true)
	if status != 429 || header.Get("Retry-After") != "2" || body["code"] != float64(20429) {
		t.Fatalf("storm: %d %v %v", status, header, body)
	}
	if status, _, _ := do(t, "POST", messages, ok, true); status != 201 {
		t.Fatalf("after the storm: %d", status)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
