package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/templatereview"
)

// Options are what the reconcilers take from the process that runs them.
type Options struct {
	// Activity, when not nil, adds Postgres figures to Sender status.
	Activity *ActivitySource
	// ProviderChecks check Provider credentials with the provider, by type. A type without one
	// is Ready once its Secret is complete, with "credentials are not checked for <type>".
	ProviderChecks map[v1alpha1.ProviderType]CredentialCheck
	// InstallationNamespace holds the Providers that may set baseURL; AllowProjectProviderEndpoints
	// lets Providers in projects' namespaces set it too (v1alpha1.Provider.EndpointAllowed).
	InstallationNamespace         string
	AllowProjectProviderEndpoints bool
	// NumberAccounts asks a project's own provider accounts which numbers they hold, to prove
	// its PhoneNumbers; nil proves none made in a project's namespace (operators still assign
	// numbers from InstallationNamespace). AdoptNumbersBefore is when ownership started being
	// checked: the numbers of live Senders created before it are assigned to the first project
	// that held them (zero: none).
	NumberAccounts     phonenumber.Lookup
	AdoptNumbersBefore time.Time
	// NumberReleases releases the numbers of deleted PhoneNumbers the API bought (unless
	// annotated to keep them); nil releases none, and leaves them held by their finalizer.
	NumberReleases phonenumber.Releaser
	// EmailDomains makes domains' keys and records and checks DNS; nil runs no EmailDomain
	// controller.
	EmailDomains *domainverify.Verifier
	// Templates moves templates through their review; nil runs no Template controller.
	Templates *templatereview.Reviewer
	// WhatsApp, when not nil, reads what the provider reports of senders' WhatsApp numbers into
	// their status, every WhatsAppEvery (an hour when zero).
	WhatsApp      WhatsAppReader
	WhatsAppEvery time.Duration
	// Invitations keeps invitations' states; nil runs no Invitation controller.
	Invitations *invitation.Service
	// InvitationAbandonAfter fails an invitation in progress for longer (DefaultAbandonAfter when zero).
	InvitationAbandonAfter time.Duration
	// Functions keeps functions' keys, triggers and deployments; nil runs no Function controller.
	Functions *functions.Service
	// Circuits, when not nil, shows Providers' circuit breakers in their status, read every
	// CircuitEvery (10 s when zero).
	Circuits     CircuitStates
	CircuitEvery time.Duration
}

// Setup registers every reconciler with the manager. The field indexes (index.Register) must be
// registered first.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := (&ProjectReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&SenderReconciler{Client: mgr.GetClient(), Activity: opts.Activity, WhatsApp: opts.WhatsApp,
		WhatsAppEvery: opts.WhatsAppEvery, InstallationNamespace: opts.InstallationNamespace,
		AdoptNumbersBefore: opts.AdoptNumbersBefore}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&PhoneNumberReconciler{Client: mgr.GetClient(), InstallationNamespace: opts.InstallationNamespace,
		Accounts: opts.NumberAccounts, Releases: opts.NumberReleases, Events: mgr.GetEventRecorderFor("switchboard-phonenumber")}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&WebhookReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&RiskPolicyReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if opts.EmailDomains != nil {
		if err := (&EmailDomainReconciler{Client: mgr.GetClient(), Verifier: opts.EmailDomains}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if opts.Templates != nil {
		if err := (&TemplateReconciler{Client: mgr.GetClient(), Reviewer: opts.Templates}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if opts.Invitations != nil {
		if err := (&InvitationReconciler{Client: mgr.GetClient(), Invitations: opts.Invitations,
			AbandonAfter: opts.InvitationAbandonAfter}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if opts.Functions != nil {
		if err := (&FunctionReconciler{Client: mgr.GetClient(), Functions: opts.Functions}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := (&AgentReconciler{Client: mgr.GetClient(), InstallationNamespace: opts.InstallationNamespace}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&ProviderReconciler{Client: mgr.GetClient(), Checks: opts.ProviderChecks, InstallationNamespace: opts.InstallationNamespace,
		AllowProjectEndpoints: opts.AllowProjectProviderEndpoints, Circuits: opts.Circuits, CircuitEvery: opts.CircuitEvery}).SetupWithManager(mgr)
}

// CacheOptions limits what the informer cache holds: of all Secrets, only those labelled
// messaging.switchboard.io/secret=true (webhook signing secrets, provider credentials).
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.SecretLabel: "true"})},
	}}
}
