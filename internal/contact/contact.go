// Package contact keeps a project's contacts: people with their addresses (channels) on sms,
// whatsapp, email, telegram, instagram, messenger and voice. An identifier belongs to at most one
// contact of a project's mode on a channel; the unique constraint of contact_channels decides it,
// so two concurrent writes cannot both win. Like messages, contacts of test keys and of live keys
// are apart: a key sees only its own mode's.
//
// The delivery metrics of a channel are kept by the message lifecycle; this package reads them.
package contact

import (
	"encoding/json"
	"slices"

	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Contact is a contact with its channels, each contact's in the order they were added.
type Contact struct {
	db.Contact
	Channels []Channel
}

// Channel is one of a contact's channels. An email channel's address may be on the project's
// suppression list (in the contact's mode): Suppression is its entry in force, nil when none
// (and always nil for other channels).
type Channel struct {
	db.ContactChannel
	Suppression *emailcheck.Entry
}

// AvailableChannels are the channel types the contact can be reached on, in Channels order.
func (c Contact) AvailableChannels() []string {
	out := []string{}
	for _, t := range Channels {
		if slices.ContainsFunc(c.Channels, func(ch Channel) bool { return ch.Channel == t }) {
			out = append(out, t)
		}
	}
	return out
}

// primary returns the contact's primary channel of type t.
func (c Contact) primary(t string) *db.ContactChannel {
	for i := range c.Channels {
		if c.Channels[i].Channel == t && c.Channels[i].IsPrimary {
			return &c.Channels[i].ContactChannel
		}
	}
	return nil
}

// PrimaryPhone is the primary phone number: the primary sms channel's, else the primary
// whatsapp channel's when it is a number, else the primary voice channel's; "" when none.
func (c Contact) PrimaryPhone() string {
	if ch := c.primaryPhoneChannel(); ch != nil {
		return ch.Identifier
	}
	return ""
}

func (c Contact) primaryPhoneChannel() *db.ContactChannel {
	for _, t := range PhoneChannels {
		if ch := c.primary(t); ch != nil && addr.IsE164(ch.Identifier) {
			return ch
		}
	}
	return nil
}

// PrimaryEmail is the primary email channel's address; "" when none.
func (c Contact) PrimaryEmail() string {
	if ch := c.primary("email"); ch != nil {
		return ch.Identifier
	}
	return ""
}

// CountryCode is the primary phone's country code, else the first channel's that has one.
func (c Contact) CountryCode() string {
	if ch := c.primaryPhoneChannel(); ch != nil && ch.CountryCode != nil {
		return *ch.CountryCode
	}
	for _, ch := range c.Channels {
		if ch.CountryCode != nil {
			return *ch.CountryCode
		}
	}
	return ""
}

// IsVerified tells whether the contact is verified: marked so, or verified on one of its channels.
func (c Contact) IsVerified() bool {
	return c.Verified || slices.ContainsFunc(c.Channels, func(ch Channel) bool { return ch.Verified })
}

// MetadataMap is the contact's metadata; empty, not nil, when it has none.
func (c Contact) MetadataMap() map[string]string { return Metadata(c.Metadata) }

// Metadata decodes a stored metadata object; empty, not nil, when there is none.
func Metadata(raw []byte) map[string]string {
	m := map[string]string{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

// AvgDeliveryTimeMs is the channel's average time to delivery: total over delivered, 0 before
// the first delivery.
func AvgDeliveryTimeMs(ch db.ContactChannel) int64 {
	if ch.DeliveredCount <= 0 {
		return 0
	}
	return ch.TotalDeliveryMs / ch.DeliveredCount
}
