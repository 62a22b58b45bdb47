package v1alpha1

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsSandboxNumber(t *testing.T) {
	t.Parallel()
	for number, want := range map[string]bool{
		"+15005550006":  true,
		"+15005559999":  true,
		"+15005550000":  true,
		"+150055500061": false, // longer: another number
		"+1500555000":   false,
		"+15005560006":  false,
		"+14155550100":  false,
		"+1500555000a":  false,
		"15005550006":   false,
		"":              false,
	} {
		if got := IsSandboxNumber(number); got != want {
			t.Errorf("IsSandboxNumber(%q) = %v, want %v", number, got, want)
		}
	}
}

func TestNumberHolder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pn := func(ns, name string, age int, ready bool, project string) PhoneNumber {
		p := PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2,
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(-age) * time.Minute))}}
		p.Status.Project = project
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		p.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: status, ObservedGeneration: 2}}
		return p
	}
	stale := pn("b", "stale", 9, true, "b")
	stale.Status.Conditions[0].ObservedGeneration = 1
	deleting := pn("c", "deleting", 9, true, "c")
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, tt := range []struct {
		name  string
		items []PhoneNumber
		want  string
	}{
		{"none", nil, ""},
		{"not ready", []PhoneNumber{pn("a", "x", 5, false, "a")}, ""},
		{"ready", []PhoneNumber{pn("a", "x", 5, false, "a"), pn("b", "y", 1, true, "b")}, "b/y"},
		{"a status of an older generation holds nothing", []PhoneNumber{stale}, ""},
		{"a deleted one holds nothing", []PhoneNumber{deleting, pn("a", "x", 1, true, "a")}, "a/x"},
		{"two ready for a moment: the oldest", []PhoneNumber{pn("a", "x", 1, true, "a"), pn("b", "y", 3, true, "b")}, "b/y"},
		{"as old: by namespace and name", []PhoneNumber{pn("b", "y", 3, true, "b"), pn("a", "z", 3, true, "a")}, "a/z"},
		{"ready without a project holds nothing", []PhoneNumber{pn("a", "x", 3, true, "")}, ""},
	} {
		got := ""
		if h := NumberHolder(tt.items); h != nil {
			got = h.Namespace + "/" + h.Name
		}
		if got != tt.want {
			t.Errorf("%s: holder = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestChannelsWithoutNumber(t *testing.T) {
	t.Parallel()
	all := []Channel{ChannelSMS, ChannelSMSOneway, ChannelWhatsApp, ChannelEmail, ChannelVoice}
	withNumber := &Sender{Spec: SenderSpec{PhoneNumber: "+14155550100"}}
	if got := withNumber.ChannelsWithoutNumber(all); !slices.Equal(got, []Channel{ChannelWhatsApp, ChannelEmail}) {
		t.Errorf("with a number: %v", got)
	}
	// One-way SMS without a number sends from the sender's name, not from a number.
	named := &Sender{}
	if got := named.ChannelsWithoutNumber([]Channel{ChannelSMSOneway, ChannelEmail}); !slices.Equal(got, []Channel{ChannelSMSOneway, ChannelEmail}) {
		t.Errorf("without a number: %v", got)
	}
}
