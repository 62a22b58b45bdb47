package v1alpha1

import "testing"

func TestEffectiveRequestRate(t *testing.T) {
	t.Parallel()
	limit := func(n int32) *int32 { return &n }
	mk := func(v Verification, manual *int32) Project {
		return Project{Spec: ProjectSpec{Verification: v, RequestRateLimit: manual}}
	}
	tests := []struct {
		name    string
		project Project
		team    []Project
		want    int32
	}{
		{"default", mk("", nil), nil, 600},
		{"identity approved stays at the default", mk(VerificationIdentityApproved, nil), nil, 600},
		{"business approved", mk(VerificationBusinessApproved, nil), nil, 1200},
		{"10DLC brand", mk(VerificationTenDLCBrand, nil), nil, 2400},
		{"the team's best tier", mk("", nil), []Project{mk(VerificationTenDLCBrand, nil)}, 2400},
		{"a higher manual limit is kept", mk(VerificationTenDLCBrand, limit(10000)), nil, 10000},
		{"a lower manual limit does not lower the tier", mk(VerificationBusinessApproved, limit(100)), nil, 1200},
		{"a teammate's manual limit is its own", mk("", nil), []Project{mk("", limit(9000))}, 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := EffectiveRequestRate(&tt.project, tt.team); got != tt.want {
				t.Fatalf("EffectiveRequestRate = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestUnsubscribesRefuseAll(t *testing.T) {
	t.Parallel()
	scoped := func(s UnsubscribeScope) *Project {
		return &Project{Spec: ProjectSpec{Email: &ProjectEmail{UnsubscribeScope: s}}}
	}
	for _, tt := range []struct {
		name    string
		project *Project
		want    bool
	}{
		{"no project", nil, false},
		{"no email settings", &Project{}, false},
		{"scope unset", scoped(""), false},
		{"broadcasts", scoped(UnsubscribeScopeBroadcasts), false},
		{"all", scoped(UnsubscribeScopeAll), true},
	} {
		if got := tt.project.UnsubscribesRefuseAll(); got != tt.want {
			t.Errorf("%s: UnsubscribesRefuseAll = %v, want %v", tt.name, got, tt.want)
		}
	}
}
