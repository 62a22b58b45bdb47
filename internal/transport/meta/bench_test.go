package meta_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

// BenchmarkSendWhatsApp is one text through the Cloud API peer on loopback: the body built, the
// call made and its answer read.
func BenchmarkSendWhatsApp(b *testing.B) {
	peer := metatest.NewServer(b, metatest.Options{})
	peer.AddPhoneNumber(graphPhoneID, graphDisplay, graphWABA)
	tr := meta.New(meta.Config{BaseURL: peer.URL, AccessToken: metatest.Token})
	m := transport.Outbound{Channel: "whatsapp", To: "+15551230001", From: graphPhoneID, Text: "Your order #1042 has shipped"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWebhook is a signed post of 100 status changes checked and read, as the callback
// does before it applies them.
func BenchmarkWebhook(b *testing.B) {
	var payloads []metatest.Payload
	for i := range 100 {
		payloads = append(payloads, metatest.HookStatus(graphPhoneID, graphDisplay, fmt.Sprintf("wamid.%d", i), "15551230001", "delivered", 0))
	}
	body := metatest.HookBatch(payloads...).Bytes()
	sig := metatest.SignHook([]byte(metatest.AppSecret), body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := meta.VerifySignature([]byte(metatest.AppSecret), body, sig); err != nil {
			b.Fatal(err)
		}
		ev, err := meta.ParseWebhook(body)
		if err != nil || len(ev.Statuses) != 100 {
			b.Fatalf("%v, %d statuses", err, len(ev.Statuses))
		}
	}
}
