package meta_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

func TestCheckToken(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	who, err := tr.CheckToken(context.Background())
	if want := metatest.UserName + " (" + metatest.UserID + ")"; err != nil || who != want {
		t.Fatalf("CheckToken() = %q, %v; want %q", who, err, want)
	}
	for _, token := range []string{metatest.ExpiredToken, "EAAnotknown", ""} {
		_, err := meta.New(meta.Config{BaseURL: peer.URL, AccessToken: token}).CheckToken(context.Background())
		if !errors.Is(err, meta.ErrInvalidToken) {
			t.Errorf("CheckToken with %q: err = %v, want ErrInvalidToken", token, err)
		}
	}
	// Meta's trouble is not a bad token.
	peer.FailNext(1, 500, 2, 0, "Service temporarily unavailable")
	_, err = tr.CheckToken(context.Background())
	var tmp *transport.Temporary
	if !errors.As(err, &tmp) || errors.Is(err, meta.ErrInvalidToken) {
		t.Fatalf("CheckToken during an outage: err = %v, want Temporary", err)
	}
}

func TestMarkRead(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	ctx := context.Background()
	if err := tr.MarkRead(ctx, "", graphPhoneID, "wamid.A", false); err != nil {
		t.Fatalf("MarkRead: %v", err)
	}
	if err := tr.MarkRead(ctx, "", graphPhoneID, "wamid.B", true); err != nil {
		t.Fatalf("MarkRead with typing: %v", err)
	}
	want := []metatest.Read{{PhoneNumberID: graphPhoneID, MessageID: "wamid.A"}, {PhoneNumberID: graphPhoneID, MessageID: "wamid.B", Typing: true}}
	if got := peer.Reads(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Reads() = %+v, want %+v", got, want)
	}
	if len(peer.Messages()) != 0 {
		t.Fatal("a read receipt was recorded as a message")
	}
	err := tr.MarkRead(ctx, metatest.ExpiredToken, graphPhoneID, "wamid.C", false)
	if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeAuthFailed {
		t.Fatalf("MarkRead with an expired token: err = %v", err)
	}
}
