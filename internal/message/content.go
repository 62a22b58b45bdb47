package message

import (
	"fmt"
	"net/url"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Bounds of interactive content (WhatsApp's).
const (
	maxButtons      = 3
	maxButtonTitle  = 20
	maxSections     = 10
	maxRows         = 10
	maxRowTitle     = 24
	maxPromptLength = 1024
)

var mediaTypes = map[string]bool{"image": true, "video": true, "audio": true, "document": true, "sticker": true}

// checkContent validates the content and text a message type needs, listing every problem.
func checkContent(messageType, text string, c *transport.Content) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if c == nil {
		c = &transport.Content{}
	}
	httpURL := func(path, raw string) {
		if u, err := url.Parse(raw); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			bad(path, "must be an http(s) URL")
		}
	}
	needText := func(what string) {
		if text == "" {
			bad("text", "is required for "+what)
		}
	}
	switch {
	case messageType == "text":
		needText("a text message")
	case mediaTypes[messageType]:
		if c.MediaURL == "" && c.MediaID == "" {
			bad("content.mediaUrl", "a "+messageType+" needs content.mediaUrl or content.mediaId")
		}
		if c.MediaURL != "" {
			httpURL("content.mediaUrl", c.MediaURL)
		}
	case messageType == "location":
		if c.Latitude == nil || *c.Latitude < -90 || *c.Latitude > 90 {
			bad("content.latitude", "is required, from -90 to 90")
		}
		if c.Longitude == nil || *c.Longitude < -180 || *c.Longitude > 180 {
			bad("content.longitude", "is required, from -180 to 180")
		}
	case messageType == "contact":
		if len(c.Contacts) == 0 {
			bad("content.contacts", "needs at least one contact")
		}
		for i, card := range c.Contacts {
			if card.Name == "" && len(card.Phones) == 0 {
				bad(fmt.Sprintf("content.contacts[%d]", i), "needs a name or a phone")
			}
		}
	case messageType == "buttons":
		needText("a buttons message")
		if len(c.Buttons) == 0 || len(c.Buttons) > maxButtons {
			bad("content.buttons", fmt.Sprintf("needs 1 to %d buttons", maxButtons))
		}
		for i, b := range c.Buttons {
			if b.ID == "" || b.Title == "" || len([]rune(b.Title)) > maxButtonTitle {
				bad(fmt.Sprintf("content.buttons[%d]", i), fmt.Sprintf("needs an id and a title of up to %d characters", maxButtonTitle))
			}
		}
	case messageType == "list":
		needText("a list message")
		if c.ListButton == "" {
			bad("content.listButton", "is required")
		}
		if len(c.Sections) == 0 || len(c.Sections) > maxSections {
			bad("content.sections", fmt.Sprintf("needs 1 to %d sections", maxSections))
		}
		for i, sec := range c.Sections {
			if len(sec.Rows) == 0 || len(sec.Rows) > maxRows {
				bad(fmt.Sprintf("content.sections[%d].rows", i), fmt.Sprintf("needs 1 to %d rows", maxRows))
			}
			for j, row := range sec.Rows {
				if row.ID == "" || row.Title == "" || len([]rune(row.Title)) > maxRowTitle {
					bad(fmt.Sprintf("content.sections[%d].rows[%d]", i, j), fmt.Sprintf("needs an id and a title of up to %d characters", maxRowTitle))
				}
			}
		}
	case messageType == "cta_url":
		needText("a call-to-action message")
		if c.CTADisplayText == "" {
			bad("content.ctaDisplayText", "is required")
		}
		if c.CTAURL == "" {
			bad("content.ctaUrl", "is required")
		} else {
			httpURL("content.ctaUrl", c.CTAURL)
		}
		if c.CTAHeaderType != "" && c.CTAHeaderType != "text" && c.CTAHeaderType != "image" && c.CTAHeaderType != "video" && c.CTAHeaderType != "document" {
			bad("content.ctaHeaderType", "must be text, image, video or document")
		}
	case messageType == "request_contact_info", messageType == "location_request":
		needText("the prompt of a " + messageType)
		if len([]rune(text)) > maxPromptLength {
			bad("text", fmt.Sprintf("the prompt must be up to %d characters", maxPromptLength))
		}
	case messageType == "reaction":
		if c.Emoji == "" {
			bad("content.emoji", "is required")
		}
		if c.ReactTo == "" {
			bad("content.reactToMessageId", "is required")
		}
	case messageType == "template":
		if c.TemplateID == "" {
			bad("content.templateId", "is required")
		}
	}
	return errs
}
