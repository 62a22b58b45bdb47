package meta

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// Meta's documented limits of a WhatsApp message, in characters (counts for buttons, rows and
// sections).
const (
	waMaxText         = 4096
	waMaxCaption      = 1024
	waMaxBody         = 1024 // of an interactive message
	waMaxHeaderText   = 60
	waMaxFooter       = 60
	waMaxButtons      = 3
	waMaxButtonTitle  = 20
	waMaxButtonID     = 256
	waMaxListButton   = 20
	waMaxRows         = 10 // in all sections together
	waMaxSections     = 10
	waMaxSectionTitle = 24
	waMaxRowTitle     = 24
	waMaxRowID        = 200
	waMaxRowDesc      = 72
	waMaxDisplayText  = 20
	waMaxButtonIndex  = 9
)

// bsuid is a WhatsApp business-scoped user id ("US.13491208655302741918", or a parent id
// "US.ENT.11815799212886844830"): sent as recipient, where a phone number is sent as to.
var bsuid = regexp.MustCompile(`^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$`)

// hasURL: a text with a link gets WhatsApp's link preview.
var hasURL = regexp.MustCompile(`(?i)\bhttps?://[^\s/$.?#]`)

// waMedia are the media types, sent by link or by uploaded media id.
var waMedia = map[string]bool{"image": true, "video": true, "audio": true, "document": true, "sticker": true}

// waInteractive are Switchboard's message types that are WhatsApp interactive messages.
var waInteractive = map[string]bool{"buttons": true, "list": true, "cta_url": true, "location_request": true, "request_contact_info": true}

// WhatsAppCarries reports whether the whatsapp channel carries messageType: every type of the
// spec ("" is text).
func WhatsAppCarries(messageType string) bool {
	switch messageType {
	case "", "text", "location", "contact", "reaction", "template":
		return true
	}
	return waMedia[messageType] || waInteractive[messageType]
}

// whatsappMessage is the body of POST /{phone-number-id}/messages for m.
func whatsappMessage(m transport.Outbound) (obj, error) {
	typ, c := messageType(m), content(m)
	var (
		kind    = typ
		payload any
		err     error
	)
	switch {
	case typ == "text":
		payload, err = waText(m.Text)
	case waMedia[typ]:
		payload, err = waMediaObject(typ, c, m.Text)
	case typ == "location":
		payload, err = waLocation(c)
	case typ == "contact":
		kind = "contacts"
		payload, err = waContacts(c)
	case waInteractive[typ]:
		kind = "interactive"
		payload, err = waInteractiveObject(typ, c, m.Text)
	case typ == "reaction":
		if m.ReactToProviderMessageID == "" {
			return nil, invalid("A reaction needs the WhatsApp id of the message reacted to.")
		}
		// An empty emoji removes the business's reaction.
		payload = obj{"message_id": m.ReactToProviderMessageID, "emoji": c.Emoji}
	case typ == "template":
		payload, err = waTemplate(m.Template)
	default:
		return nil, unsupported(ChannelWhatsApp, typ)
	}
	if err != nil {
		return nil, err
	}
	body := obj{"messaging_product": "whatsapp", "recipient_type": "individual", "type": kind, kind: payload}
	if bsuid.MatchString(m.To) {
		body["recipient"] = m.To
	} else {
		body["to"] = strings.TrimPrefix(m.To, "+")
	}
	if m.ReplyToProviderMessageID != "" && typ != "reaction" {
		body["context"] = obj{"message_id": m.ReplyToProviderMessageID}
	}
	return body, nil
}

func waText(text string) (obj, error) {
	if text == "" {
		return nil, invalid("A text message needs text.")
	}
	if err := checkLimits(limit{"The text", text, waMaxText}); err != nil {
		return nil, err
	}
	t := obj{"body": text}
	if hasURL.MatchString(text) {
		t["preview_url"] = true
	}
	return t, nil
}

// waMediaObject names the media by its uploaded id when there is one, else by link (WhatsApp
// takes one of the two). Text is the caption, which audio and stickers cannot have.
func waMediaObject(typ string, c transport.Content, caption string) (obj, error) {
	o, err := mediaRef(typ, c, "id", "link")
	if err != nil {
		return nil, err
	}
	if caption != "" {
		if typ == "audio" || typ == "sticker" {
			return nil, invalid("WhatsApp shows no caption on %s messages; send the text as a message of its own.", typ)
		}
		if err := checkLimits(limit{"The caption", caption, waMaxCaption}); err != nil {
			return nil, err
		}
		o["caption"] = caption
	}
	if typ == "document" && c.Filename != "" {
		o["filename"] = c.Filename
	}
	return o, nil
}

func waLocation(c transport.Content) (obj, error) {
	switch {
	case c.Latitude == nil || c.Longitude == nil:
		return nil, invalid("A location message needs content.latitude and content.longitude.")
	case *c.Latitude < -90 || *c.Latitude > 90 || *c.Longitude < -180 || *c.Longitude > 180:
		return nil, invalid("The location's latitude or longitude is out of range.")
	}
	o := obj{"latitude": *c.Latitude, "longitude": *c.Longitude}
	if c.LocationName != "" {
		o["name"] = c.LocationName
	}
	if c.LocationAddress != "" {
		o["address"] = c.LocationAddress
	}
	return o, nil
}

// waContacts: WhatsApp requires name.formatted_name and one of the name parts; the card's name
// is both (it is not split into first and last names), or its first phone when it has no name.
func waContacts(c transport.Content) ([]obj, error) {
	if len(c.Contacts) == 0 {
		return nil, invalid("A contact message needs content.contacts.")
	}
	cards := make([]obj, 0, len(c.Contacts))
	for i, card := range c.Contacts {
		name := strings.TrimSpace(card.Name)
		if name == "" && len(card.Phones) > 0 {
			name = card.Phones[0]
		}
		if name == "" {
			return nil, invalid("Contact %d has neither a name nor a phone.", i+1)
		}
		o := obj{"name": obj{"formatted_name": name, "first_name": name}}
		if len(card.Phones) > 0 {
			phones := make([]obj, len(card.Phones))
			for j, p := range card.Phones {
				phones[j] = obj{"phone": p}
			}
			o["phones"] = phones
		}
		cards = append(cards, o)
	}
	return cards, nil
}

// waInteractiveObject is the interactive object of buttons, list, cta_url, location_request
// and request_contact_info messages; text is its body, which each of them needs.
func waInteractiveObject(typ string, c transport.Content, text string) (obj, error) {
	if text == "" {
		return nil, invalid("A %s message needs text: its body.", typ)
	}
	in := obj{"body": obj{"text": text}}
	limits := []limit{{"The body", text, waMaxBody}}
	if c.FooterText != "" && (typ == "buttons" || typ == "list" || typ == "cta_url") {
		in["footer"] = obj{"text": c.FooterText}
		limits = append(limits, limit{"The footer", c.FooterText, waMaxFooter})
	}
	var err error
	switch typ {
	case "buttons":
		in["type"] = "button"
		in["action"], limits, err = waButtons(c.Buttons, limits)
	case "list":
		in["type"] = "list"
		in["action"], limits, err = waList(c, limits)
	case "cta_url":
		in["type"] = "cta_url"
		err = waCTA(in, c)
		limits = append(limits, limit{"The button's text", c.CTADisplayText, waMaxDisplayText},
			limit{"The header", c.CTAHeaderText, waMaxHeaderText})
	case "location_request":
		in["type"] = "location_request_message"
		in["action"] = obj{"name": "send_location"}
	case "request_contact_info":
		in["type"] = "request_contact_info"
		in["action"] = obj{"name": "request_contact_info"}
	}
	if err == nil {
		err = checkLimits(limits...)
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

func waButtons(buttons []transport.Button, limits []limit) (obj, []limit, error) {
	if n := len(buttons); n == 0 || n > waMaxButtons {
		return nil, nil, invalid("A buttons message has 1 to %d buttons; this one has %d.", waMaxButtons, n)
	}
	seen := map[string]bool{}
	out := make([]obj, len(buttons))
	for i, b := range buttons {
		if err := needIDTitle("Button", i, b.ID, b.Title, seen); err != nil {
			return nil, nil, err
		}
		limits = append(limits, limit{fmt.Sprintf("Button %d's title", i+1), b.Title, waMaxButtonTitle},
			limit{fmt.Sprintf("Button %d's id", i+1), b.ID, waMaxButtonID})
		out[i] = obj{"type": "reply", "reply": obj{"id": b.ID, "title": b.Title}}
	}
	return obj{"buttons": out}, limits, nil
}

func waList(c transport.Content, limits []limit) (obj, []limit, error) {
	if c.ListButton == "" {
		return nil, nil, invalid("A list message needs content.listButton, the text of the button that opens it.")
	}
	if n := len(c.Sections); n == 0 || n > waMaxSections {
		return nil, nil, invalid("A list message has 1 to %d sections; this one has %d.", waMaxSections, n)
	}
	limits = append(limits, limit{"The list's button", c.ListButton, waMaxListButton})
	rows, seen := 0, map[string]bool{}
	sections := make([]obj, len(c.Sections))
	for i, s := range c.Sections {
		if len(s.Rows) == 0 {
			return nil, nil, invalid("Section %d has no rows.", i+1)
		}
		if s.Title == "" && len(c.Sections) > 1 {
			return nil, nil, invalid("Section %d needs a title: a list of several sections titles each.", i+1)
		}
		out := make([]obj, len(s.Rows))
		for j, r := range s.Rows {
			rows++
			if err := needIDTitle("Row", rows-1, r.ID, r.Title, seen); err != nil {
				return nil, nil, err
			}
			limits = append(limits, limit{fmt.Sprintf("Row %d's title", rows), r.Title, waMaxRowTitle},
				limit{fmt.Sprintf("Row %d's id", rows), r.ID, waMaxRowID},
				limit{fmt.Sprintf("Row %d's description", rows), r.Description, waMaxRowDesc})
			out[j] = obj{"id": r.ID, "title": r.Title}
			if r.Description != "" {
				out[j]["description"] = r.Description
			}
		}
		sections[i] = obj{"rows": out}
		if s.Title != "" {
			sections[i]["title"] = s.Title
			limits = append(limits, limit{fmt.Sprintf("Section %d's title", i+1), s.Title, waMaxSectionTitle})
		}
	}
	if rows > waMaxRows {
		return nil, nil, invalid("A list message has at most %d rows in all; this one has %d.", waMaxRows, rows)
	}
	return obj{"button": c.ListButton, "sections": sections}, limits, nil
}

// needIDTitle: buttons and rows need an id and a title, and ids unique within the message.
func needIDTitle(what string, i int, id, title string, seen map[string]bool) error {
	if id == "" || title == "" {
		return invalid("%s %d needs an id and a title.", what, i+1)
	}
	if seen[id] {
		return invalid("%s %d repeats the id %q; WhatsApp wants them unique.", what, i+1, id)
	}
	seen[id] = true
	return nil
}

func waCTA(in obj, c transport.Content) error {
	if c.CTADisplayText == "" || c.CTAURL == "" {
		return invalid("A cta_url message needs content.ctaDisplayText and content.ctaUrl.")
	}
	in["action"] = obj{"name": "cta_url", "parameters": obj{"display_text": c.CTADisplayText, "url": c.CTAURL}}
	switch h := c.CTAHeaderType; {
	case h == "" && c.CTAHeaderMedia != "":
		return invalid("A cta_url header with media needs content.ctaHeaderType (image, video or document).")
	case h == "" && c.CTAHeaderText == "":
	case h == "" || h == "text":
		if c.CTAHeaderText == "" {
			return invalid("A text header needs content.ctaHeaderText.")
		}
		in["header"] = obj{"type": "text", "text": c.CTAHeaderText}
	case h == "image" || h == "video" || h == "document":
		if c.CTAHeaderMedia == "" {
			return invalid("An %s header needs content.ctaHeaderMediaUrl.", h)
		}
		in["header"] = obj{"type": h, h: obj{"link": c.CTAHeaderMedia}}
	default:
		return invalid("content.ctaHeaderType is text, image, video or document, not %q.", h)
	}
	return nil
}

// waTemplate is the template object of an approved template and its parameters: a header
// component (text parameters, or the media of an image, video or document header), a body
// component, and a button component per parameterised button with its index. A component
// without parameters is left out, as Meta documents.
func waTemplate(t *transport.OutboundTemplate) (obj, error) {
	if t == nil || t.Name == "" || t.Language == "" {
		return nil, invalid("A template message needs its approved template's name and language.")
	}
	var components []obj
	switch h := t.HeaderType; h {
	case "", "text":
		if len(t.HeaderParams) > 0 {
			components = append(components, obj{"type": "header", "parameters": textParams(t.HeaderParams)})
		}
	case "image", "video", "document":
		if t.HeaderMediaURL == "" {
			return nil, invalid("The template's %s header needs its media URL.", h)
		}
		components = append(components, obj{"type": "header", "parameters": []obj{{"type": h, h: obj{"link": t.HeaderMediaURL}}}})
	default:
		return nil, invalid("A template header is text, image, video or document, not %q.", h)
	}
	if len(t.BodyParams) > 0 {
		components = append(components, obj{"type": "body", "parameters": textParams(t.BodyParams)})
	}
	for _, b := range t.Buttons {
		if b.Index < 0 || b.Index > waMaxButtonIndex {
			return nil, invalid("A template button's index is 0 to %d, not %d.", waMaxButtonIndex, b.Index)
		}
		var p obj
		switch b.SubType {
		case "url":
			p = obj{"type": "text", "text": b.Value}
		case "copy_code":
			p = obj{"type": "coupon_code", "coupon_code": b.Value}
		case "quick_reply":
			p = obj{"type": "payload", "payload": b.Value}
		default:
			return nil, invalid("A template button's sub_type is url, copy_code or quick_reply, not %q.", b.SubType)
		}
		components = append(components, obj{"type": "button", "sub_type": b.SubType, "index": strconv.Itoa(b.Index), "parameters": []obj{p}})
	}
	tpl := obj{"name": t.Name, "language": obj{"code": t.Language}}
	if len(components) > 0 {
		tpl["components"] = components
	}
	return tpl, nil
}

func textParams(values []string) []obj {
	ps := make([]obj, len(values))
	for i, v := range values {
		ps[i] = obj{"type": "text", "text": v}
	}
	return ps
}
