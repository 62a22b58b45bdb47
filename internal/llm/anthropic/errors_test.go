package anthropic

import (
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

func TestRetryAfterOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	cases := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"retry-after seconds", map[string]string{"retry-after": "12"}, 12 * time.Second},
		{"retry-after fraction", map[string]string{"retry-after": "1.5"}, 1500 * time.Millisecond},
		{"retry-after date", map[string]string{"retry-after": now.Add(40 * time.Second).Format(http.TimeFormat)}, 40 * time.Second},
		{"retry-after zero", map[string]string{"retry-after": "0"}, 0},
		{"retry-after garbage", map[string]string{"retry-after": "soon"}, 0},
		{"used-up limit's reset", map[string]string{
			"anthropic-ratelimit-input-tokens-remaining": "0", "anthropic-ratelimit-input-tokens-reset": at(25 * time.Second)}, 25 * time.Second},
		{"reset without remaining counts", map[string]string{"anthropic-ratelimit-requests-reset": at(8 * time.Second)}, 8 * time.Second},
		{"limit with some left does not count", map[string]string{
			"anthropic-ratelimit-requests-remaining": "40", "anthropic-ratelimit-requests-reset": at(time.Second),
			"anthropic-ratelimit-output-tokens-remaining": "0", "anthropic-ratelimit-output-tokens-reset": at(30 * time.Second)}, 30 * time.Second},
		{"soonest of retry-after and resets", map[string]string{"retry-after": "20",
			"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": at(15 * time.Second)}, 15 * time.Second},
		{"retry-after sooner than the reset", map[string]string{"retry-after": "5",
			"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": at(15 * time.Second)}, 5 * time.Second},
		{"a reset in the past is not meaningful", map[string]string{"retry-after": "9",
			"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": at(-5 * time.Second)}, 9 * time.Second},
		{"a reset that is not RFC 3339", map[string]string{"anthropic-ratelimit-tokens-reset": "in a minute"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			if got := retryAfterOf(h, now); got != tc.want {
				t.Errorf("retryAfterOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStopReason(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"end_turn": "end", "stop_sequence": "end", "tool_use": "tool_calls", "max_tokens": "max_tokens",
		"model_context_window_exceeded": "max_tokens", "refusal": "filtered", "pause_turn": "end", "something_new": "end",
	} {
		if got := stopReason(anthropic.StopReason(in)); string(got) != want {
			t.Errorf("stopReason(%s) = %s, want %s", in, got, want)
		}
	}
}
