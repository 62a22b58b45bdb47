// Package meta is the transport for Meta's Graph API (https://developers.facebook.com/docs/graph-api):
// WhatsApp through the Cloud API, Messenger and Instagram through the Send API. Besides sending
// (Transport.Send) it calls what a WhatsApp sender needs around its messages: the token check,
// read receipts, the business profile and phone number, message templates and media.
//
// Every request carries its token as "Authorization: Bearer", never in the URL, and its body as
// JSON (multipart for a media upload). The token is the Provider's system-user token
// (Config.AccessToken) unless a call names another: a message's Outbound.AccountToken, a
// client call's token argument.
//
// Which account sends is Outbound.From: for whatsapp the phone number id (not the number), for
// messenger the Facebook Page id, for instagram the id of the Page linked to the Instagram
// professional account (Meta's Send API for Instagram is POST /{page-id}/messages with the
// Page's token).
//
// No error of this package carries a token, a message's text or a template's parameters; the
// package logs nothing.
package meta

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// DefaultBaseURL is the Graph API.
const DefaultBaseURL = "https://graph.facebook.com"

// DefaultVersion is the Graph API version requests name when Config.Version is empty.
const DefaultVersion = "v21.0"

// Channels the transport carries.
const (
	ChannelWhatsApp  = "whatsapp"
	ChannelInstagram = "instagram"
	ChannelMessenger = "messenger"
)

// defaultTimeout bounds a request of a Transport without its own client. Sending media by URL
// makes Meta fetch it before it answers.
const defaultTimeout = 30 * time.Second

// Config is what the transport needs to reach the Graph API.
type Config struct {
	// BaseURL replaces https://graph.facebook.com (a proxy, the metatest peer).
	BaseURL string
	// Version is the Graph API version ("v21.0"); empty means DefaultVersion.
	Version string
	// AccessToken is the system user's token, used where a call names no other.
	AccessToken string
	// AppID is the Meta app's id: files uploaded through the Resumable Upload API (a profile
	// picture) belong to it.
	AppID string
	// HTTP is the client requests go through; nil means one with a 30 s timeout.
	HTTP *http.Client
}

// Transport sends WhatsApp, Instagram and Messenger messages and makes the Graph API calls
// around them. It is safe for concurrent use.
type Transport struct {
	cfg     Config
	base    *url.URL
	hc      *http.Client
	baseErr error
}

var graphVersion = regexp.MustCompile(`^v[0-9]{1,3}\.[0-9]{1,2}$`)

// New returns the transport of cfg. A BaseURL that is not an absolute http(s) URL, or a
// Version not shaped like "v21.0", makes every request fail (said then, without the URL).
func New(cfg Config) *Transport {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	t := &Transport{cfg: cfg, hc: cfg.HTTP}
	if t.hc == nil {
		t.hc = &http.Client{Timeout: defaultTimeout}
	}
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		t.baseErr = fmt.Errorf("meta: base URL is not an absolute http(s) URL")
	case !graphVersion.MatchString(cfg.Version):
		t.baseErr = fmt.Errorf("meta: Graph API version %q is not shaped like v21.0", cfg.Version)
	default:
		t.base = u
	}
	return t
}

var _ transport.Transport = (*Transport)(nil)

// Channels implements transport.Transport.
func (t *Transport) Channels() []string {
	return []string{ChannelWhatsApp, ChannelInstagram, ChannelMessenger}
}
