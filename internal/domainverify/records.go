// Package domainverify proves that a project controls an email domain: it makes the domain's
// DKIM key, lists the DNS records to publish (DKIM, the project's ownership record, SPF, DMARC,
// custom MAIL FROM, inbound MX), looks them up through the installation's resolver, decides
// which one project holds a domain several projects add, works out where the domain stands,
// and announces each transition once (domain.verified, domain.failed). The EmailDomain
// controller runs it on a schedule and the REST API on POST …/verify; both write the same status.
package domainverify

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// Config is what the installation sets for every domain.
type Config struct {
	// InboundHost is the host name this installation receives mail at (--email-inbound-host):
	// the target of the inbound MX and of the custom MAIL FROM's MX. Empty: the installation
	// receives no mail, so neither can be set up.
	InboundHost string
	// SPFInclude is the SPF domain of the relays mail goes out through (--email-spf-include),
	// e.g. amazonses.com or _spf.example.net. Empty: the SPF record authorises the domain's own
	// MX hosts (v=spf1 mx ~all).
	SPFInclude string
}

// MailFromLabel is the label of the custom MAIL FROM domain under the domain: the envelope
// sender of mail from example.com is bounce.example.com, whose MX brings bounces back.
const MailFromLabel = "bounce"

// returnPathPrefix starts the local part of a return path.
const returnPathPrefix = "b-"

// ReturnPath is the envelope sender of message id from domain when the domain's custom MAIL
// FROM is published: b-<id>@bounce.<domain>. Bounces come back to it, at Switchboard's
// listener, and name the message whatever the bounce itself quotes.
func ReturnPath(id, domain string) string {
	return returnPathPrefix + id + "@" + MailFromLabel + "." + domain
}

// ParseReturnPath returns the message id and the domain a return path names; ok is false when
// address is not one.
func ParseReturnPath(address string) (id, domain string, ok bool) {
	at := strings.LastIndexByte(address, '@')
	if at < 0 {
		return "", "", false
	}
	local, host := address[:at], strings.ToLower(address[at+1:])
	domain, isBounce := strings.CutPrefix(host, MailFromLabel+".")
	id, hasPrefix := strings.CutPrefix(local, returnPathPrefix)
	if !isBounce || !hasPrefix || id == "" || domain == "" {
		return "", "", false
	}
	return id, domain, true // message ids are case-sensitive: the local part is kept as written
}

// mxPriority is the preference of the MX records asked for.
const mxPriority int32 = 10

// dkimRSABits is the size of generated keys: 2048 is what receivers expect today, and its TXT
// record still fits a DNS answer over UDP.
const dkimRSABits = 2048

// SetupError is a reason the records of a domain cannot be made: the domain is not verifiable.
type SetupError struct{ Reason string }

func (e *SetupError) Error() string { return e.Reason }

// GenerateKey makes a DKIM signing key and returns it PEM-encoded (PKCS#8).
func GenerateKey() ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, dkimRSABits)
	if err != nil {
		return nil, fmt.Errorf("generate DKIM key: %w", err)
	}
	return encodeKey(key)
}

// encodeKey is a private key as PKCS#8 PEM.
func encodeKey(key any) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode DKIM key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// GenerateEd25519Key makes an Ed25519 DKIM signing key (RFC 8463) and returns it PEM-encoded
// (PKCS#8).
func GenerateEd25519Key() ([]byte, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate Ed25519 DKIM key: %w", err)
	}
	return encodeKey(key)
}

// Ed25519Record is the record that publishes a domain's Ed25519 key under selector: recommended,
// not required (spec.dkimEd25519).
func Ed25519Record(domain, selector string, key crypto.Signer) (v1alpha1.DNSRecord, error) {
	name := selector + "._domainkey." + domain
	if len(name) > 253 {
		return v1alpha1.DNSRecord{}, &SetupError{Reason: fmt.Sprintf("the Ed25519 DKIM record name %s… is longer than DNS allows (253 characters)", name[:40])}
	}
	if _, ok := key.Public().(ed25519.PublicKey); !ok {
		return v1alpha1.DNSRecord{}, &SetupError{Reason: "the Ed25519 DKIM key is not an Ed25519 key"}
	}
	value, err := DKIMValue(key)
	if err != nil {
		return v1alpha1.DNSRecord{}, &SetupError{Reason: "the Ed25519 DKIM record cannot be made: " + err.Error()}
	}
	return v1alpha1.DNSRecord{Purpose: v1alpha1.PurposeDKIMEd25519, Name: name, Type: "TXT", Value: value}, nil
}

// ParseKey reads a PEM-encoded DKIM private key: RSA (PKCS#1 or PKCS#8, at least 1024 bits, as
// RFC 8301 requires) or Ed25519 (PKCS#8). Errors name what is wrong, never the key.
func ParseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, &SetupError{Reason: "the DKIM key is not PEM-encoded"}
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, &SetupError{Reason: fmt.Sprintf("the DKIM key is a PEM %q block; an RSA or Ed25519 private key is needed", block.Type)}
	}
	if err != nil {
		return nil, &SetupError{Reason: "the DKIM key cannot be read: " + err.Error()}
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 1024 {
			return nil, &SetupError{Reason: fmt.Sprintf("the DKIM key has %d bits; RSA keys need at least 1024 (RFC 8301)", k.N.BitLen())}
		}
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	default:
		return nil, &SetupError{Reason: fmt.Sprintf("the DKIM key is a %T; an RSA or Ed25519 private key is needed", key)}
	}
}

// DKIMValue is the TXT value that publishes the public half of key (RFC 6376 §3.6.1).
func DKIMValue(key crypto.Signer) (string, error) {
	switch pub := key.Public().(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return "", err
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der), nil
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub), nil
	default:
		return "", errors.New("unsupported DKIM key type")
	}
}

// Records lists the records to publish for the domain with key published under selector and
// ownership the value of its ownership record (OwnershipValue). Which are required follows the
// spec: DKIM always; the ownership record always (the one proof of this project's own, see
// OwnershipValue); SPF, DMARC and the MAIL FROM MX when enhanced records are on; the inbound MX
// when receiving is on. The others are listed as recommended.
func Records(spec v1alpha1.EmailDomainSpec, selector string, key crypto.Signer, ownership string, cfg Config) ([]v1alpha1.DNSRecord, error) {
	domain := spec.Domain
	dkimName := selector + "._domainkey." + domain
	if len(dkimName) > 253 {
		return nil, &SetupError{Reason: fmt.Sprintf("the DKIM record name %s… is longer than DNS allows (253 characters); use a shorter domain or selector",
			dkimName[:40])}
	}
	ownershipName := OwnershipLabel + "." + domain
	if len(ownershipName) > 253 {
		return nil, &SetupError{Reason: fmt.Sprintf("the ownership record name %s… is longer than DNS allows (253 characters); use a shorter domain",
			ownershipName[:40])}
	}
	dkimValue, err := DKIMValue(key)
	if err != nil {
		return nil, &SetupError{Reason: "the DKIM record cannot be made: " + err.Error()}
	}
	enhanced := spec.EnhancedRecords
	if enhanced && cfg.InboundHost == "" {
		return nil, &SetupError{Reason: "enhanced records need a custom MAIL FROM domain whose MX receives bounces, and this installation receives no mail (--email-inbound-host is not set)"}
	}
	if spec.Receiving && cfg.InboundHost == "" {
		return nil, &SetupError{Reason: "receiving needs an MX record pointing at this installation, and it receives no mail (--email-inbound-host is not set)"}
	}
	spf := "v=spf1 mx ~all"
	if cfg.SPFInclude != "" {
		spf = "v=spf1 include:" + cfg.SPFInclude + " ~all"
	}
	out := []v1alpha1.DNSRecord{
		{Purpose: v1alpha1.PurposeDKIM, Name: dkimName, Type: "TXT", Value: dkimValue, Required: true},
		{Purpose: v1alpha1.PurposeOwnership, Name: ownershipName, Type: "TXT", Value: ownership, Required: true},
	}
	if cfg.InboundHost != "" {
		mailFrom := MailFromLabel + "." + domain
		if len(mailFrom) <= 253 {
			prio := mxPriority
			out = append(out,
				v1alpha1.DNSRecord{Purpose: v1alpha1.PurposeMailFrom, Name: mailFrom, Type: "MX", Value: cfg.InboundHost,
					Priority: &prio, Required: enhanced},
				v1alpha1.DNSRecord{Purpose: v1alpha1.PurposeSPF, Name: mailFrom, Type: "TXT", Value: spf, Required: enhanced})
		} else if enhanced {
			return nil, &SetupError{Reason: "the MAIL FROM domain " + MailFromLabel + "." + domain[:20] + "… is longer than DNS allows"}
		}
	} else {
		out = append(out, v1alpha1.DNSRecord{Purpose: v1alpha1.PurposeSPF, Name: domain, Type: "TXT", Value: spf})
	}
	if len("_dmarc."+domain) <= 253 {
		out = append(out, v1alpha1.DNSRecord{Purpose: v1alpha1.PurposeDMARC, Name: "_dmarc." + domain, Type: "TXT",
			Value: "v=DMARC1; p=none;", Required: enhanced})
	} else if enhanced {
		return nil, &SetupError{Reason: "the DMARC record name _dmarc." + domain[:20] + "… is longer than DNS allows"}
	}
	if cfg.InboundHost != "" {
		prio := mxPriority
		out = append(out, v1alpha1.DNSRecord{Purpose: v1alpha1.PurposeInbound, Name: domain, Type: "MX", Value: cfg.InboundHost,
			Priority: &prio, Required: spec.Receiving})
	}
	return out, nil
}

// normalizeHost lowercases a host name and drops its trailing dot, for comparisons.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}
