package meta_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

func TestBusinessProfile(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	ctx := context.Background()
	p, err := tr.GetProfile(ctx, "", graphPhoneID)
	if err != nil || !reflect.DeepEqual(p, meta.Profile{}) {
		t.Fatalf("GetProfile of a new number = %+v, %v; want empty", p, err)
	}
	update := meta.Profile{About: "Open 9-5", Description: "Bikes and repairs", Email: "hi@example.com",
		Websites: []string{"https://example.com"}, Vertical: "RETAIL", ProfilePictureURL: "https://ignored.example/p.jpg"}
	if err := tr.UpdateProfile(ctx, "", graphPhoneID, update); err != nil {
		t.Fatalf("UpdateProfile: %v", err)
	}
	if _, ok := peer.Profile(graphPhoneID)["profile_picture_url"]; ok {
		t.Fatal("UpdateProfile sent the read-only picture URL")
	}
	// An empty field is left as it is.
	if err := tr.UpdateProfile(ctx, "", graphPhoneID, meta.Profile{Address: "1 Main St"}); err != nil {
		t.Fatalf("UpdateProfile: %v", err)
	}
	p, err = tr.GetProfile(ctx, "", graphPhoneID)
	want := update
	want.ProfilePictureURL, want.Address = "", "1 Main St"
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Fatalf("GetProfile = %+v, %v; want %+v", p, err, want)
	}
	err = tr.UpdateProfile(ctx, "", graphPhoneID, meta.Profile{About: strings.Repeat("a", 140)})
	if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeInvalidRequest || f.ProviderCode != "100" {
		t.Fatalf("UpdateProfile with a 140-character about: err = %v, want INVALID_REQUEST 100", err)
	}
}

func TestPhoneNumberAndPayment(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	ctx := context.Background()
	p, err := tr.PhoneNumber(ctx, "", graphPhoneID)
	if err != nil || p.ID != graphPhoneID || p.DisplayPhoneNumber != graphDisplay || p.VerifiedName != metatest.VerifiedName ||
		p.QualityRating != "GREEN" || p.PlatformType != "CLOUD_API" || p.Throughput.Level != "STANDARD" || p.HealthStatus.CanSendMessage == "" {
		t.Fatalf("PhoneNumber = %+v, %v", p, err)
	}
	pay, err := tr.PaymentStatus(ctx, "", graphWABA)
	if err != nil || pay.MethodSet() || pay.CanSendTemplates() {
		t.Fatalf("PaymentStatus without a payment method = %+v, %v", pay, err)
	}
	peer.SetFunding(graphWABA, "2233445566")
	pay, err = tr.PaymentStatus(ctx, "", graphWABA)
	if err != nil || !pay.MethodSet() || !pay.CanSendTemplates() || pay.FundingID != "2233445566" {
		t.Fatalf("PaymentStatus with a payment method = %+v, %v", pay, err)
	}
}
