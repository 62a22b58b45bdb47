package broadcast

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/phonecheck"
)

// TenDLC says whether a project may send SMS to +1 numbers in a mode (tendlc.Service).
type TenDLC interface {
	Approved(ctx context.Context, project string, testMode bool) (bool, error)
}

// SetTenDLC makes v2's recipients report +1 numbers of an SMS campaign as ten_dlc_required while
// the project has no approved 10DLC campaign.
func (s *Service) SetTenDLC(t TenDLC) { s.tenDLC = t }

// RecipientInput is one recipient of a v2 recipients request.
type RecipientInput struct {
	To                      *string         `json:"to"`
	TemplateVariables       json.RawMessage `json:"templateVariables"`
	TemplateHeaderVariables json.RawMessage `json:"templateHeaderVariables"`
	TemplateButtonVariables json.RawMessage `json:"templateButtonVariables"`
}

// Unreachable is a recipient v2 did not add: well formed, but the campaign's channel cannot
// reach it.
type Unreachable struct {
	To      string `json:"to"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// AddedRecipients is v2's answer to a recipients request.
type AddedRecipients struct {
	Added      int           `json:"added"`
	Duplicates int           `json:"duplicates"`
	Invalid    []Unreachable `json:"invalid"`
}

var bareDigits = regexp.MustCompile(`^[0-9]{6,15}$`)

// AddRecipients is v2's add: a malformed recipient, or bare digits on a phone campaign (they are
// not guessed to be a number), refuses the whole request naming its path; a well-formed one the
// channel cannot reach is reported in invalid with code unreachable_by_channel (a landline for
// SMS or WhatsApp, an email address on a phone campaign, a number on an email one) or ten_dlc_required (+1 on SMS without an approved 10DLC campaign); the
// others are added as v1 adds them.
func (s *Service) AddRecipients(ctx context.Context, k Key, id string, recipients []RecipientInput) (AddedRecipients, error) {
	if len(recipients) == 0 || len(recipients) > MaxContactsPerRequest {
		return AddedRecipients{}, apperror.InvalidFields(apperror.FieldError{Path: "recipients",
			Message: fmt.Sprintf("must have 1 to %d recipients, not %d", MaxContactsPerRequest, len(recipients))})
	}
	b, err := s.Get(ctx, k, id)
	if err != nil {
		return AddedRecipients{}, err
	}
	var errs []apperror.FieldError
	out := AddedRecipients{Invalid: []Unreachable{}}
	rows := make([]checked, 0, len(recipients))
	var approved *bool
	for i, r := range recipients {
		path := fmt.Sprintf("recipients[%d]", i)
		to := strings.TrimSpace(deref(r.To))
		if b.Channel != "email" && b.Channel != "telegram" && bareDigits.MatchString(to) {
			errs = append(errs, apperror.FieldError{Path: path + ".to", Message: "bare digits are not read as a phone number; write it with its +, such as +" + to})
			continue
		}
		if kind := otherKind(b.Channel, to); kind != "" {
			if len(errs) == 0 {
				out.Invalid = append(out.Invalid, Unreachable{To: to, Code: "unreachable_by_channel",
					Message: fmt.Sprintf("%s is %s, which %s does not reach", to, kind, b.Channel)})
			}
			continue
		}
		row, fault := checkContact(b.Channel, ContactInput{Recipient: &to, TemplateVariables: r.TemplateVariables,
			TemplateHeaderVariables: r.TemplateHeaderVariables, TemplateButtonVariables: r.TemplateButtonVariables})
		if fault != nil {
			field := fault.field
			if field == "recipient" {
				field = "to"
			}
			errs = append(errs, apperror.FieldError{Path: path + "." + field, Message: fault.reason})
			continue
		}
		if len(errs) > 0 {
			continue // the request is refused: nothing more to ask of the others
		}
		code, msg, err := s.unreachable(ctx, k, b.Channel, row.recipient, &approved)
		if err != nil {
			return AddedRecipients{}, err
		}
		if code != "" {
			out.Invalid = append(out.Invalid, Unreachable{To: row.recipient, Code: code, Message: msg})
			continue
		}
		rows = append(rows, row)
	}
	if len(errs) > 0 {
		return AddedRecipients{}, apperror.InvalidFields(errs...)
	}
	out.Added, out.Duplicates, err = s.insert(ctx, k, id, "recipients", rows)
	if err != nil {
		return AddedRecipients{}, err
	}
	return out, nil
}

// otherKind names what to is when it is a well-formed address of a kind the campaign's channel
// does not take (an email address on an SMS campaign, a phone number on an email or Telegram
// one); "" when it is of the channel's kind, or no address at all (then checkContact refuses it).
func otherKind(channel, to string) string {
	_, _, notPhone := recipientOf("sms", to)
	_, _, notEmail := recipientOf("email", to)
	switch {
	case channel == "email" || channel == "telegram":
		if notPhone == "" {
			return "a phone number"
		}
		if channel == "telegram" && notEmail == "" {
			return "an email address"
		}
	case notEmail == "":
		return "an email address"
	}
	return ""
}

// unreachable says why the campaign's channel cannot reach to (a code and a message), or "".
// approved caches the project's 10DLC answer for the request.
func (s *Service) unreachable(ctx context.Context, k Key, channel, to string, approved **bool) (string, string, error) {
	if channel == "email" || channel == "telegram" {
		return "", "", nil
	}
	ch := v1alpha1.Channel(channel)
	if channel == "smart" {
		ch = v1alpha1.ChannelSMS
	}
	if r, err := phonecheck.Inspect(to); err == nil && r.ValidNumber && !phonecheck.Reaches(ch, r.LineType) {
		return "unreachable_by_channel", fmt.Sprintf("%s is a %s number, which %s does not reach", to, r.LineType, channel), nil
	}
	if (channel == "sms" || channel == "sms_oneway") && strings.HasPrefix(to, "+1") && s.tenDLC != nil {
		if *approved == nil {
			ok, err := s.tenDLC.Approved(ctx, k.Project, k.TestMode)
			if err != nil {
				return "", "", err
			}
			*approved = &ok
		}
		if !**approved {
			return "ten_dlc_required", "SMS to +1 numbers needs a registered 10DLC brand and an approved campaign (docs/10dlc.md)", nil
		}
	}
	return "", "", nil
}
