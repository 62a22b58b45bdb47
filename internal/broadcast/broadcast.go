// Package broadcast keeps broadcasts (v2: campaigns): one message to many recipients, reviewed
// before it is sent (docs/broadcasts.md). This file is the draft: creating, changing and
// deleting a broadcast, and its recipients.
package broadcast

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/unsubscribe"
)

// Statuses of a broadcast.
const (
	StatusDraft         = "draft"
	StatusPendingReview = "pending_review"
	StatusApproved      = "approved"
	StatusRejected      = "rejected"
	StatusEscalated     = "escalated"
	StatusRejectedFinal = "rejected_final"
	StatusScheduled     = "scheduled"
	StatusSending       = "sending"
	StatusPaused        = "paused"
	StatusCompleted     = "completed"
	StatusCancelled     = "cancelled"
	StatusFailed        = "failed"
)

// Statuses lists every status (the list filter's values).
var Statuses = []string{StatusDraft, StatusPendingReview, StatusApproved, StatusRejected, StatusEscalated, StatusRejectedFinal,
	StatusScheduled, StatusSending, StatusPaused, StatusCompleted, StatusCancelled, StatusFailed}

// ContactStatuses lists a recipient's statuses.
var ContactStatuses = []string{"pending", "queued", "sending", "delivered", "failed", "skipped"}

// Channels a broadcast goes out on; smart picks per recipient.
var Channels = []string{"smart", "sms", "sms_oneway", "whatsapp", "telegram", "email"}

// MessageTypes a broadcast sends.
var MessageTypes = []string{"text", "image", "video", "audio", "document", "template"}

// Bounds of a broadcast's fields.
const (
	maxName         = 255
	maxText         = 4096
	maxEmailSubject = 998
	maxHTMLBody     = 512 << 10
	// MaxContactsPerRequest is the spec's bound of one add-contacts request.
	MaxContactsPerRequest = 1000
	// DefaultMaxRecipients bounds a broadcast's recipients unless the installation says
	// otherwise (SetMaxRecipients): ten times the 100,000 the project benchmarks.
	DefaultMaxRecipients = 1_000_000
)

// Content is a broadcast's media or template.
type Content struct {
	Filename                *string           `json:"filename,omitempty"`
	MediaID                 *string           `json:"mediaId,omitempty"`
	MediaURL                *string           `json:"mediaUrl,omitempty"`
	MimeType                *string           `json:"mimeType,omitempty"`
	TemplateID              *string           `json:"templateId,omitempty"`
	TemplateVariables       map[string]string `json:"templateVariables,omitempty"`
	TemplateHeaderVariables map[string]string `json:"templateHeaderVariables,omitempty"`
	TemplateButtonVariables map[string]string `json:"templateButtonVariables,omitempty"`
}

// Input is a create or update request: nil is a field not given.
type Input struct {
	Channel       *string  `json:"channel"`
	Name          *string  `json:"name"`
	MessageType   *string  `json:"messageType"`
	Text          *string  `json:"text"`
	Content       *Content `json:"content"`
	EmailSubject  *string  `json:"emailSubject"`
	EmailHTMLBody *string  `json:"emailHtmlBody"`
	// UnsubscribeURL is the broadcast's own one-click unsubscribe link (Switchboard's
	// extension): its email's List-Unsubscribe names it instead of Switchboard's; "" returns to
	// Switchboard's.
	UnsubscribeURL *string            `json:"unsubscribeUrl"`
	SenderID       *string            `json:"senderId"`
	ScheduledAt    *string            `json:"scheduledAt"`
	Metadata       *map[string]string `json:"metadata"`
	IdempotencyKey *string            `json:"idempotencyKey"`
}

// fields is a broadcast's message, as stored.
type fields struct {
	channel, name, messageType string
	text                       *string
	content                    *Content
	emailSubject, htmlBody     *string
	unsubscribeURL             *string
	senderID                   *string
	metadata                   map[string]string
	scheduledAt                *time.Time
}

func fieldsOf(b db.Broadcast) fields {
	f := fields{channel: b.Channel, name: b.Name, messageType: b.MessageType, text: b.Text, emailSubject: b.EmailSubject,
		htmlBody: b.EmailHtmlBody, unsubscribeURL: b.UnsubscribeUrl, senderID: b.SenderID, scheduledAt: b.ScheduledAt}
	if len(b.Content) > 0 {
		f.content = &Content{}
		_ = json.Unmarshal(b.Content, f.content)
	}
	if len(b.Metadata) > 0 {
		_ = json.Unmarshal(b.Metadata, &f.metadata)
	}
	return f
}

// apply merges in into f (create: channel and name are required; update: only the fields an
// update may change are read) and returns the field errors.
func (in Input) apply(f *fields, create bool, now time.Time) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if create {
		switch {
		case in.Channel == nil:
			bad("channel", "is required: one of "+strings.Join(Channels, ", "))
		case !slices.Contains(Channels, *in.Channel):
			bad("channel", "must be one of "+strings.Join(Channels, ", "))
		default:
			f.channel = *in.Channel
		}
		f.messageType = "text"
		if in.MessageType != nil {
			if !slices.Contains(MessageTypes, *in.MessageType) {
				bad("messageType", "must be one of "+strings.Join(MessageTypes, ", "))
			} else {
				f.messageType = *in.MessageType
			}
		}
		if in.SenderID != nil && *in.SenderID != "" {
			f.senderID = in.SenderID
		}
		if in.ScheduledAt != nil {
			t, err := time.Parse(time.RFC3339, *in.ScheduledAt)
			switch {
			case err != nil:
				bad("scheduledAt", "must be an RFC 3339 time, such as 2026-12-01T09:00:00Z")
			case !t.After(now):
				bad("scheduledAt", "must be in the future")
			default:
				t = t.UTC()
				f.scheduledAt = &t
			}
		}
		if in.IdempotencyKey != nil && (*in.IdempotencyKey == "" || len(*in.IdempotencyKey) > 255) {
			bad("idempotencyKey", "must be 1 to 255 characters")
		}
	}
	if in.Name != nil || create {
		switch {
		case in.Name == nil || strings.TrimSpace(*in.Name) == "":
			bad("name", "is required")
		case len([]rune(*in.Name)) > maxName:
			bad("name", fmt.Sprintf("must be at most %d characters", maxName))
		default:
			n := strings.TrimSpace(*in.Name)
			f.name = n
		}
	}
	if in.Text != nil {
		if len([]rune(*in.Text)) > maxText {
			bad("text", fmt.Sprintf("must be at most %d characters", maxText))
		}
		f.text = in.Text
	}
	if in.Content != nil {
		f.content = in.Content
	}
	if in.EmailSubject != nil {
		if len([]rune(*in.EmailSubject)) > maxEmailSubject {
			bad("emailSubject", fmt.Sprintf("must be at most %d characters", maxEmailSubject))
		}
		f.emailSubject = in.EmailSubject
	}
	if in.EmailHTMLBody != nil {
		if len(*in.EmailHTMLBody) > maxHTMLBody {
			bad("emailHtmlBody", "must be at most 512 KiB")
		}
		f.htmlBody = in.EmailHTMLBody
	}
	if in.UnsubscribeURL != nil {
		switch {
		case *in.UnsubscribeURL == "":
			f.unsubscribeURL = nil
		case unsubscribe.CheckURL(*in.UnsubscribeURL) != "":
			bad("unsubscribeUrl", unsubscribe.CheckURL(*in.UnsubscribeURL))
		default:
			f.unsubscribeURL = in.UnsubscribeURL
		}
	}
	if in.Metadata != nil {
		f.metadata = *in.Metadata
	}
	if len(errs) > 0 {
		return errs
	}
	return f.complete()
}

// complete checks that the message can be sent on its channel, whatever was changed.
func (f fields) complete() []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	has := func(s *string) bool { return s != nil && strings.TrimSpace(*s) != "" }
	c := f.content
	if c == nil {
		c = &Content{}
	}
	switch f.messageType {
	case "text":
		if f.channel == "email" {
			if !has(f.text) && !has(f.htmlBody) {
				bad("text", "or emailHtmlBody is required for an email broadcast")
			}
		} else if !has(f.text) {
			bad("text", "is required for a text broadcast")
		}
	case "template":
		if !has(c.TemplateID) {
			bad("content.templateId", "is required for a template broadcast")
		}
		if f.channel == "email" {
			bad("messageType", "email broadcasts send text or HTML, not templates")
		}
	default: // media
		if !has(c.MediaURL) && !has(c.MediaID) {
			bad("content.mediaUrl", "or content.mediaId is required for a "+f.messageType+" broadcast")
		}
		if f.channel == "email" {
			bad("messageType", "email broadcasts send text or HTML, not "+f.messageType)
		}
	}
	if f.channel == "email" && !has(f.emailSubject) {
		bad("emailSubject", "is required for an email broadcast")
	}
	if f.channel != "email" && (f.emailSubject != nil || f.htmlBody != nil) {
		bad("emailSubject", "and emailHtmlBody are for email broadcasts only")
	}
	if f.channel != "email" && f.unsubscribeURL != nil {
		bad("unsubscribeUrl", "is for email broadcasts only")
	}
	return errs
}

var (
	e164   = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	chatID = regexp.MustCompile(`^-?[0-9]{1,20}$`)
)

// recipientOf checks a recipient for the channel and returns it normalised with its type, or
// the reason it cannot be one.
func recipientOf(channel, r string) (normalised, kind, reason string) {
	r = strings.TrimSpace(r)
	switch channel {
	case "email":
		a, err := mail.ParseAddress(r)
		if err != nil || a.Address != r || a.Name != "" {
			return "", "", "not an email address"
		}
		local, domain, _ := strings.Cut(r, "@")
		return local + "@" + strings.ToLower(domain), "email", ""
	case "telegram":
		// A Telegram chat id; the client's recipient types know phone and email only, so it is
		// shown as phone (docs/broadcasts.md).
		if !chatID.MatchString(r) {
			return "", "", "not a Telegram chat id (digits, negative for groups and channels)"
		}
		return r, "phone", ""
	default:
		if !e164.MatchString(r) {
			return "", "", "not a phone number in E.164 (+ and 7 to 15 digits)"
		}
		return r, "phone", ""
	}
}
