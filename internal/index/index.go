// Package index registers the informer-cache field indexes that the controllers and the API
// share, once per process.
package index

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

const (
	// ProjectParent indexes Projects by spec.parent: a parent's sub-accounts.
	ProjectParent = "spec.parent"
	// ProjectTeam indexes Projects by team key: the projects a verification tier applies to.
	ProjectTeam = "teamKey"
	// SenderDefault indexes Senders that ask to be their project's default ("true"), so a send
	// without a sender reads those alone.
	SenderDefault = "spec.default"
	// EmailDomainName indexes EmailDomains by spec.domain, so the SMTP listener finds the
	// projects of a recipient's domain without reading every domain.
	EmailDomainName = "spec.domain"
	// InvitationToken indexes Invitations by status.tokenHash, so the connection page finds the
	// invitation of a link.
	InvitationToken = "status.tokenHash"
	// SenderMessengerPage indexes Senders by their Messenger Page: a Page connected again,
	// through another project's invitation, leaves the sender that had it.
	SenderMessengerPage = "spec.messenger.accountId"
	// SenderPhoneNumber indexes Senders by spec.phoneNumber: the senders of a number, across
	// projects, for its ownership.
	SenderPhoneNumber = "spec.phoneNumber"
	// PhoneNumberNumber indexes PhoneNumbers by spec.number: the claims on one number, across
	// namespaces, so the send path and inbound messages find its owner without reading them all.
	PhoneNumberNumber = "spec.number"
	// FunctionURLToken indexes Functions by the token of their public URL, so an HTTP
	// invocation finds its function without reading them all.
	FunctionURLToken = "urlToken"
)

// Register adds every index to indexer.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.Project{}, ProjectParent, func(o client.Object) []string {
		if p := o.(*v1alpha1.Project).Spec.Parent; p != "" {
			return []string{p}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index projects by parent: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Project{}, ProjectTeam, func(o client.Object) []string {
		return []string{o.(*v1alpha1.Project).TeamKey()}
	}); err != nil {
		return fmt.Errorf("index projects by team: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Sender{}, SenderDefault, func(o client.Object) []string {
		if o.(*v1alpha1.Sender).Spec.Default {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index senders by default: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.EmailDomain{}, EmailDomainName, func(o client.Object) []string {
		return []string{o.(*v1alpha1.EmailDomain).Spec.Domain}
	}); err != nil {
		return fmt.Errorf("index email domains by domain: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Function{}, FunctionURLToken, func(o client.Object) []string {
		if t := o.GetAnnotations()[v1alpha1.FunctionURLTokenAnnotation]; t != "" {
			return []string{t}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index functions by URL token: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Invitation{}, InvitationToken, func(o client.Object) []string {
		if h := o.(*v1alpha1.Invitation).Status.TokenHash; h != "" {
			return []string{h}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index invitations by token: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Sender{}, SenderMessengerPage, func(o client.Object) []string {
		if m := o.(*v1alpha1.Sender).Spec.Messenger; m != nil && m.AccountID != "" {
			return []string{m.AccountID}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index senders by messenger page: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Sender{}, SenderPhoneNumber, func(o client.Object) []string {
		if n := o.(*v1alpha1.Sender).Spec.PhoneNumber; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index senders by phone number: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.PhoneNumber{}, PhoneNumberNumber, func(o client.Object) []string {
		return []string{o.(*v1alpha1.PhoneNumber).Spec.Number}
	}); err != nil {
		return fmt.Errorf("index phone numbers by number: %w", err)
	}
	return nil
}
