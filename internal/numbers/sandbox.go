package numbers

import (
	"context"
	"fmt"
)

// Sandbox is the shop of test keys: documented numbers in the sandbox's +1 500 555 range, which
// reach nobody (docs/numbers.md#sandbox). Only the US has them.
//
//	local     +15005550300 … +15005550309   sms, voice, mms
//	mobile    +15005550310 … +15005550319   sms, voice
//	tollFree  +15005550320 … +15005550329   sms, voice
//	national  none
type Sandbox struct{}

// sandboxRanges are the sandbox's numbers by type: the first of ten, and what they can do.
var sandboxRanges = map[string]struct {
	first           int
	sms, voice, mms bool
}{
	TypeLocal:    {300, true, true, true},
	TypeMobile:   {310, true, true, false},
	TypeTollFree: {320, true, true, false},
}

// Search implements Shop.
func (Sandbox) Search(_ context.Context, q Query) ([]Offer, error) {
	r, ok := sandboxRanges[q.Type]
	if q.Country != "US" || !ok {
		return nil, nil
	}
	var out []Offer
	for i := range 10 {
		n := fmt.Sprintf("+15005550%03d", r.first+i)
		if q.Contains != "" && !matches(n[1:], q.Contains) {
			continue
		}
		out = append(out, Offer{PhoneNumber: n, FriendlyName: fmt.Sprintf("(500) 555-0%03d", r.first+i), Locality: "Sandbox",
			Region: "US", SMS: r.sms, Voice: r.voice, MMS: r.mms})
	}
	return out, nil
}

// matches says whether the digits contain pattern, * matching any one digit.
func matches(digits, pattern string) bool {
	for i := 0; i+len(pattern) <= len(digits); i++ {
		if fits(digits[i:i+len(pattern)], pattern) {
			return true
		}
	}
	return false
}

func fits(s, pattern string) bool {
	for i := range len(pattern) {
		if pattern[i] != '*' && pattern[i] != s[i] {
			return false
		}
	}
	return true
}

// SandboxRegulator is the requirements test keys see: a fixed table (docs/numbers.md#sandbox).
//
//	DE, every type: a business, with its name, its address and a commercial register excerpt
//	GB mobile:      an individual, with their name and a proof of identity
//	anything else:  nothing
type SandboxRegulator struct{}

// Rules implements Regulator.
func (SandboxRegulator) Rules(_ context.Context, country, numberType string) ([]Rule, error) {
	switch {
	case country == "DE":
		return []Rule{
			{EndUserType: "business", Name: "Business name", Kind: "textual", Description: "The registered name of the business that uses the number."},
			{EndUserType: "business", Name: "Business address", Kind: "address", Description: "An address of the business in Germany."},
			{EndUserType: "business", Name: "Commercial register excerpt", Kind: "document",
				Description: "An excerpt of the commercial register naming the business.", Accepted: []string{"business_registration"}},
		}, nil
	case country == "GB" && numberType == TypeMobile:
		return []Rule{
			{EndUserType: "individual", Name: "Name", Kind: "textual", Description: "The first and last name of the person who uses the number."},
			{EndUserType: "individual", Name: "Proof of identity", Kind: "document", Description: "A document that proves who the person is.",
				Accepted: []string{"passport", "national_id", "drivers_license"}},
		}, nil
	}
	return nil, nil
}
