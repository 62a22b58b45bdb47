package httpapi

import (
	"testing"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// charged is 0 for a channel charged per message that took nothing (a test key's SMS on an
// installation with no PriceList), and null only for channels never charged per message.
func TestChargedIsZeroOnlyWhereAMessageCouldBeCharged(t *testing.T) {
	t.Parallel()
	taken := int64(7900)
	for _, c := range []struct {
		channel string
		charged *int64
		want    any
	}{
		{"sms", nil, 0.0},
		{"sms_oneway", nil, 0.0},
		{"voice", nil, 0.0},
		{"sms", &taken, 0.0079},
		{"email", nil, nil},
		{"whatsapp", nil, nil},
	} {
		v := messageV2View(db.Message{ID: "msg_1", Channel: c.channel, TestMode: true, ChargedMicros: c.charged})
		var got any
		if v.Charged != nil {
			got = *v.Charged
		}
		if got != c.want {
			t.Errorf("%s with charged_micros %v: charged %v, want %v", c.channel, c.charged, got, c.want)
		}
	}
}
