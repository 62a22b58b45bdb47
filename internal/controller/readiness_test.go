package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

func TestProjectReadiness(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	mk := func(name string, uid types.UID, created metav1.Time, parent string) v1alpha1.Project {
		return v1alpha1.Project{
			ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: name, UID: uid, CreationTimestamp: created},
			Spec:       v1alpha1.ProjectSpec{Parent: parent},
		}
	}
	older, newer := mk("b", "1", t0, ""), mk("a", "2", t1, "")
	sameAgeA, sameAgeB := mk("a", "3", t0, ""), mk("b", "4", t0, "")
	child := mk("c", "5", t0, "team")
	selfParent := mk("c", "6", t0, "acme")
	parent := mk("p", "7", t0, "")

	tests := []struct {
		name     string
		project  v1alpha1.Project
		siblings []v1alpha1.Project
		parent   *v1alpha1.Project
		reason   string
	}{
		{"alone", older, []v1alpha1.Project{older}, nil, v1alpha1.ReasonReady},
		{"oldest wins", older, []v1alpha1.Project{newer, older}, nil, v1alpha1.ReasonReady},
		{"newer is a duplicate", newer, []v1alpha1.Project{older, newer}, nil, v1alpha1.ReasonDuplicateProject},
		{"same age: first name wins", sameAgeA, []v1alpha1.Project{sameAgeB, sameAgeA}, nil, v1alpha1.ReasonReady},
		{"same age: later name loses", sameAgeB, []v1alpha1.Project{sameAgeA, sameAgeB}, nil, v1alpha1.ReasonDuplicateProject},
		{"missing parent", child, []v1alpha1.Project{child}, nil, v1alpha1.ReasonParentNotFound},
		{"own parent", selfParent, []v1alpha1.Project{selfParent}, &selfParent, v1alpha1.ReasonParentNotFound},
		{"parent present", child, []v1alpha1.Project{child}, &parent, v1alpha1.ReasonReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := projectReadiness(&tt.project, tt.siblings, tt.parent)
			if got.reason != tt.reason || got.ready != (tt.reason == v1alpha1.ReasonReady) {
				t.Fatalf("projectReadiness = %+v, want reason %s", got, tt.reason)
			}
		})
	}
}

func TestSenderReadiness(t *testing.T) {
	t.Parallel()
	ready := &v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: v1alpha1.ProjectStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1}},
	}}
	stale := ready.DeepCopy()
	stale.Generation = 2
	s := &v1alpha1.Sender{Spec: v1alpha1.SenderSpec{PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true}}}
	badTransport := s.DeepCopy()
	badTransport.Spec.Transport = "carrier-pigeon"

	tests := []struct {
		name    string
		sender  *v1alpha1.Sender
		project *v1alpha1.Project
		reason  string
	}{
		{"no project", s, nil, v1alpha1.ReasonProjectNotFound},
		{"project status from an older generation", s, stale, v1alpha1.ReasonProjectNotReady},
		{"ready", s, ready, v1alpha1.ReasonReady},
		{"transport does not carry the channel", badTransport, ready, v1alpha1.ReasonTransportUnsupportedChannel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := senderReadiness(tt.sender, tt.project); got.reason != tt.reason {
				t.Fatalf("senderReadiness = %+v, want reason %s", got, tt.reason)
			}
		})
	}
}
