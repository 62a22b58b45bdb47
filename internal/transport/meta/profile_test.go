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

func TestProfilePicture(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	ctx := context.Background()
	png := []byte("\x89PNG\r\n\x1a\n a picture")
	handle, err := tr.UploadFile(ctx, "", "logo.png", "image/png", png)
	if err != nil || handle == "" {
		t.Fatalf("UploadFile = %q, %v", handle, err)
	}
	if err := tr.SetProfilePicture(ctx, "", graphPhoneID, handle); err != nil {
		t.Fatalf("SetProfilePicture: %v", err)
	}
	p, err := tr.GetProfile(ctx, "", graphPhoneID)
	if err != nil || p.ProfilePictureURL == "" {
		t.Fatalf("GetProfile after the picture = %+v, %v", p, err)
	}
	if data, mimeType, ok := peer.Picture(p.ProfilePictureURL); !ok || string(data) != string(png) || mimeType != "image/png" {
		t.Fatalf("the peer shows %q (%s, %v) at %s", data, mimeType, ok, p.ProfilePictureURL)
	}

	// A handle Meta did not give, a type the upload API refuses, and no app id are refused.
	err = tr.SetProfilePicture(ctx, "", graphPhoneID, "4::forged")
	if f := transport.AsFailure(err); f == nil || f.ProviderCode != "100" {
		t.Fatalf("SetProfilePicture with a forged handle: %v", err)
	}
	if _, err := tr.UploadFile(ctx, "", "a.gif", "image/gif", []byte("GIF89a")); transport.AsFailure(err) == nil {
		t.Fatalf("UploadFile of a GIF: %v", err)
	}
	noApp := meta.New(meta.Config{BaseURL: peer.URL, AccessToken: metatest.Token})
	if _, err := noApp.UploadFile(ctx, "", "logo.png", "image/png", png); transport.AsFailure(err) == nil ||
		!strings.Contains(err.Error(), "app id") {
		t.Fatalf("UploadFile without an app id: %v", err)
	}
}
