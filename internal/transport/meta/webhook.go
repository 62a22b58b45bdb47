package meta

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
)

// WebhookSignatureHeader is the header Meta signs a webhook's body in: "sha256=" and the hex
// HMAC-SHA256 of the raw body under the app secret.
const WebhookSignatureHeader = "X-Hub-Signature-256"

// WebhookMaxBody is the largest webhook body a caller reads (4 MiB). Meta batches up to a
// thousand changes in one post; even then a body stays far below this.
const WebhookMaxBody = 4 << 20

// Why a webhook is refused. A caller answers ErrWebhookUnsigned with 401 and
// ErrWebhookSignature with 403, as for the other providers (docs/transports.md).
var (
	ErrWebhookUnsigned  = errors.New("meta: webhook without an " + WebhookSignatureHeader + " header")
	ErrWebhookSignature = errors.New("meta: webhook signature does not match")
)

// Why a subscription handshake is refused (the caller answers 403).
var (
	ErrWebhookHandshakeMode      = errors.New("meta: webhook handshake: hub.mode is not subscribe")
	ErrWebhookHandshakeToken     = errors.New("meta: webhook handshake: hub.verify_token does not match")
	ErrWebhookHandshakeChallenge = errors.New("meta: webhook handshake: no usable hub.challenge")
)

const hookSignaturePrefix = "sha256="

// VerifySignature checks header, the WebhookSignatureHeader of a webhook post, against body as
// it arrived (before any decoding) and the app's secret, in time that does not depend on where
// they differ. A missing header is ErrWebhookUnsigned; anything else that is not the body's
// signature (another algorithm, no hex, another secret, an empty secret) is ErrWebhookSignature.
func VerifySignature(appSecret []byte, body []byte, header string) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrWebhookUnsigned
	}
	if len(appSecret) == 0 {
		return ErrWebhookSignature
	}
	// The prefix is compared without regard to case ("SHA256=" is seen in the wild); the hex
	// decodes in either case.
	if len(header) < len(hookSignaturePrefix) || !strings.EqualFold(header[:len(hookSignaturePrefix)], hookSignaturePrefix) {
		return ErrWebhookSignature
	}
	got, err := hex.DecodeString(header[len(hookSignaturePrefix):])
	if err != nil || len(got) != sha256.Size {
		return ErrWebhookSignature
	}
	mac := hmac.New(sha256.New, appSecret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return ErrWebhookSignature
	}
	return nil
}

// hookMaxChallenge bounds the challenge echoed back: Meta sends a number of a few digits.
const hookMaxChallenge = 256

// VerifyHandshake answers the GET Meta sends when a webhook is subscribed
// (hub.mode=subscribe&hub.verify_token=…&hub.challenge=…): the challenge to write back as the
// body of a 200 when the mode is subscribe and the token is verifyToken (compared in constant
// time; an empty verifyToken matches nothing). The challenge is refused when it is empty,
// longer than 256 bytes or holds anything but letters, digits, '-', '_' and '.': Meta sends a
// number, and nothing else is echoed back.
func VerifyHandshake(query url.Values, verifyToken string) (challenge string, err error) {
	if query.Get("hub.mode") != "subscribe" {
		return "", ErrWebhookHandshakeMode
	}
	h, w := sha256.Sum256([]byte(query.Get("hub.verify_token"))), sha256.Sum256([]byte(verifyToken))
	if verifyToken == "" || subtle.ConstantTimeCompare(h[:], w[:]) != 1 {
		return "", ErrWebhookHandshakeToken
	}
	challenge = query.Get("hub.challenge")
	if challenge == "" || len(challenge) > hookMaxChallenge {
		return "", ErrWebhookHandshakeChallenge
	}
	for i := 0; i < len(challenge); i++ {
		if c := challenge[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return "", ErrWebhookHandshakeChallenge
		}
	}
	return challenge, nil
}
