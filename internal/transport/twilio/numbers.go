package twilio

import (
	"context"
	"fmt"
	"net/url"

	api "github.com/twilio/twilio-go/rest/api/v2010"
)

// IncomingNumber is a phone number of the account: one of its IncomingPhoneNumbers.
type IncomingNumber struct {
	// SID is the number's PN sid.
	SID         string
	PhoneNumber string
	// SMS, MMS and Voice are the capabilities Twilio reports.
	SMS, MMS, Voice bool
}

// incomingPageSize is how many numbers one page of the list asks for: Twilio's largest.
const incomingPageSize = 1000

// maxIncomingPages bounds the pages read for one number: Twilio's PhoneNumber filter matches any
// part of a number, so a short number could match many, but never this many pages of them.
const maxIncomingPages = 20

// FindIncomingNumber looks number (E.164) up among the account's IncomingPhoneNumbers
// (GET /2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json?PhoneNumber=…), following Twilio's
// pages: found is false when the account does not hold it. Errors are classified as
// registration calls' are: Twilio's 4xx a *RegistrationError, bad credentials PROVIDER_AUTH_FAILED,
// 429, 5xx and the network a *transport.Temporary.
func (t *Transport) FindIncomingNumber(ctx context.Context, number string) (n IncomingNumber, found bool, err error) {
	r, err := t.registrar(ctx)
	if err != nil {
		return IncomingNumber{}, false, err
	}
	return r.findIncomingNumber(number)
}

func (r *registrar) findIncomingNumber(number string) (IncomingNumber, bool, error) {
	// PhoneNumber filters by any part of the number, so the match is checked whole here.
	params := (&api.ListIncomingPhoneNumberParams{}).SetPhoneNumber(number).SetPageSize(incomingPageSize)
	token, page := "", ""
	for range maxIncomingPages {
		var resp *api.ListIncomingPhoneNumberResponse
		if err := r.do("list incoming numbers", func() error {
			var err error
			resp, err = r.api.PageIncomingPhoneNumber(params, token, page)
			return err
		}); err != nil {
			return IncomingNumber{}, false, err
		}
		for _, n := range resp.IncomingPhoneNumbers {
			if deref(n.PhoneNumber) != number || deref(n.Sid) == "" {
				continue
			}
			in := IncomingNumber{SID: *n.Sid, PhoneNumber: number}
			if c := n.Capabilities; c != nil {
				in.SMS, in.MMS, in.Voice = c.Sms, c.Mms, c.Voice
			}
			return in, true, nil
		}
		next := deref(resp.NextPageUri)
		if next == "" {
			return IncomingNumber{}, false, nil
		}
		// Twilio's next page is named by its URI; its Page and PageToken are what the SDK sends.
		u, err := url.Parse(next)
		if err != nil {
			return IncomingNumber{}, false, fmt.Errorf("twilio: list incoming numbers: next page %q: %w", next, err)
		}
		token, page = u.Query().Get("PageToken"), u.Query().Get("Page")
		if token == "" && page == "" {
			return IncomingNumber{}, false, fmt.Errorf("twilio: list incoming numbers: next page %q names no page", next)
		}
	}
	return IncomingNumber{}, false, fmt.Errorf("twilio: list incoming numbers: more than %d pages match %s", maxIncomingPages, number)
}
