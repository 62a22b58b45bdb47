// Package phonecheck answers POST /v1/introspect/phone: what a phone number is (valid, its
// country, national format, line type and carrier, from libphonenumber's metadata through
// nyaruka/phonenumbers) and which channels of the project's senders can reach it now.
package phonecheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nyaruka/phonenumbers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Line types (spec: Phone introspection).
const (
	Mobile   = "mobile"
	Landline = "landline"
	VoIP     = "voip"
	TollFree = "toll_free"
	Unknown  = "unknown"
)

// Carrier is the network a number belongs to; Name is empty when the metadata has none (ported
// numbers keep their original carrier there).
type Carrier struct {
	Name string
	Type string
}

// Result is what a number is.
type Result struct {
	// PhoneNumber is the number in E.164 (as given when it could not be read as one).
	PhoneNumber string
	// CountryCode is the ISO 3166-1 alpha-2 region of the number ("US"); "" when unknown.
	CountryCode    string
	ValidNumber    bool
	NationalFormat string
	LineType       string
	Carrier        Carrier
	// AvailableChannels are the channels of the project's senders that can reach it.
	AvailableChannels []string
}

// maxLength bounds the input: E.164 has 15 digits; spaces and punctuation may double that.
const maxLength = 64

// Inspect reads number, which must start with + and its country calling code (spaces, dashes,
// dots and parentheses are allowed). A number that cannot be read is a 400 on phoneNumber; one
// that can but is not a number any country assigns is answered with validNumber false.
func Inspect(number string) (Result, error) {
	bad := func(msg string) error {
		return apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: msg})
	}
	number = strings.TrimSpace(number)
	switch {
	case number == "":
		return Result{}, bad("is required")
	case len(number) > maxLength:
		return Result{}, bad(fmt.Sprintf("must be at most %d characters", maxLength))
	case !strings.HasPrefix(number, "+"):
		return Result{}, bad("must start with + and the country calling code (E.164), such as +14155550100")
	}
	num, err := phonenumbers.Parse(number, "")
	if err != nil {
		return Result{}, bad("is not a phone number: " + err.Error())
	}
	r := Result{PhoneNumber: phonenumbers.Format(num, phonenumbers.E164), LineType: Unknown,
		CountryCode: region(num)}
	if !phonenumbers.IsValidNumber(num) {
		r.Carrier.Type = Unknown
		return r, nil
	}
	r.ValidNumber = true
	r.CountryCode = iso(phonenumbers.GetRegionCodeForNumber(num))
	r.NationalFormat = phonenumbers.Format(num, phonenumbers.NATIONAL)
	r.LineType = lineType(phonenumbers.GetNumberType(num))
	r.Carrier.Type = r.LineType
	if name, err := phonenumbers.GetCarrierForNumber(num, "en"); err == nil {
		r.Carrier.Name = name
	}
	return r, nil
}

// region is the region a number parses to, even one libphonenumber calls invalid (the UK's drama
// range +44 7700 900xxx is still the UK): the main region of its country calling code; "" for a
// calling code shared by no region (+800, +882) or unknown.
func region(num *phonenumbers.PhoneNumber) string {
	return iso(phonenumbers.GetRegionCodeForCountryCode(int(num.GetCountryCode())))
}

// iso is libphonenumber's region as ISO 3166-1 alpha-2: "" for its unknown region (ZZ) and for
// its non-geographic entity (001).
func iso(region string) string {
	if region == "ZZ" || region == "001" {
		return ""
	}
	return region
}

// lineType is the spec's line type of libphonenumber's number type. Where the metadata cannot
// tell mobile from fixed (every North American number) it is unknown.
func lineType(t phonenumbers.PhoneNumberType) string {
	switch t {
	case phonenumbers.MOBILE, phonenumbers.PAGER:
		return Mobile
	case phonenumbers.FIXED_LINE:
		return Landline
	case phonenumbers.VOIP, phonenumbers.PERSONAL_NUMBER:
		return VoIP
	case phonenumbers.TOLL_FREE:
		return TollFree
	}
	return Unknown
}

// Reaches says whether a channel can reach a number of a line type: SMS and WhatsApp need a
// number that may be a mobile (not a landline or a toll-free number); a call reaches any.
// Telegram, Instagram, Messenger and email do not take phone numbers.
func Reaches(ch v1alpha1.Channel, line string) bool {
	switch ch {
	case v1alpha1.ChannelVoice:
		return true
	case v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway, v1alpha1.ChannelWhatsApp:
		return line == Mobile || line == VoIP || line == Unknown
	}
	return false
}

// Lookup asks a provider what line a number is on now (Twilio's Lookup); ok is false when no
// provider of the project offers one or it knows nothing of the number.
type Lookup interface {
	LookupLineType(ctx context.Context, project, number string) (carrier, lineType string, ok bool, err error)
}

// Service introspects numbers for a project.
type Service struct {
	// Reader reads the project's Senders (the informer cache).
	Reader client.Reader
	// Lookup, when set, gives live keys the carrier and line type a provider knows (a ported
	// number's current carrier, mobile or fixed on North American numbers); test keys and
	// projects without such a provider get libphonenumber's.
	Lookup Lookup
	// TenDLC, when set, says whether the project may send SMS to +1 numbers (an approved 10DLC
	// campaign in the key's mode): without one, SMS is not available to them.
	TenDLC TenDLC
}

// TenDLC says whether a project has an approved 10DLC campaign in a mode (tendlc.Service).
type TenDLC interface {
	Approved(ctx context.Context, project string, testMode bool) (bool, error)
}

// twilioLineTypes are the spec's line types of Twilio's.
var twilioLineTypes = map[string]string{"mobile": Mobile, "pager": Mobile, "landline": Landline, "fixedVoip": VoIP,
	"nonFixedVoip": VoIP, "personal": VoIP, "tollFree": TollFree}

// Introspect is Inspect, with the carrier and line type a provider's lookup gives a live key,
// and the channels of project's senders that can reach the number now (sending on: configured,
// active and ready; SMS to a +1 number only with an approved 10DLC campaign), in the spec's
// channel order. A lookup that fails leaves the metadata's.
func (s *Service) Introspect(ctx context.Context, project string, live bool, number string) (Result, error) {
	r, err := Inspect(number)
	if err != nil {
		return r, err
	}
	r.AvailableChannels = []string{}
	if !r.ValidNumber {
		return r, nil
	}
	if s.Lookup != nil && live {
		if carrier, typ, ok, err := s.Lookup.LookupLineType(ctx, project, r.PhoneNumber); err == nil && ok {
			r.Carrier.Name = carrier
			r.LineType = Unknown
			if t, known := twilioLineTypes[typ]; known {
				r.LineType = t
			}
			r.Carrier.Type = r.LineType
		}
	}
	var senders v1alpha1.SenderList
	if err := s.Reader.List(ctx, &senders, client.InNamespace(project)); err != nil {
		return r, fmt.Errorf("list senders of %s: %w", project, err)
	}
	var open []v1alpha1.Channel
	for i := range senders.Items {
		snd := &senders.Items[i]
		if !snd.DeletionTimestamp.IsZero() {
			continue
		}
		open = append(open, snd.Status.Channels...)
	}
	smsBlocked := false
	if s.TenDLC != nil && strings.HasPrefix(r.PhoneNumber, "+1") {
		ok, err := s.TenDLC.Approved(ctx, project, !live)
		if err != nil {
			return r, err
		}
		smsBlocked = !ok
	}
	for _, ch := range []v1alpha1.Channel{v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway, v1alpha1.ChannelWhatsApp, v1alpha1.ChannelVoice} {
		if smsBlocked && (ch == v1alpha1.ChannelSMS || ch == v1alpha1.ChannelSMSOneway) {
			continue
		}
		if slices.Contains(open, ch) && Reaches(ch, r.LineType) {
			r.AvailableChannels = append(r.AvailableChannels, string(ch))
		}
	}
	return r, nil
}
