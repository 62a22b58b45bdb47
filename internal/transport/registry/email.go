package registry

import (
	"context"
	"crypto"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/smtp"
)

// ErrEmailDomainNotVerified fails a live email whose From domain is not an email domain of the
// project with its DKIM record published (docs/email.md): Switchboard signs every mail, and
// cannot sign for a domain it has no published key of.
const ErrEmailDomainNotVerified = "EMAIL_DOMAIN_NOT_VERIFIED"

// emailRoute is the route of live email messageID through the smtp Provider p: its relay, the
// DKIM key of the sender's domain, and, when the domain's custom MAIL FROM is published, an
// envelope sender there that names the message (ReturnPath), so bounces come back to
// Switchboard's listener and find it.
func (r *Registry) emailRoute(ctx context.Context, p *v1alpha1.Provider, snd *v1alpha1.Sender, messageID string) (message.Route, error) {
	d, key, err := r.dkimKey(ctx, snd)
	if err != nil {
		return message.Route{}, err
	}
	t, err := r.smtpOf(ctx, p)
	if err != nil {
		return message.Route{}, err
	}
	route := message.Route{Transport: t, External: true, FromName: snd.Spec.Email.FromName, DKIM: key}
	if d.RecordVerified(v1alpha1.PurposeMailFrom) {
		route.ReturnPath = domainverify.ReturnPath(messageID, d.Spec.Domain)
	}
	return route, nil
}

// signingDomain returns the EmailDomain the sender's mail is signed for, or why there is none.
func (r *Registry) signingDomain(ctx context.Context, snd *v1alpha1.Sender) (*v1alpha1.EmailDomain, string, error) {
	if snd.Spec.Email == nil {
		return nil, fmt.Sprintf("Sender %s has no email address.", snd.Name), nil
	}
	var list v1alpha1.EmailDomainList
	if err := r.Reader.List(ctx, &list, client.InNamespace(snd.Namespace)); err != nil {
		return nil, "", fmt.Errorf("list email domains of %s: %w", snd.Namespace, err)
	}
	d := v1alpha1.DomainFor(list.Items, snd.Spec.Email.Address)
	domain := v1alpha1.EmailDomainOf(snd.Spec.Email.Address)
	switch {
	case d == nil:
		return nil, fmt.Sprintf("%s is not an email domain of this project; add it and publish its records.", domain), nil
	case !d.RecordVerified(v1alpha1.PurposeDKIM) || d.Status.DKIMSecret == nil:
		return nil, fmt.Sprintf("The DKIM record of email domain %s (%s) is not published; publish it and verify the domain.", domain, d.Name), nil
	}
	return d, "", nil
}

// dkimKey reads the signing key of the sender's domain, parsed once per version of its Secret.
func (r *Registry) dkimKey(ctx context.Context, snd *v1alpha1.Sender) (*v1alpha1.EmailDomain, *transport.DKIMKey, error) {
	d, reason, err := r.signingDomain(ctx, snd)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, &transport.Failure{Code: ErrEmailDomainNotVerified, Message: reason}
	}
	signer, err := r.dkimSigner(ctx, d, d.Status.DKIMSecret)
	if err != nil {
		return nil, nil, err
	}
	key := &transport.DKIMKey{Domain: d.Spec.Domain, Selector: d.Status.DKIMSelector, Signer: signer}
	// The Ed25519 key a domain may add (RFC 8463) signs too, once its record is published.
	if ed := d.Status.DKIMEd25519Secret; d.Spec.DKIMEd25519 && ed != nil && d.Status.DKIMEd25519Selector != "" &&
		d.RecordVerified(v1alpha1.PurposeDKIMEd25519) {
		edSigner, err := r.dkimSigner(ctx, d, ed)
		if err != nil {
			return nil, nil, err
		}
		key.Also = &transport.DKIMKey{Domain: d.Spec.Domain, Selector: d.Status.DKIMEd25519Selector, Signer: edSigner}
	}
	return d, key, nil
}

// dkimSigner reads a signing key of domain d from the Secret key ref, parsed once per version
// of its Secret.
func (r *Registry) dkimSigner(ctx context.Context, d *v1alpha1.EmailDomain, ref *v1alpha1.SecretKeyRef) (crypto.Signer, error) {
	var s corev1.Secret
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: ref.Name}, &s)
	if apierrors.IsNotFound(err) || (err == nil && len(s.Data[ref.Key]) == 0) {
		return nil, &transport.Failure{Code: ErrEmailDomainNotVerified, Message: fmt.Sprintf(
			"The DKIM key of email domain %s (Secret %s, key %s) is missing.", d.Spec.Domain, ref.Name, ref.Key)}
	}
	if err != nil {
		return nil, fmt.Errorf("read the DKIM key of %s: %w", d.Spec.Domain, err)
	}
	signer, err := r.keys.get(fmt.Sprintf("%s/%s/%s", s.UID, s.ResourceVersion, ref.Key), string(s.UID)+"/",
		func() (crypto.Signer, error) { return domainverify.ParseKey(s.Data[ref.Key]) })
	if err != nil {
		return nil, &transport.Failure{Code: ErrEmailDomainNotVerified, Message: fmt.Sprintf("The DKIM key of %s cannot sign: %v", d.Spec.Domain, err)}
	}
	return signer, nil
}

// smtpOf is the transport of an smtp Provider, built once per version of it and its Secret.
func (r *Registry) smtpOf(ctx context.Context, p *v1alpha1.Provider) (*smtp.Transport, error) {
	secret, err := r.credentials(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.relays.get(fmt.Sprintf("%s/%d/%s", p.UID, p.Generation, secret.ResourceVersion), string(p.UID)+"/",
		func() (*smtp.Transport, error) {
			cfg, err := smtp.ProviderConfig(p.Spec.BaseURL, string(secret.Data[v1alpha1.ProviderKeyUsername]),
				string(secret.Data[v1alpha1.ProviderKeyPassword]), secret.Data[v1alpha1.ProviderKeyCACert], r.AttachmentHTTP)
			if err == nil {
				var t *smtp.Transport
				if t, err = smtp.New(cfg); err == nil {
					return t, nil
				}
			}
			return nil, &transport.Failure{Code: ErrProviderNotReady, Message: fmt.Sprintf("Provider %s: %v", p.Name, err)}
		})
}

// emailAvailable refuses, at accept, a live email whose domain cannot sign (strict: v2's 409
// no_channel with what to do; else 400 email_domain_not_verified).
func (r *Registry) emailAvailable(ctx context.Context, snd *v1alpha1.Sender, strict bool) error {
	d, reason, err := r.signingDomain(ctx, snd)
	if err != nil || d != nil {
		return err
	}
	msg := fmt.Sprintf("Sender %s cannot send live email: %s", snd.Name, reason)
	if strict {
		e := apperror.New(apperror.Conflict, "no_channel", msg)
		e.Details = map[string]any{"connect": []map[string]any{{"type": "email",
			"description": "add the sender's domain (POST /v2/email-domains), publish its DNS records and verify it"}}}
		return e
	}
	return apperror.New(apperror.Invalid, "email_domain_not_verified", msg)
}
