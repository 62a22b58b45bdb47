package openai

import (
	"net/http"
	"regexp"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	cases := []struct {
		name   string
		status int
		header http.Header
		want   time.Duration
	}{
		{"none", 429, h(), 0},
		{"seconds", 429, h("Retry-After", "7"), 7 * time.Second},
		{"fractional seconds", 503, h("Retry-After", "1.5"), 1500 * time.Millisecond},
		{"HTTP date", 503, h("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)), 90 * time.Second},
		{"HTTP date passed", 429, h("Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)), 0},
		{"milliseconds", 429, h("Retry-After-Ms", "2500"), 2500 * time.Millisecond},
		{"largest of ms and seconds", 429, h("Retry-After-Ms", "2500", "Retry-After", "2"), 2500 * time.Millisecond},
		{"garbage", 429, h("Retry-After", "soon", "Retry-After-Ms", "-5"), 0},
		{"requests used up", 429, h(
			"X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "1s",
			"X-Ratelimit-Remaining-Tokens", "1200", "X-Ratelimit-Reset-Tokens", "6m0s"), time.Second},
		{"tokens used up", 429, h(
			"X-Ratelimit-Remaining-Requests", "42", "X-Ratelimit-Reset-Requests", "1s",
			"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "6m0s"), 6 * time.Minute},
		{"neither used up: both apply", 429, h(
			"X-Ratelimit-Remaining-Requests", "42", "X-Ratelimit-Reset-Requests", "1s",
			"X-Ratelimit-Remaining-Tokens", "10", "X-Ratelimit-Reset-Tokens", "2m59.56s"), 2*time.Minute + 59560*time.Millisecond},
		{"resets without remaining", 429, h("X-Ratelimit-Reset-Requests", "20ms", "X-Ratelimit-Reset-Tokens", "17ms"), 20 * time.Millisecond},
		{"Retry-After beats a reset", 429, h(
			"Retry-After", "30", "X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "1s"), 30 * time.Second},
		{"resets are for 429s only", 503, h("X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "1s"), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := retryAfter(tc.status, tc.header, now); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestProviderMessage(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, want string }{
		{"openai", `{"error":{"message":"Invalid 'messages': empty array.","type":"invalid_request_error","param":"messages","code":"empty_array"}}`, "Invalid 'messages': empty array."},
		{"error string", `{"error":"model not found"}`, "model not found"},
		{"mistral", `{"object":"error","message":"Rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}`, "Rate limit exceeded"},
		{"mistral 422", `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted","input":32000},{"type":"missing","loc":["body","messages"],"msg":"Field required"}]},"type":"invalid_request_error","param":null,"code":null}`,
			"body.max_completion_tokens: Extra inputs are not permitted; body.messages: Field required"},
		{"mistral 422 as a string", `{"object":"error","message":"{\"detail\":[{\"type\":\"extra_forbidden\",\"loc\":[\"body\",\"frequency_penalty\"],\"msg\":\"Extra inputs are not permitted\",\"input\":0.0}]}","type":"internal_error_proxy","param":null,"code":"1000"}`,
			"body.frequency_penalty: Extra inputs are not permitted"},
		{"a string that only looks like JSON", `{"error":{"message":"{not json"}}`, "{not json"},
		{"gateway", `{"message":"Unauthorized","request_id":"0f3c"}`, "Unauthorized"},
		{"fastapi", `{"detail":"Not Found"}`, "Not Found"},
		{"fastapi list", `{"detail":[{"loc":["body",0],"msg":"JSON decode error"}]}`, "body.0: JSON decode error"},
		{"not json", `<html>502</html>`, ""},
		{"empty", ``, ""},
		{"no message", `{"error":{"type":"server_error"}}`, ""},
	}
	for _, tc := range cases {
		if got := providerMessage([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	c := &Client{key: "sk-live-abcdefghijklmnop"}
	cases := map[string]string{
		"bad key sk-live-abcdefghijklmnop here": "bad key [redacted] here",
		"Incorrect API key provided: sk-live-************mnop. You can find your API key at https://platform.openai.com/account/api-keys.": "Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.",
		"nothing to hide": "nothing to hide",
	}
	for in, want := range cases {
		if got := c.redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCallID(t *testing.T) {
	t.Parallel()
	mistral := &Client{flavor: FlavorMistral}
	openai := &Client{flavor: FlavorOpenAI}
	nine := regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	for _, id := range []string{"call_abc", "toolu_01A09q90qw90lq917835lq9", "", "a-b-c-d-e", "ABCDEFGHIJ"} {
		got := mistral.callID(id)
		if !nine.MatchString(got) || got == id || mistral.callID(id) != got {
			t.Errorf("mistral callID(%q) = %q", id, got)
		}
	}
	if got := mistral.callID("Ab3dE6gH9"); got != "Ab3dE6gH9" {
		t.Errorf("a Mistral id was changed to %q", got)
	}
	if mistral.callID("call_1") == mistral.callID("call_2") {
		t.Error("two ids map to one")
	}
	long := "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f"
	if got := openai.callID(long); len(got) > maxOpenAICallID || got == long || openai.callID(long) != got {
		t.Errorf("openai callID(long) = %q", got)
	}
	for _, id := range []string{"call_abc", "toolu_01A09q90qw90lq917835lq9", "Ab3dE6gH9"} {
		if got := openai.callID(id); got != id {
			t.Errorf("openai callID(%q) = %q", id, got)
		}
	}
}
