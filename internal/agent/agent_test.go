package agent

import (
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

func TestIsOpen(t *testing.T) {
	t.Parallel()
	bh := &v1alpha1.BusinessHours{TimeZone: "America/Sao_Paulo", Hours: []v1alpha1.OpenHours{
		{Day: "monday", From: "09:00", To: "12:00"}, {Day: "monday", From: "13:00", To: "24:00"}}}
	// 2026-11-23 is a Monday; São Paulo is UTC-3.
	for at, want := range map[string]bool{
		"2026-11-23T12:00:00Z": true,  // 09:00 local: opens
		"2026-11-23T11:59:00Z": false, // 08:59
		"2026-11-23T15:00:00Z": false, // 12:00: the first interval ends
		"2026-11-23T16:30:00Z": true,  // 13:30
		"2026-11-24T02:59:00Z": true,  // 23:59 Monday local, Tuesday in UTC
		"2026-11-24T03:00:00Z": false, // Tuesday 00:00 local
		"2026-11-22T15:00:00Z": false, // Sunday
	} {
		tm, _ := time.Parse(time.RFC3339, at)
		if got, err := IsOpen(bh, tm); err != nil || got != want {
			t.Errorf("IsOpen(%s) = %v, %v; want %v", at, got, err, want)
		}
	}
	if _, err := IsOpen(&v1alpha1.BusinessHours{TimeZone: "Mars/Olympus"}, time.Now()); err == nil {
		t.Error("an unknown zone is not an error")
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	a := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Enabled: true}}
	for _, tc := range []struct {
		channels []v1alpha1.Channel
		types    []string
		channel  string
		mtype    string
		enabled  bool
		want     bool
	}{
		{nil, nil, "sms", "text", true, true},
		{nil, nil, "sms", "image", true, false}, // text only by default
		{nil, []string{"text", "image"}, "whatsapp", "image", true, true},
		{[]v1alpha1.Channel{"whatsapp"}, nil, "sms", "text", true, false},
		{[]v1alpha1.Channel{"whatsapp"}, nil, "whatsapp", "text", true, true},
		{nil, nil, "sms", "text", false, false},
	} {
		a.Spec.TriggerOnChannels, a.Spec.TriggerOnMessageTypes, a.Spec.Enabled = tc.channels, tc.types, tc.enabled
		if got := Answers(a, tc.channel, tc.mtype); got != tc.want {
			t.Errorf("%+v: Answers = %v", tc, got)
		}
	}
}

func TestContextAndKeywords(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	// Newest first, as read; one without text (a picture) is left out.
	history := []db.RecentConversationMessagesRow{
		{ID: "m4", Direction: "inbound", Body: s("and now?")},
		{ID: "m3", Direction: "outbound", Body: s("Hi! How can I help?")},
		{ID: "m2", Direction: "inbound"},
		{ID: "m1", Direction: "inbound", Body: s("hello")},
	}
	got := context_(history, 10)
	want := []llm.Message{{Role: llm.RoleUser, Text: "hello"}, {Role: llm.RoleAssistant, Text: "Hi! How can I help?"},
		{Role: llm.RoleUser, Text: "and now?"}}
	if len(got) != len(want) {
		t.Fatalf("context = %+v", got)
	}
	for i := range want {
		if got[i].Role != want[i].Role || got[i].Text != want[i].Text {
			t.Errorf("context[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := context_(history, 2); len(got) != 2 || got[0].Text != "Hi! How can I help?" {
		t.Errorf("a window of 2 = %+v", got)
	}
	if inboundText(history, "m4") != "and now?" || inboundText(history, "m9") != "" {
		t.Error("inboundText")
	}
	for text, want := range map[string]bool{"Human": true, "  talk to   a PERSON ": true, "human please": false, "": false} {
		if got := matchesKeyword(text, []string{"human", "talk to a person"}); got != want {
			t.Errorf("matchesKeyword(%q) = %v", text, got)
		}
	}
}
