// Package addr recognises the address forms the API takes (spec: What the service does 4):
// E.164 numbers, email addresses, WhatsApp business-scoped user ids and numeric chat ids. Sends,
// contacts and senders read addresses through it, so one form means the same everywhere.
package addr

import (
	"regexp"
	"strings"
)

var (
	e164Re       = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	emailRe      = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
	scopedUserRe = regexp.MustCompile(`^[A-Z]{2}\.[0-9A-Za-z]{6,}$`)
	// A chat id is bare digits, no leading zero: a user id of up to 15 digits, or a Telegram
	// group or channel, negative, up to 16 digits (-100 and the channel's id). A positive number
	// of 16 digits or more is not a chat id (and not E.164, at most 15 digits): most likely a
	// phone number missing its +, so it is refused rather than sent nowhere.
	chatIDRe = regexp.MustCompile(`^(-[1-9][0-9]{0,15}|[1-9][0-9]{0,14})$`)
	// pageScopedIDRe is an Instagram or Messenger page-scoped user id, 16 or 17 digits today.
	pageScopedIDRe = regexp.MustCompile(`^[1-9][0-9]{15,19}$`)
	formattedE164  = regexp.MustCompile(`^\+[0-9\s\-().]+$`)
	phoneNoise     = regexp.MustCompile(`[\s\-().]`)
)

// Normalize reads a "+" number written with spaces, dashes, dots or parentheses ("+1 (500)
// 555-0100") as the E.164 number it is; anything else comes back as it is.
func Normalize(s string) string {
	if formattedE164.MatchString(s) {
		return phoneNoise.ReplaceAllString(s, "")
	}
	return s
}

// IsE164 says whether s is an E.164 number: + and up to 15 digits.
func IsE164(s string) bool { return e164Re.MatchString(s) }

// IsEmail says whether s is an email address.
func IsEmail(s string) bool { return emailRe.MatchString(s) }

// IsScopedUserID says whether s is a WhatsApp business-scoped user id (US.1349…), the address of
// a contact whose number is hidden.
func IsScopedUserID(s string) bool { return scopedUserRe.MatchString(s) }

// IsChatID says whether s is a numeric chat id (Telegram users, groups and channels).
func IsChatID(s string) bool { return chatIDRe.MatchString(s) }

// IsPageScopedID says whether s is an Instagram or Messenger page-scoped user id, longer than
// other chat ids: a chat id only where one of those channels is named.
func IsPageScopedID(s string) bool { return pageScopedIDRe.MatchString(s) }

// Key is an address as contacts and conversations hold it, so that one address written two ways
// is one: email addresses in lower case, the rest as written.
func Key(s string) string {
	if strings.Contains(s, "@") {
		return strings.ToLower(s)
	}
	return s
}
