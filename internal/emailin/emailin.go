// Package emailin is what Switchboard does with mail its SMTP listener (mailin) receives: which
// addresses take mail (Router: a sender's address at a domain that receives, a catch-all, a
// message's return path), and what a received mail becomes (Receiver): an inbound email
// message through the receive path every channel shares, or, for a delivery report or a
// complaint about a mail Switchboard sent, that mail's delivered or failed status and an entry
// on the project's suppression list.
package emailin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/mailin"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/unsubscribe"
)

// Router says where mail to an address goes (mailin.Recipients).
type Router struct {
	// Reader reads EmailDomains and Senders of every project (the informer cache).
	Reader client.Reader
	Pool   *pgxpool.Pool
	// InboundHost is the installation's own host name (--email-inbound-host), where the
	// mailto: addresses of broadcast email's unsubscribe links are; Unsubscribes checks their
	// tokens.
	InboundHost  string
	Unsubscribes Unsubscribes
}

// Unsubscribes reads and records the unsubscribe requests tokens make (unsubscribe.Service).
type Unsubscribes interface {
	Resolve(ctx context.Context, token string) (unsubscribe.Recipient, error)
	Unsubscribe(ctx context.Context, token string) (unsubscribe.Recipient, error)
}

var _ mailin.Recipients = (*Router)(nil)

// Lookup routes address:
//
//   - a return path (b-<message id>@bounce.<domain>) of a live email of a project with that
//     domain: a bounce address of the message's project;
//   - an address at a domain the project holding it receives at (receiving on, inbound MX
//     published; domainverify decides which one project holds a domain): that project's
//     sender whose address it is, receiving on; else its sender on the domain with catch-all
//     on. Only the holder: no other project that added the domain gets its mail, whatever
//     its senders;
//   - unsubscribe-<token>@<the inbound host>, with a token naming a broadcast recipient: an
//     unsubscribe request;
//   - anything else is unknown, refused at RCPT TO.
func (r *Router) Lookup(ctx context.Context, address string) (mailin.Route, error) {
	if id, domain, ok := domainverify.ParseReturnPath(address); ok {
		return r.bounceRoute(ctx, address, id, domain)
	}
	domain := v1alpha1.EmailDomainOf(address)
	if r.InboundHost != "" && domain == strings.ToLower(r.InboundHost) {
		return r.unsubscribeRoute(ctx, address)
	}
	holder, err := db.Planned(r.Pool).EmailDomainHolder(ctx, domain)
	if errors.Is(err, pgx.ErrNoRows) {
		return mailin.Route{}, r.unheld(ctx, domain)
	}
	if err != nil {
		return mailin.Route{}, fmt.Errorf("read the holder of %s: %w", domain, err)
	}
	var d v1alpha1.EmailDomain
	err = r.Reader.Get(ctx, client.ObjectKey{Namespace: holder.Project, Name: holder.DomainName}, &d)
	if err != nil && !apierrors.IsNotFound(err) {
		return mailin.Route{}, fmt.Errorf("read email domain %s/%s: %w", holder.Project, holder.DomainName, err)
	}
	if err != nil || string(d.UID) != holder.DomainUid || !d.DeletionTimestamp.IsZero() || !d.Receives() {
		return mailin.Route{}, fmt.Errorf("%w: no project receives at %s", mailin.ErrUnknownRecipient, domain)
	}
	return r.senderRoute(ctx, holder.Project, address)
}

// unheld is the answer for a domain no project holds: unknown, unless an EmailDomain that
// received before ownership records were asked for has not been checked since (an upgrade
// moment): the sending server then tries again rather than bouncing its mail.
func (r *Router) unheld(ctx context.Context, domain string) error {
	var domains v1alpha1.EmailDomainList
	if err := r.Reader.List(ctx, &domains, client.MatchingFields{index.EmailDomainName: domain}); err != nil {
		return fmt.Errorf("list email domains: %w", err)
	}
	for _, d := range domains.Items {
		if d.Spec.Domain == domain && d.Spec.Receiving && d.RecordVerified(v1alpha1.PurposeInbound) &&
			d.DeletionTimestamp.IsZero() && domainverify.OwnershipUnchecked(&d.Status) {
			return fmt.Errorf("email domain %s/%s is not checked since ownership records were asked for", d.Namespace, d.Name)
		}
	}
	return fmt.Errorf("%w: no project holds %s", mailin.ErrUnknownRecipient, domain)
}

// senderRoute finds the project's sender that receives mail for address: its own address
// first, else a catch-all on the same domain.
func (r *Router) senderRoute(ctx context.Context, project, address string) (mailin.Route, error) {
	var senders v1alpha1.SenderList
	if err := r.Reader.List(ctx, &senders, client.InNamespace(project)); err != nil {
		return mailin.Route{}, fmt.Errorf("list senders of %s: %w", project, err)
	}
	var domains v1alpha1.EmailDomainList
	if err := r.Reader.List(ctx, &domains, client.InNamespace(project)); err != nil {
		return mailin.Route{}, fmt.Errorf("list email domains of %s: %w", project, err)
	}
	var catchAll *v1alpha1.Sender
	for i := range senders.Items {
		s := &senders.Items[i]
		if s.Spec.Email == nil || !s.DeletionTimestamp.IsZero() {
			continue
		}
		receiving, all := s.EmailInEffect(domains.Items)
		switch {
		case !receiving:
		case strings.EqualFold(s.Spec.Email.Address, address):
			return mailin.Route{Project: project, Sender: s.Name, Address: address}, nil
		case all && v1alpha1.EmailDomainOf(s.Spec.Email.Address) == v1alpha1.EmailDomainOf(address) &&
			(catchAll == nil || s.CreationTimestamp.Before(&catchAll.CreationTimestamp)):
			catchAll = s
		}
	}
	if catchAll != nil {
		return mailin.Route{Project: project, Sender: catchAll.Name, Address: address}, nil
	}
	return mailin.Route{}, fmt.Errorf("%w: %s", mailin.ErrUnknownRecipient, address)
}

// bounceRoute accepts a return path that names a live email sent from a domain of its project.
func (r *Router) bounceRoute(ctx context.Context, address, id, domain string) (mailin.Route, error) {
	// Anything but a message id is refused without asking Postgres: the clients asking are
	// not authenticated.
	if !isMessageID(id) {
		return mailin.Route{}, fmt.Errorf("%w: return path of no message id", mailin.ErrUnknownRecipient)
	}
	m, err := db.Planned(r.Pool).GetMessageByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return mailin.Route{}, fmt.Errorf("%w: return path of no message", mailin.ErrUnknownRecipient)
	}
	if err != nil {
		return mailin.Route{}, fmt.Errorf("read message of a return path: %w", err)
	}
	if m.Channel != string(v1alpha1.ChannelEmail) || m.Direction != "outbound" || m.TestMode ||
		v1alpha1.EmailDomainOf(m.Originator) != domain {
		return mailin.Route{}, fmt.Errorf("%w: return path of another mail", mailin.ErrUnknownRecipient)
	}
	return mailin.Route{Project: m.Project, Bounce: true, Address: address}, nil
}

// unsubscribeRoute accepts an unsubscribe address whose token names a recipient of a broadcast
// email sent less than unsubscribe.Lifetime ago; nothing else at the inbound host takes mail.
func (r *Router) unsubscribeRoute(ctx context.Context, address string) (mailin.Route, error) {
	token, ok := unsubscribe.TokenOfAddress(address)
	if !ok || r.Unsubscribes == nil {
		return mailin.Route{}, fmt.Errorf("%w: %s takes no mail", mailin.ErrUnknownRecipient, r.InboundHost)
	}
	rcpt, err := r.Unsubscribes.Resolve(ctx, token)
	if errors.Is(err, unsubscribe.ErrInvalid) {
		return mailin.Route{}, fmt.Errorf("%w: an unsubscribe address of no recipient", mailin.ErrUnknownRecipient)
	}
	if err != nil {
		return mailin.Route{}, err
	}
	return mailin.Route{Project: rcpt.Project, Unsubscribe: token, Address: address}, nil
}

// isMessageID reports whether id has the shape of a message id: msg_ and base62 characters.
func isMessageID(id string) bool {
	rest, ok := strings.CutPrefix(id, "msg_")
	if !ok || rest == "" || len(rest) > 64 {
		return false
	}
	for _, c := range []byte(rest) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
