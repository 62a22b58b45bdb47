package twilio

import (
	"context"

	lookups "github.com/twilio/twilio-go/rest/lookups/v2"
)

// LineType is what Twilio's Lookup knows of a number's line: the carrier it is on now (a ported
// number's new one) and its type.
type LineType struct {
	Carrier string
	// Type is Twilio's: mobile, landline, fixedVoip, nonFixedVoip, personal, tollFree, premium,
	// sharedCost, uan, voicemail, pager or unknown.
	Type string
}

// LookupLineType asks Twilio's Lookup v2 for the line type intelligence of an E.164 number
// (GET https://lookups.twilio.com/v2/PhoneNumbers/{number}?Fields=line_type_intelligence, which
// Twilio bills per lookup). ok is false when Twilio has no answer for the number.
func (t *Transport) LookupLineType(ctx context.Context, number string) (lt LineType, ok bool, err error) {
	h, ex, err := t.handler(ctx)
	if err != nil {
		return LineType{}, false, err
	}
	fields := "line_type_intelligence"
	resp, err := lookups.NewApiService(h).FetchPhoneNumber(number, &lookups.FetchPhoneNumberParams{Fields: &fields})
	if err != nil {
		return LineType{}, false, t.classify(ctx, "lookup", err, ex, false, "")
	}
	info := resp.LineTypeIntelligence
	if info.ErrorCode != 0 || info.Type == "" {
		return LineType{}, false, nil
	}
	return LineType{Carrier: info.CarrierName, Type: info.Type}, true, nil
}
