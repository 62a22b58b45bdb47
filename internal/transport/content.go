package transport

// Content is the content object of a send (WIRE.md §2, MessageContent): what non-text message
// types carry.
type Content struct {
	MediaURL        string            `json:"mediaUrl,omitempty"`
	MediaID         string            `json:"mediaId,omitempty"`
	MimeType        string            `json:"mimeType,omitempty"`
	Filename        string            `json:"filename,omitempty"`
	Latitude        *float64          `json:"latitude,omitempty"`
	Longitude       *float64          `json:"longitude,omitempty"`
	LocationName    string            `json:"locationName,omitempty"`
	LocationAddress string            `json:"locationAddress,omitempty"`
	Contacts        []ContactCard     `json:"contacts,omitempty"`
	Buttons         []Button          `json:"buttons,omitempty"`
	ListButton      string            `json:"listButton,omitempty"`
	Sections        []Section         `json:"sections,omitempty"`
	CTADisplayText  string            `json:"ctaDisplayText,omitempty"`
	CTAURL          string            `json:"ctaUrl,omitempty"`
	CTAHeaderType   string            `json:"ctaHeaderType,omitempty"`
	CTAHeaderText   string            `json:"ctaHeaderText,omitempty"`
	CTAHeaderMedia  string            `json:"ctaHeaderMediaUrl,omitempty"`
	FooterText      string            `json:"footerText,omitempty"`
	Emoji           string            `json:"emoji,omitempty"`
	ReactTo         string            `json:"reactToMessageId,omitempty"`
	TemplateID      string            `json:"templateId,omitempty"`
	TemplateVars    map[string]string `json:"templateVariables,omitempty"`
	TemplateButtons map[string]string `json:"templateButtonVariables,omitempty"`
	TemplateHeader  map[string]string `json:"templateHeaderVariables,omitempty"`
	// Reply context of an inbound message that quoted an earlier one, and the ad referral of the
	// first message of a thread: filled by Switchboard, never read from a send.
	ReplyToMessageID         string    `json:"replyToMessageId,omitempty"`
	ReplyToProviderMessageID string    `json:"replyToProviderMessageId,omitempty"`
	ReplyToFrom              string    `json:"replyToFrom,omitempty"`
	ReplyToText              string    `json:"replyToText,omitempty"`
	ReplyToMessageType       string    `json:"replyToMessageType,omitempty"`
	Referral                 *Referral `json:"referral,omitempty"`
}

// Referral is the ad or post a WhatsApp contact clicked to start the conversation.
type Referral struct {
	SourceType   string `json:"sourceType,omitempty"`
	SourceID     string `json:"sourceId,omitempty"`
	SourceURL    string `json:"sourceUrl,omitempty"`
	Headline     string `json:"headline,omitempty"`
	Body         string `json:"body,omitempty"`
	MediaType    string `json:"mediaType,omitempty"`
	ImageURL     string `json:"imageUrl,omitempty"`
	VideoURL     string `json:"videoUrl,omitempty"`
	ThumbnailURL string `json:"thumbnailUrl,omitempty"`
	CtwaClid     string `json:"ctwaClid,omitempty"`
}

// ContactCard is one shared contact.
type ContactCard struct {
	Name   string   `json:"name,omitempty"`
	Phones []string `json:"phones,omitempty"`
}

// Button is a reply button.
type Button struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Section is a section of a list message.
type Section struct {
	Title string `json:"title"`
	Rows  []Row  `json:"rows"`
}

// Row is one choice of a list message.
type Row struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// Outbound is the content as a send may give it: without what only an inbound message carries
// (the reply context and the ad referral, which Switchboard fills in).
func (c Content) Outbound() Content {
	c.ReplyToMessageID, c.ReplyToProviderMessageID, c.ReplyToFrom, c.ReplyToText, c.ReplyToMessageType = "", "", "", "", ""
	c.Referral = nil
	return c
}
