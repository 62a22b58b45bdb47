package contact

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Channels are the channel types a contact can be reached on (WIRE.md §6); defaultChannel takes
// the same values.
var Channels = []string{"sms", "whatsapp", "email", "telegram", "instagram", "messenger", "voice"}

// PhoneChannels are the channels whose identifier is a phone number (whatsapp's may instead be a
// business-scoped user id).
var PhoneChannels = []string{"sms", "whatsapp", "voice"}

// Bounds of a contact's fields. The spec names none; these keep a contact a contact.
const (
	maxChannels         = 50
	maxDisplayName      = 256
	maxLabel            = 100
	maxTags             = 50
	maxTagLength        = 64
	maxMetadataKeys     = 50
	maxMetadataKey      = 40
	maxMetadataValue    = 500
	maxSearch           = 256
	maxIdentifierLength = 320
)

var countryRe = regexp.MustCompile(`^[A-Za-z]{2}$`)

// checkChannel validates a channel type at path.
func checkChannel(path string, ch *string) *apperror.FieldError {
	if ch == nil || *ch == "" {
		return &apperror.FieldError{Path: path, Message: "is required"}
	}
	if !slices.Contains(Channels, *ch) {
		return &apperror.FieldError{Path: path, Message: fmt.Sprintf("must be one of %s", strings.Join(Channels, ", "))}
	}
	return nil
}

// normalizeIdentifier checks identifier against what channel takes and returns it as stored:
// email addresses in lower case, everything else as given.
func normalizeIdentifier(channel, identifier string) (string, string) {
	if utf8.RuneCountInString(identifier) > maxIdentifierLength {
		return "", fmt.Sprintf("must be up to %d characters", maxIdentifierLength)
	}
	switch channel {
	case "sms", "voice":
		if !addr.IsE164(identifier) {
			return "", "must be an E.164 phone number such as +14155551234"
		}
	case "whatsapp":
		if !addr.IsE164(identifier) && !addr.IsScopedUserID(identifier) {
			return "", "must be an E.164 phone number or a business-scoped user id such as US.13491208655302741918"
		}
	case "email":
		if !addr.IsEmail(identifier) {
			return "", "must be an email address"
		}
		return addr.Key(identifier), ""
	case "telegram":
		if !addr.IsChatID(identifier) {
			return "", "must be a numeric telegram chat id"
		}
	case "instagram", "messenger":
		if !addr.IsChatID(identifier) && !addr.IsPageScopedID(identifier) {
			return "", "must be a numeric " + channel + " id"
		}
	}
	return identifier, ""
}

// ChannelInput is a channel of POST /v1/contacts or the body of POST /v1/contacts/{id}/channels.
type ChannelInput struct {
	Channel     *string `json:"channel"`
	Identifier  *string `json:"identifier"`
	CountryCode *string `json:"countryCode"`
	IsPrimary   *bool   `json:"isPrimary"`
	Label       *string `json:"label"`
}

// newChannel is a valid ChannelInput, normalized.
type newChannel struct {
	channel, identifier string
	countryCode, label  *string
	isPrimary           *bool
}

// checkChannelInput validates in, its fields named under prefix ("" or "channels[2].").
func checkChannelInput(prefix string, in ChannelInput) (newChannel, []apperror.FieldError) {
	var errs []apperror.FieldError
	out := newChannel{isPrimary: in.IsPrimary}
	if e := checkChannel(prefix+"channel", in.Channel); e != nil {
		errs = append(errs, *e)
	} else {
		out.channel = *in.Channel
	}
	switch {
	case in.Identifier == nil || *in.Identifier == "":
		errs = append(errs, apperror.FieldError{Path: prefix + "identifier", Message: "is required"})
	case out.channel != "":
		id, msg := normalizeIdentifier(out.channel, strings.TrimSpace(*in.Identifier))
		if msg != "" {
			errs = append(errs, apperror.FieldError{Path: prefix + "identifier", Message: msg})
		}
		out.identifier = id
	}
	if in.CountryCode != nil {
		if !countryRe.MatchString(*in.CountryCode) {
			errs = append(errs, apperror.FieldError{Path: prefix + "countryCode", Message: "must be a two-letter ISO 3166-1 country code such as US"})
		} else {
			cc := strings.ToUpper(*in.CountryCode)
			out.countryCode = &cc
		}
	}
	if in.Label != nil {
		if e := checkLabel(prefix+"label", *in.Label); e != nil {
			errs = append(errs, *e)
		}
		out.label = in.Label
	}
	return out, errs
}

func checkLabel(path, label string) *apperror.FieldError {
	if utf8.RuneCountInString(label) > maxLabel {
		return &apperror.FieldError{Path: path, Message: fmt.Sprintf("must be up to %d characters", maxLabel)}
	}
	return nil
}

func checkDisplayName(path, name string) *apperror.FieldError {
	if utf8.RuneCountInString(name) > maxDisplayName {
		return &apperror.FieldError{Path: path, Message: fmt.Sprintf("must be up to %d characters", maxDisplayName)}
	}
	return nil
}

// checkMetadata bounds a string map: up to 50 keys of 1 to 40 characters, values up to 500.
func checkMetadata(path string, m map[string]string) []apperror.FieldError {
	var errs []apperror.FieldError
	if len(m) > maxMetadataKeys {
		errs = append(errs, apperror.FieldError{Path: path, Message: fmt.Sprintf("must have up to %d keys", maxMetadataKeys)})
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" || utf8.RuneCountInString(k) > maxMetadataKey {
			errs = append(errs, apperror.FieldError{Path: path, Message: fmt.Sprintf("keys must be 1 to %d characters", maxMetadataKey)})
		}
		if utf8.RuneCountInString(m[k]) > maxMetadataValue {
			errs = append(errs, apperror.FieldError{Path: path + "." + k, Message: fmt.Sprintf("must be up to %d characters", maxMetadataValue)})
		}
	}
	return errs
}

// checkTags validates tags and returns them without repeats, in their first order. A tag is 1 to
// 64 characters without a comma (the list filter reads commas as separators) and without
// surrounding spaces; tags are case-sensitive.
func checkTags(path string, tags []string) ([]string, []apperror.FieldError) {
	var errs []apperror.FieldError
	out := []string{}
	for i, t := range tags {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case t == "" || utf8.RuneCountInString(t) > maxTagLength:
			errs = append(errs, apperror.FieldError{Path: p, Message: fmt.Sprintf("must be 1 to %d characters", maxTagLength)})
		case strings.Contains(t, ","):
			errs = append(errs, apperror.FieldError{Path: p, Message: "must not contain a comma"})
		case strings.TrimSpace(t) != t:
			errs = append(errs, apperror.FieldError{Path: p, Message: "must not start or end with a space"})
		case !slices.Contains(out, t):
			out = append(out, t)
		}
	}
	if len(out) > maxTags {
		errs = append(errs, apperror.FieldError{Path: path, Message: fmt.Sprintf("must have up to %d tags", maxTags)})
	}
	return out, errs
}

// ParseTagFilter reads the tag query parameter in both encodings existing clients use:
// ?tag=a,b and ?tag=a&tag=b (WIRE.md §1). Empty entries are skipped and repeats dropped.
func ParseTagFilter(values []string) []string {
	var out []string
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t != "" && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// likePattern is an ILIKE pattern matching s anywhere, with LIKE's wildcards in s escaped.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}
