package twiliotest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// IncomingNumber is a phone number the account owns (AddIncomingNumber, or bought through
// IncomingPhoneNumbers: buy.go): one of its IncomingPhoneNumbers, with the capabilities Twilio
// reports and, for a bought number, what it was bought with.
type IncomingNumber struct {
	SID, PhoneNumber string
	SMS, MMS, Voice  bool
	// FriendlyName is the number itself when not given.
	FriendlyName string
	// SMSURL, VoiceURL and StatusCallback are the number's webhooks, SMSMethod and VoiceMethod
	// their methods (POST when not given).
	SMSURL, SMSMethod, VoiceURL, VoiceMethod, StatusCallback string
	BundleSID, AddressSID                                    string
	// AddressRequirements is none (""), any, local or foreign.
	AddressRequirements string
}

// The IncomingPhoneNumbers list, as Twilio's API reference documents it: PhoneNumber filters by
// any part of the number ("*" stands for any one digit); PageSize is 50 unless asked (1 to 1,000;
// more is taken as 1,000); pages are numbered from 0, and each page names the next with
// next_page_uri, which carries Page and a PageToken. A PageSize, Page or PageToken that is not
// one Twilio would accept is refused with Twilio's error body (400, code 20001).
const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

// AddIncomingNumber makes an E.164 number one the account owns (an IncomingPhoneNumber, with
// sms, mms and voice) and returns its PN sid.
func (s *Server) AddIncomingNumber(e164 string) (pnSid string) {
	return s.AddIncomingNumberWith(IncomingNumber{PhoneNumber: e164, SMS: true, MMS: true, Voice: true})
}

// AddIncomingNumberWith adds n (its SID is made here) to the account's numbers and returns its
// PN sid.
func (s *Server) AddIncomingNumberWith(n IncomingNumber) (pnSid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n.SID = sid("PN")
	s.reg.numbers = append(s.reg.numbers, &n)
	s.reg.made(n.SID)
	return n.SID
}

// ReleaseIncomingNumber takes e164 out of the account's numbers, as releasing it in Twilio's
// console does; it reports whether the account had it.
func (s *Server) ReleaseIncomingNumber(e164 string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.reg.numbers, func(n *IncomingNumber) bool { return n.PhoneNumber == e164 })
	if i < 0 {
		return false
	}
	s.reg.numbers = slices.Delete(s.reg.numbers, i, i+1)
	return true
}

// IncomingNumberLists counts the requests to the IncomingPhoneNumbers list so far (each page is
// one).
func (s *Server) IncomingNumberLists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.numberLists
}

// matchesNumber is Twilio's PhoneNumber filter: filter appears in number, "*" matching any digit.
func matchesNumber(number, filter string) bool {
	if filter == "" {
		return true
	}
	for i := 0; i+len(filter) <= len(number); i++ {
		ok := true
		for j := 0; j < len(filter) && ok; j++ {
			c, f := number[i+j], filter[j]
			ok = c == f || (f == '*' && c >= '0' && c <= '9')
		}
		if ok {
			return true
		}
	}
	return false
}

// listIncomingNumbers: GET /2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json.
func (s *Server) listIncomingNumbers(_ *http.Request, f url.Values, _ []string) (int, any) {
	s.reg.numberLists++
	filter := f.Get("PhoneNumber")
	size := defaultPageSize
	if v := f.Get("PageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, badParam("Invalid PageSize %q: it must be a positive integer", v)
		}
		size = min(n, maxPageSize)
	}
	page := 0
	if v := f.Get("Page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, badParam("Invalid Page %q: it must be a non-negative integer", v)
		}
		page = n
	}
	var matched []*IncomingNumber
	for _, n := range s.reg.numbers {
		if matchesNumber(n.PhoneNumber, filter) {
			matched = append(matched, n)
		}
	}
	// A PageToken names the last number of the page before (PA + its sid): the next page starts
	// after it, whatever was added or released meanwhile. Without one, Page counts pages.
	start := page * size
	if token := f.Get("PageToken"); token != "" {
		after, ok := strings.CutPrefix(token, "PA")
		i := slices.IndexFunc(matched, func(n *IncomingNumber) bool { return n.SID == after })
		if !ok || i < 0 {
			return 0, badParam("Invalid PageToken %q", token)
		}
		start = i + 1
	}
	start = min(start, len(matched))
	end := min(start+size, len(matched))
	list := []map[string]any{}
	for _, n := range matched[start:end] {
		list = append(list, s.incomingNumberJSON(n))
	}
	base := fmt.Sprintf("/%s/Accounts/%s/IncomingPhoneNumbers.json", apiVersion, AccountSID)
	pageURI := func(p int, token string) string {
		q := url.Values{"PageSize": {strconv.Itoa(size)}, "Page": {strconv.Itoa(p)}}
		if filter != "" {
			q.Set("PhoneNumber", filter)
		}
		if token != "" {
			q.Set("PageToken", token)
		}
		return base + "?" + q.Encode()
	}
	var next, previous any
	if end < len(matched) {
		next = pageURI(page+1, "PA"+matched[end-1].SID)
	}
	if page > 0 {
		previous = pageURI(page-1, "")
	}
	return http.StatusOK, map[string]any{
		"end": max(start+len(list)-1, 0), "first_page_uri": pageURI(0, ""), "next_page_uri": next, "page": page,
		"page_size": size, "previous_page_uri": previous, "start": start, "uri": pageURI(page, f.Get("PageToken")),
		"incoming_phone_numbers": list,
	}
}

func (s *Server) incomingNumberJSON(n *IncomingNumber) map[string]any {
	uri := fmt.Sprintf("/%s/Accounts/%s/IncomingPhoneNumbers/%s.json", apiVersion, AccountSID, n.SID)
	// Twilio's nulls and defaults where a number has nothing of its own.
	or := func(v string, dflt any) any {
		if v == "" {
			return dflt
		}
		return v
	}
	return map[string]any{
		"account_sid": AccountSID, "address_requirements": or(n.AddressRequirements, "none"), "address_sid": or(n.AddressSID, nil),
		"api_version": apiVersion, "beta": false, "capabilities": map[string]bool{"voice": n.Voice, "sms": n.SMS, "mms": n.MMS, "fax": false},
		"date_created": s.rfc1123(n.SID), "date_updated": s.rfc1123(n.SID), "friendly_name": or(n.FriendlyName, n.PhoneNumber),
		"identity_sid": nil, "phone_number": n.PhoneNumber, "origin": "twilio", "sid": n.SID, "status": "in-use",
		"sms_application_sid": "", "sms_fallback_method": "POST", "sms_fallback_url": "", "sms_method": or(n.SMSMethod, "POST"),
		"sms_url": n.SMSURL, "status_callback": n.StatusCallback, "status_callback_method": "POST", "trunk_sid": nil, "uri": uri,
		"voice_receive_mode": "voice", "voice_application_sid": nil, "voice_caller_id_lookup": false, "voice_fallback_method": "POST",
		"voice_fallback_url": nil, "voice_method": or(n.VoiceMethod, "POST"), "voice_url": or(n.VoiceURL, nil), "emergency_status": "Inactive",
		"emergency_address_sid": nil, "emergency_address_status": "unregistered", "bundle_sid": or(n.BundleSID, nil),
	}
}
