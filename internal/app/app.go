// Package app assembles Switchboard's roles out of its parts: a controller-runtime manager (cache,
// health probes, metrics, leader election) that runs the controllers (manager role), the API
// server (api role) and the job-queue workers (worker role), or all three in one process.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/account"
	"github.com/switchboard-io/switchboard/internal/admission"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/call"
	"github.com/switchboard-io/switchboard/internal/callback"
	"github.com/switchboard-io/switchboard/internal/circuit"
	"github.com/switchboard-io/switchboard/internal/connectpage"
	"github.com/switchboard-io/switchboard/internal/console"
	"github.com/switchboard-io/switchboard/internal/contact"
	"github.com/switchboard-io/switchboard/internal/controller"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/emaildomain"
	"github.com/switchboard-io/switchboard/internal/emailin"
	"github.com/switchboard-io/switchboard/internal/erasure"
	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/httpapi"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/knowledge/vectorindex"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/llm/models"
	"github.com/switchboard-io/switchboard/internal/mailin"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/metrics"
	"github.com/switchboard-io/switchboard/internal/numbers"
	"github.com/switchboard-io/switchboard/internal/onboarding"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/phonecheck"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/projectwebhook"
	"github.com/switchboard-io/switchboard/internal/providercheck"
	"github.com/switchboard-io/switchboard/internal/ratelimit"
	"github.com/switchboard-io/switchboard/internal/regulatory"
	"github.com/switchboard-io/switchboard/internal/retention"
	"github.com/switchboard-io/switchboard/internal/risk"
	"github.com/switchboard-io/switchboard/internal/sender"
	"github.com/switchboard-io/switchboard/internal/template"
	"github.com/switchboard-io/switchboard/internal/templatereview"
	"github.com/switchboard-io/switchboard/internal/tendlc"
	"github.com/switchboard-io/switchboard/internal/transport/registry"
	"github.com/switchboard-io/switchboard/internal/transport/sandbox"
	"github.com/switchboard-io/switchboard/internal/unsubscribe"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
	"github.com/switchboard-io/switchboard/internal/whatsappsync"
	"github.com/switchboard-io/switchboard/internal/worker"
)

// Role is what a process runs.
type Role string

const (
	RoleManager Role = "manager"
	RoleAPI     Role = "api"
	RoleWorker  Role = "worker"
	RoleAll     Role = "all"
)

// Roles lists the roles a process can take.
var Roles = []Role{RoleManager, RoleAPI, RoleWorker, RoleAll}

func (r Role) runs(part Role) bool { return r == part || r == RoleAll }

// Config is everything a role needs; the CLI fills it from flags.
type Config struct {
	Role Role
	// RestConfig connects to the Kubernetes API.
	RestConfig *rest.Config
	// Pool is Switchboard's Postgres, already migrated.
	Pool *pgxpool.Pool
	// Redis, when set, is shared by the api replicas.
	Redis *redis.Client
	// Listener serves the API (api and all roles). Bound by the caller, so a taken port fails first.
	Listener net.Listener
	// MetricsAddr and HealthAddr are the manager's metrics and probe addresses; "0" turns one off.
	MetricsAddr string
	// PprofAddr serves Go's profiling endpoints (/debug/pprof/); "0" or empty turns them off.
	PprofAddr  string
	HealthAddr string
	// LeaderElection makes one manager replica active at a time.
	LeaderElection          bool
	LeaderElectionNamespace string
	WorkerConcurrency       int
	// MaxRequestsInFlight bounds the API requests the process works on at once; past it a
	// request waits up to half a second, then is answered 503 with Retry-After (0:
	// httpapi.DefaultMaxInFlight; negative: unbounded).
	MaxRequestsInFlight int
	// ReconcileSentAfter is how long a live message may stay sent without its provider's
	// callback before the provider is asked (message.DefaultReconcileAfter when zero);
	// ReconcileEvery how often such messages are looked for (message.ReconcileEvery when zero).
	ReconcileSentAfter time.Duration
	ReconcileEvery     time.Duration
	// KnowledgeMemory bounds the knowledge vectors held in the process (bytes; 0: 256 MiB).
	KnowledgeMemory int64
	// Voices are what GET /v1/agents/voices lists; nil: the shipped catalogue.
	Voices *agent.Voicebook
	// Calls are the knobs of voice calls (zero: the defaults).
	Calls CallOptions
	// Numbers paces the renewals of bought phone numbers.
	Numbers NumberOptions
	// Functions says how functions are built and run.
	Functions FunctionOptions
	// DocumentStore keeps regulatory documents' files; nil keeps them in Postgres.
	DocumentStore regulatory.Store
	// KnowledgeSweepEvery is how often deleted agents' knowledge is deleted and stale vectors
	// re-embedded (0: knowledge.SweepEvery; tests shorten it).
	KnowledgeSweepEvery time.Duration
	// Delivery configures webhook deliveries: the address allow-list, plain http to loopback (dev).
	Delivery delivery.WorkerOptions
	// Sandbox sets the sandbox transport's simulated delays.
	Sandbox SandboxOptions
	// TelegramAPI is the Telegram Bot API's address; empty is Telegram's own.
	TelegramAPI string
	// PublicURL is the installation's address as providers reach it: their callbacks arrive
	// under PublicURL/callbacks/<provider>/. Empty: no status callbacks or inbound webhooks.
	PublicURL string
	// InstallationNamespace holds the Providers every project may use.
	InstallationNamespace string
	// ConsoleIdleTimeout ends a console session unused for that long (console.DefaultIdleTimeout
	// when zero).
	ConsoleIdleTimeout time.Duration
	// WebhookDisableAfter is how long a webhook endpoint may fail every attempt before it is
	// disabled (delivery.DefaultDisableAfter when zero; negative: never); WebhookDisableEvery how
	// often endpoints are looked at (a minute when zero).
	WebhookDisableAfter time.Duration
	WebhookDisableEvery time.Duration
	// CircuitStatusEvery is how often Providers' circuit breakers are read into their status (10 s
	// when zero).
	CircuitStatusEvery time.Duration
	// AllowProjectEndpoints lets Providers in projects' namespaces set baseURL; otherwise
	// only the installation's Providers do (a project's endpoint could claim another's bot or number).
	AllowProjectEndpoints bool
	// DispatchAttempts bounds the calls to a provider for one message (0: 8).
	DispatchAttempts int
	// DNSServer is the DNS server (host:port) email checks ask; empty: /etc/resolv.conf's.
	DNSServer string
	// Email is what the installation sets for every email domain.
	Email domainverify.Config
	// SMTPListener, when set, takes inbound mail (api and all roles); bound by the caller.
	SMTPListener net.Listener
	// SMTPMaxMessageBytes bounds an inbound mail (0: mailin's default).
	SMTPMaxMessageBytes int64
	// SMTPLimits bound the connections, session time and memory of the SMTP listener's
	// clients (zero fields: mailin's defaults).
	SMTPLimits mailin.Limits
	// Disposable is the list of throwaway mail domains introspection flags; nil: the one
	// Switchboard ships.
	Disposable emailcheck.Disposable
	// SenderActivityEvery is how often Sender status reads its traffic from Postgres (a minute).
	SenderActivityEvery time.Duration
	// WhatsAppStatusEvery is how often Sender status reads what Meta reports of a WhatsApp
	// number and its payment (an hour).
	WhatsAppStatusEvery time.Duration
	// TemplateSyncEvery is how often the manager reads every project's WhatsApp business
	// accounts for template verdicts and categories a webhook did not bring (an hour).
	TemplateSyncEvery time.Duration
	// TenDLCSyncEvery is how often the manager looks at pending 10DLC registrations (15 s).
	TenDLCSyncEvery time.Duration
	// WebhookCertDir holds the admission webhooks' serving certificate (tls.crt, tls.key); empty:
	// the manager serves no admission webhooks. WebhookPort is where it serves them (9443).
	WebhookCertDir string
	WebhookPort    int
	// HoldExpiryEvery is how often workers fail risk holds whose review window closed (30 s).
	HoldExpiryEvery time.Duration
	// Retention is how long what grows with traffic is kept (retention.Default when zero);
	// workers drop what is older every RetentionEvery (1 hour).
	Retention      retention.Policy
	RetentionEvery time.Duration
	// BroadcastChunk is how many recipients of a broadcast one transaction hands to the send
	// path (broadcast.DefaultChunk when zero).
	BroadcastChunk int
	// BroadcastMaxRecipients bounds the recipients of one broadcast
	// (broadcast.DefaultMaxRecipients when zero).
	BroadcastMaxRecipients int
	// SupportURL is where a project whose sending is suspended is sent (403 sending_suspended's
	// details.dashboardUrl).
	SupportURL string
	// MaxSubAccounts is how many sub-accounts a project may have unless its Project says
	// (account.DefaultMaxSubAccounts when zero).
	MaxSubAccounts int
	// DashboardURL is where invitation links point: the connection page, served by the api
	// role under /invitations/ (PublicURL when empty, else the API's own address).
	DashboardURL string
	// InvitationAbandonAfter fails an invitation left in progress this long (an hour when zero).
	InvitationAbandonAfter time.Duration
	Log                    logr.Logger
	// SkipControllerNameValidation lets one test binary run several managers; controller names
	// must otherwise be unique per process, as they name the controllers' metrics.
	SkipControllerNameValidation bool
}

// Scheme knows Kubernetes' built-in types and Switchboard's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilMust(clientgoscheme.AddToScheme(s))
	utilMust(v1alpha1.AddToScheme(s))
	return s
}

func utilMust(err error) {
	if err != nil {
		panic(err)
	}
}

// CheckSchema fails unless the database's schema is the one this binary was built for.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	current, latest, err := postgres.SchemaVersion(ctx, pool)
	if err != nil {
		return err
	}
	if current != latest {
		return fmt.Errorf("database schema is at version %d and this build needs %d; run `switchboard migrate`", current, latest)
	}
	return nil
}

// Run runs the role until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if !slices.Contains(Roles, cfg.Role) {
		return fmt.Errorf("unknown role %q", cfg.Role)
	}
	if cfg.Role.runs(RoleAPI) && cfg.Listener == nil {
		return errors.New("the api role needs a listener")
	}
	log := cfg.Log.WithValues("role", string(cfg.Role))

	// The admission webhooks are served by the manager role when it has a serving certificate.
	serveWebhooks := cfg.Role.runs(RoleManager) && cfg.WebhookCertDir != ""
	var webhookServer webhook.Server
	if serveWebhooks {
		webhookServer = webhook.NewServer(webhook.Options{Port: cfg.WebhookPort, CertDir: cfg.WebhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg.RestConfig, ctrl.Options{
		WebhookServer:           webhookServer,
		Scheme:                  Scheme(),
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:  cfg.HealthAddr,
		PprofBindAddress:        cfg.PprofAddr,
		LeaderElection:          cfg.LeaderElection && cfg.Role.runs(RoleManager),
		LeaderElectionID:        "switchboard-manager.messaging.switchboard.io",
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		// Stop leading as soon as the process stops, so a new replica takes over without waiting
		// for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr(30 * time.Second),
		Controller:                    config.Controller{SkipNameValidation: ptr(cfg.SkipControllerNameValidation)},
		Cache:                         controller.CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	checks := map[string]healthz.Checker{
		"postgres": func(r *http.Request) error { return cfg.Pool.Ping(r.Context()) },
		"informers": func(r *http.Request) error {
			ctx, cancel := context.WithTimeout(r.Context(), time.Second)
			defer cancel()
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				return errors.New("informer caches not synced")
			}
			return nil
		},
	}
	// Redis is not a readiness check: without it the API still answers, with the spec's 429 and
	// Retry-After: 60, which an unready pod could not.
	for name, check := range checks {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return fmt.Errorf("add readiness check %s: %w", name, err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}

	keys := apikey.NewService(cfg.Pool)
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}

	// Every event goes to the webhooks subscribed to it and to the functions it triggers.
	events := func() *delivery.Service {
		d := delivery.NewService(mgr.GetClient())
		d.Functions = functions.NewSubscribers(mgr.GetClient())
		return d
	}
	functionsAPI := functions.NewService(mgr.GetClient(), mgr.GetAPIReader(), cfg.Pool, keys, cfg.PublicURL)
	resolver := dnsresolve.New(cfg.DNSServer, dnsTimeout)
	verifier := func(fieldManager string) *domainverify.Verifier {
		return &domainverify.Verifier{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), FieldManager: fieldManager,
			Resolver: resolver, Config: cfg.Email, Pool: cfg.Pool, Deliveries: events()}
	}
	// Templates are submitted to WhatsApp through the meta Provider of the sender's channel,
	// which the transport registry resolves (it reads only the informer cache).
	accounts := &registry.Registry{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace,
		AllowProjectEndpoints: cfg.AllowProjectEndpoints}
	reviewer := func(fieldManager string) *templatereview.Reviewer {
		return &templatereview.Reviewer{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), FieldManager: fieldManager,
			Account: accounts, Pool: cfg.Pool, Deliveries: events()}
	}
	// Invitation links carry a token derived from one key every replica shares.
	invitationKey, err := postgres.SharedSecret(ctx, cfg.Pool, invitation.KeyName, invitation.KeySize)
	if err != nil {
		return err
	}
	// Broadcast email's one-click unsubscribe links are signed with another shared key.
	unsubscribeKey, err := postgres.SharedSecret(ctx, cfg.Pool, unsubscribe.KeyName, unsubscribe.KeySize)
	if err != nil {
		return err
	}
	invitations := func(fieldManager string) *invitation.Service {
		return invitation.NewService(mgr.GetClient(), mgr.GetAPIReader(), cfg.Pool, events(),
			invitationKey, cfg.dashboardURL()).WithFieldManager(fieldManager)
	}
	// One view of the Providers' circuit breakers per process: the dispatcher records them, the
	// Provider controller shows them.
	circuits := circuit.New(cfg.Pool, log.WithName("circuit"), ctrlmetrics.Registry)
	if err := mgr.Add(&metrics.Pool{Pool: cfg.Pool, Registry: ctrlmetrics.Registry}); err != nil {
		return fmt.Errorf("add connection pool metrics: %w", err)
	}
	if serveWebhooks {
		if err := admission.Setup(mgr); err != nil {
			return fmt.Errorf("set up admission webhooks: %w", err)
		}
	}
	if cfg.Role.runs(RoleManager) {
		every := cfg.SenderActivityEvery
		if every == 0 {
			every = time.Minute
		}
		// Senders made before numbers' owners were checked keep their numbers (adopted).
		adoptBefore, err := phonenumber.AdoptionCutoff(ctx, cfg.Pool)
		if err != nil {
			return err
		}
		if err := controller.Setup(mgr, controller.Options{Activity: &controller.ActivitySource{Pool: cfg.Pool, Every: every},
			NumberAccounts: accounts, NumberReleases: accounts, AdoptNumbersBefore: adoptBefore,
			ProviderChecks: providercheck.Checks(), InstallationNamespace: cfg.InstallationNamespace,
			AllowProjectProviderEndpoints: cfg.AllowProjectEndpoints, EmailDomains: verifier("switchboard-manager"),
			Templates: reviewer("switchboard-manager"), WhatsApp: accounts, WhatsAppEvery: cfg.WhatsAppStatusEvery,
			Invitations: invitations("switchboard-manager"), InvitationAbandonAfter: cfg.InvitationAbandonAfter,
			Functions: functionsAPI, Circuits: circuits, CircuitEvery: cfg.CircuitStatusEvery}); err != nil {
			return fmt.Errorf("set up controllers: %w", err)
		}
		syncer := &template.Syncer{Service: template.NewService(mgr.GetClient(), mgr.GetAPIReader(), reviewer("switchboard-manager")),
			Every: cfg.TemplateSyncEvery, Log: log.WithName("template-sync")}
		if err := mgr.Add(syncer); err != nil {
			return fmt.Errorf("add template sync: %w", err)
		}
		// The backlog is the installation's, the same read from any process: the leader reports it.
		if err := mgr.Add(&metrics.Backlog{Pool: cfg.Pool, Registry: ctrlmetrics.Registry, Queues: []string{river.QueueDefault},
			Horizon: delivery.ClaimHorizon, Log: log.WithName("metrics")}); err != nil {
			return fmt.Errorf("add backlog metrics: %w", err)
		}
		if err := mgr.Add(&delivery.Disabler{Pool: cfg.Pool, Client: mgr.GetClient(), Events: mgr.GetEventRecorderFor("switchboard-webhooks"),
			Log: log.WithName("webhook-disabler"), After: cfg.WebhookDisableAfter, Every: cfg.WebhookDisableEvery}); err != nil {
			return fmt.Errorf("add webhook disabler: %w", err)
		}
		every = cfg.TenDLCSyncEvery
		if every == 0 {
			every = 15 * time.Second
		}
		registrations := &tendlc.Syncer{Service: tendlc.NewService(cfg.Pool, mgr.GetClient(), accounts, nil), Every: every,
			Log: log.WithName("10dlc-sync")}
		if err := mgr.Add(registrations); err != nil {
			return fmt.Errorf("add 10DLC sync: %w", err)
		}
	}
	if cfg.Role.runs(RoleAPI) || cfg.Role.runs(RoleWorker) {
		// Start the informers the API and the workers read before reporting ready, not on the
		// first request or job.
		for _, obj := range []client.Object{&v1alpha1.Project{}, &v1alpha1.Sender{}, &v1alpha1.Provider{}, &v1alpha1.PhoneNumber{}, &v1alpha1.EmailDomain{},
			&v1alpha1.Template{}, &v1alpha1.PriceList{}, &v1alpha1.RiskPolicy{}, &v1alpha1.Agent{}, &v1alpha1.Function{}, &corev1.Secret{}} {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				return fmt.Errorf("watch %T: %w", obj, err)
			}
		}
		if cfg.Sandbox == (SandboxOptions{}) {
			cfg.Sandbox = DefaultSandbox
		}
		// The workers need the services, and the services the queue: wire the workers in after.
		sbx := &sandbox.Sandbox{DeliverAfter: cfg.Sandbox.DeliverAfter, ReadAfter: cfg.Sandbox.ReadAfter}
		transports := &registry.Registry{Sandbox: sbx, Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace,
			PublicURL: cfg.PublicURL, TelegramAPI: cfg.TelegramAPI, AllowProjectEndpoints: cfg.AllowProjectEndpoints,
			AttachmentHTTP: cfg.Delivery.Client.HTTPClient(attachmentTimeout),
			Circuits:       circuits,
			Prices:         &billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace}}
		dispatch := &message.DispatchWorker{}
		reconcile := &message.ReconcileWorker{Reader: transports, After: cfg.ReconcileSentAfter}
		dispatchMany := &message.DispatchManyWorker{}
		catchUp := &sandbox.CatchUpWorker{Pool: cfg.Pool, Sandbox: sbx}
		broadcastReview := &broadcast.ReviewWorker{}
		agents := &agent.Worker{}
		knowledgeWorker := &knowledge.Worker{}
		erasures := &erasure.Service{Pool: cfg.Pool, Log: log.WithName("erasure")}
		queue, err := worker.NewClient(cfg.Pool, worker.Deps{Keys: keys, Dispatch: dispatch, DispatchMany: dispatchMany, CatchUp: catchUp,
			BroadcastReview: broadcastReview, Agents: agents, Knowledge: knowledgeWorker, Erasures: &erasure.Worker{Service: erasures},
			Reconcile: reconcile},
			worker.Options{Concurrency: cfg.WorkerConcurrency, ReconcileEvery: cfg.ReconcileEvery}, cfg.Role.runs(RoleWorker), log)
		if err != nil {
			return err
		}
		messages := message.NewService(cfg.Pool, mgr.GetClient(), events(), queue, transports, registry.Carries)
		contacts := contact.NewService(cfg.Pool)
		contacts.SetEraser(&erasure.Queue{Service: erasures, Client: queue})
		emailChecks := &emailcheck.Checker{Pool: cfg.Pool, Resolver: resolver}
		messages.SetEmailPreflight(emailChecks)
		messages.SetReceipts(transports)
		messages.SetMediaBase(cfg.PublicURL)
		unsubscribes := unsubscribe.NewService(unsubscribe.NewSigner(unsubscribeKey), cfg.Pool, emailChecks,
			cfg.dashboardURL(), cfg.Email.InboundHost)
		messages.SetUnsubscribe(unsubscribes)
		messages.SetPrices(&billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace})
		messages.SetRiskPolicies(&risk.Policies{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace})
		messages.SetSupportURL(cfg.SupportURL)
		messages.SetInboundHook(&agent.Trigger{Reader: mgr.GetClient()})
		agentRuntime := &agent.Runtime{Pool: cfg.Pool, Reader: mgr.GetClient(), Replies: messages, Models: models.New,
			InstallationNamespace: cfg.InstallationNamespace, AllowProjectEndpoints: cfg.AllowProjectEndpoints,
			Tools: cfg.Delivery.Client.HTTPClient(agent.ToolTimeout), ToolAddresses: cfg.Delivery.Client, Log: log.WithName("agents"),
			Prices:     &billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace},
			Partitions: messages.Partitions()}
		if cfg.Role.runs(RoleWorker) {
			if err := mgr.Add(&agent.Executor{Runtime: agentRuntime, Concurrency: cfg.WorkerConcurrency, Log: log.WithName("agents")}); err != nil {
				return fmt.Errorf("add agent executor: %w", err)
			}
		}
		know := &knowledge.Service{Pool: cfg.Pool, Agents: mgr.GetClient(), Queue: queue, Routes: agentRuntime,
			Fetch: knowledge.NewFetcher(cfg.Delivery.Client.HTTPClient(knowledge.FetchTimeout)), Log: log.WithName("knowledge")}
		know.Index = vectorindex.New(know.LoadVectors, vectorindex.Options{MemoryBudget: cfg.KnowledgeMemory, Metrics: ctrlmetrics.Registry})
		agentRuntime.Knowledge, knowledgeWorker.Service = know, know
		calls := &call.Service{Pool: cfg.Pool, Reader: mgr.GetClient(), Events: events(), Carriers: transports,
			Admit: messages, Speaker: agentRuntime, Minute: cfg.Calls.Minute, TurnTimeout: cfg.Calls.TurnTimeout, Log: log.WithName("calls"),
			Prices: &billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace}}
		calls.Sandbox = &call.Sandbox{Service: calls, Ring: cfg.Calls.SandboxRing, Pause: cfg.Calls.SandboxPause}
		if cfg.Role.runs(RoleWorker) {
			if err := mgr.Add(&call.Sweeper{Service: calls, Every: cfg.Calls.SweepEvery, Quiet: cfg.Calls.Quiet}); err != nil {
				return fmt.Errorf("add call sweeper: %w", err)
			}
		}
		if cfg.Role.runs(RoleWorker) || cfg.Role.runs(RoleAPI) {
			if err := mgr.Add(&knowledge.IndexListener{Service: know}); err != nil {
				return fmt.Errorf("add knowledge index listener: %w", err)
			}
		}
		if cfg.Role.runs(RoleWorker) {
			if err := mgr.Add(&knowledge.Sweeper{Service: know, Live: mgr.GetAPIReader(), Every: cfg.KnowledgeSweepEvery}); err != nil {
				return fmt.Errorf("add knowledge sweeper: %w", err)
			}
		}
		// The project's regulatory records: the API's, bundles' and the upload sweeper's.
		records := &regulatory.Service{Pool: cfg.Pool, Files: cfg.DocumentStore}
		phoneNumbers := &numbers.Service{Shops: transports, Sandbox: numbers.Sandbox{}, Pool: cfg.Pool, Kube: mgr.GetClient(),
			Records: records,
			Reader:  mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace, Month: cfg.Numbers.Month, Log: log.WithName("numbers"),
			Prices: &billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace},
			Money: &billing.Service{Pool: cfg.Pool, Reader: mgr.GetClient(),
				Prices: &billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace}}}
		if cfg.Role.runs(RoleWorker) {
			if err := mgr.Add(&numbers.Renewer{Service: phoneNumbers, Live: mgr.GetAPIReader(), Every: cfg.Numbers.RenewEvery, SettleAfter: cfg.Numbers.SettleAfter,
				Events: mgr.GetEventRecorderFor("switchboard-worker")}); err != nil {
				return fmt.Errorf("add number renewer: %w", err)
			}
			if err := mgr.Add(&regulatory.Sweeper{Service: records, Log: log.WithName("regulatory")}); err != nil {
				return fmt.Errorf("add upload sweeper: %w", err)
			}
		}
		urls := &urlcheck.Service{Pool: cfg.Pool, Lookup: transports, Log: log.WithName("urls"),
			Policies: &risk.Policies{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace}}
		messages.SetURLGate(urls)
		if cfg.Role.runs(RoleWorker) {
			if err := mgr.Add(&urlcheck.Rechecker{Service: urls}); err != nil {
				return fmt.Errorf("add URL rechecker: %w", err)
			}
		}
		registrations := tendlc.NewService(cfg.Pool, mgr.GetClient(), transports, nil)
		messages.SetTenDLC(registrations)
		broadcasts := broadcast.NewService(cfg.Pool, mgr.GetClient(), queue, events(),
			&risk.Policies{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace})
		broadcastReview.Service = broadcasts
		broadcasts.SetTenDLC(registrations)
		broadcasts.SetMoney(&billing.Service{Pool: cfg.Pool, Reader: mgr.GetClient(),
			Prices: &billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace}})
		broadcasts.SetSendPath(messages, transports)
		broadcasts.SetMaxRecipients(cfg.BroadcastMaxRecipients)
		messages.SetBroadcastFollower(broadcasts)
		if cfg.DispatchAttempts > 0 {
			messages.SetDispatchAttempts(cfg.DispatchAttempts)
		}
		dispatch.Service, dispatchMany.Service, reconcile.Service = messages, messages, messages
		invoker, err := functionInvoker(mgr, cfg)
		if err != nil {
			return err
		}
		agentRuntime.Functions = &functions.Tools{Reader: mgr.GetClient(), Invoker: invoker}
		// Every process that writes keeps the coming days' partitions made (docs/data-lifecycle.md).
		if err := mgr.Add(&partition.Keeper{Pool: cfg.Pool, Log: log.WithName("partitions")}); err != nil {
			return fmt.Errorf("add partition keeper: %w", err)
		}
		policy := retentionPolicy(cfg)
		messages.SetRetention(policy)
		if cfg.Role.runs(RoleWorker) {
			if err := mgr.Add(&retention.Pruner{Pool: cfg.Pool, Policy: policy, Every: cfg.RetentionEvery, Log: log.WithName("retention")}); err != nil {
				return fmt.Errorf("add retention pruner: %w", err)
			}
		}
		// The dispatcher's status changes share transactions; the sandbox's steps that fall due
		// together are made together.
		statuses := messages.NewStatusBatcher()
		sbx.AdvanceAll = messages.AdvanceAll
		if cfg.Role.runs(RoleWorker) {
			if err := mgr.Add(&worker.Runner{Client: queue}); err != nil {
				return fmt.Errorf("add worker: %w", err)
			}
			if err := mgr.Add(statuses); err != nil {
				return fmt.Errorf("add status batcher: %w", err)
			}
			if err := mgr.Add(&message.HoldExpirer{Service: messages, Every: cfg.HoldExpiryEvery}); err != nil {
				return fmt.Errorf("add risk hold expirer: %w", err)
			}
			if err := mgr.Add(&broadcast.Fanout{Service: broadcasts, Log: log.WithName("broadcasts"), Chunk: cfg.BroadcastChunk}); err != nil {
				return fmt.Errorf("add broadcast fan-out: %w", err)
			}
			if err := addFunctionWorkers(mgr, cfg, functionsAPI, invoker, log.WithName("functions")); err != nil {
				return err
			}
			deliveryOpts := cfg.Delivery
			deliveryOpts.Log = log.WithName("deliveries")
			deliveryOpts.Metrics = ctrlmetrics.Registry
			if err := mgr.Add(delivery.NewWorker(cfg.Pool, mgr.GetClient(), mgr.GetAPIReader(), deliveryOpts)); err != nil {
				return fmt.Errorf("add delivery worker: %w", err)
			}
		}
		if cfg.Role.runs(RoleAPI) {
			domains := emaildomain.NewService(mgr.GetClient(), mgr.GetAPIReader(), verifier(kubewrite.FieldManager))
			templates := template.NewService(mgr.GetClient(), mgr.GetAPIReader(), reviewer(kubewrite.FieldManager))
			if err := addAPI(ctx, mgr, cfg, keys, queue, messages, contacts, transports, domains, templates, registrations, broadcasts, invitations(kubewrite.FieldManager), invitationKey, unsubscribes, emailChecks, agentRuntime, know, calls, phoneNumbers, urls, resolver, checks,
				functionParts{service: functionsAPI, http: &functions.HTTPHandler{Reader: mgr.GetClient(), Invoker: invoker, Log: log.WithName("functions")},
					pushes: &functions.GitHookHandler{Service: functionsAPI, Log: log.WithName("functions")}}, log); err != nil {
				return err
			}
		}
	}

	log.Info("starting")
	return mgr.Start(ctx)
}

// addAPI adds the API server and what it needs: the key authenticator with its revocation
// listener, the request-rate limiter, the cursor key shared by replicas, and the informers it reads.
func addAPI(ctx context.Context, mgr ctrl.Manager, cfg Config, keys *apikey.Service, queue *river.Client[pgx.Tx],
	messages *message.Service, contacts *contact.Service, transports *registry.Registry, domains *emaildomain.Service, templates *template.Service,
	registrations *tendlc.Service, broadcasts *broadcast.Service, invitations *invitation.Service, invitationKey []byte,
	unsubscribes *unsubscribe.Service, emailChecks *emailcheck.Checker, agentRuntime *agent.Runtime, know *knowledge.Service,
	calls *call.Service, phoneNumbers *numbers.Service, urls *urlcheck.Service, resolver *dnsresolve.Resolver, checks map[string]healthz.Checker,
	fns functionParts, log logr.Logger) error {
	auth := apikey.NewAuthenticator(keys, cfg.Pool, log.WithName("apikeys"))
	if err := mgr.Add(auth); err != nil {
		return fmt.Errorf("add key authenticator: %w", err)
	}
	var limiter ratelimit.Limiter = ratelimit.NewMemory()
	if cfg.Redis != nil {
		limiter = ratelimit.NewRedis(cfg.Redis)
	}
	cursorKey, err := postgres.SharedSecret(ctx, cfg.Pool, "cursor_key", 32)
	if err != nil {
		return err
	}
	pages, err := connectpage.New(connectpage.Options{Invitations: invitations, Reader: mgr.GetClient(), Pool: cfg.Pool,
		SessionKey: invitationKey, BaseURL: cfg.dashboardURL(), Log: log.WithName("connect-page"),
		Connector: &onboarding.Connector{Apps: transports, Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
			Events: mgr.GetEventRecorderFor("switchboard-api")}})
	if err != nil {
		return err
	}
	whatsAppSync := &whatsappsync.Service{Pool: cfg.Pool, Reader: mgr.GetClient(), Starter: transports, Messages: messages}
	senders := sender.NewService(mgr.GetClient(), mgr.GetAPIReader(), transports).WithURLPolicy(cfg.Delivery.Client.URLPolicy()).
		WithProfiles(transports).WithPictures(transports, transports.AttachmentHTTP).WithNumberLookup(transports)
	// Bots attached when webhook secret tokens derived from the bot's id get a random one.
	if err := mgr.Add(&sender.TelegramSecrets{Service: senders, Log: log.WithName("telegram-secrets")}); err != nil {
		return fmt.Errorf("add telegram secrets: %w", err)
	}
	balances := &billing.Service{Pool: cfg.Pool, Reader: mgr.GetClient(),
		Prices: &billing.Prices{Reader: mgr.GetClient(), InstallationNamespace: cfg.InstallationNamespace}}
	phoneNumbers.Senders = senders
	agentsAPI := agent.NewService(mgr.GetClient(), mgr.GetAPIReader(), cfg.Pool, agentRuntime)
	agentsAPI.Knowledge = know
	deliveryLog := delivery.NewLog(cfg.Pool, mgr.GetClient())
	deliveryLog.Retain = time.Duration(retentionPolicy(cfg).WebhookDeliveries) * partition.Day
	consolePages, err := console.New(console.Options{Auth: auth, Pool: cfg.Pool, Reader: mgr.GetClient(), Messages: messages,
		Deliveries: deliveryLog, Broadcasts: broadcasts, Balances: balances, URLs: urls, Secure: console.SecureAt(cfg.dashboardURL()), IdleTimeout: cfg.ConsoleIdleTimeout, Log: log.WithName("console")})
	if err != nil {
		return err
	}
	server, err := httpapi.New(httpapi.Options{
		Auth:            auth,
		Accounts:        account.NewService(mgr.GetClient(), mgr.GetAPIReader(), keys, balances, postgres.Locks{Pool: cfg.Pool}, cfg.MaxSubAccounts),
		Senders:         senders,
		ProjectWebhooks: projectwebhook.NewService(mgr.GetClient(), mgr.GetAPIReader()).WithURLPolicy(cfg.Delivery.Client.URLPolicy()),
		Deliveries:      deliveryLog,
		Console:         consolePages,
		Messages:        messages,
		Contacts:        contacts,
		Phones:          &phonecheck.Service{Reader: mgr.GetClient(), Lookup: transports, TenDLC: registrations},
		Balances:        balances,
		EmailDomains:    domains,
		Templates:       templates,
		TenDLC:          registrations,
		Broadcasts:      broadcasts,
		Agents:          agentsAPI,
		Knowledge:       know,
		Calls:           calls,
		Numbers:         phoneNumbers,
		Regulatory:      &regulatory.Service{Pool: cfg.Pool, Files: cfg.DocumentStore},
		URLs:            urls,
		WhatsAppSync:    whatsAppSync,
		Functions:       fns.service,
		FunctionHTTP:    fns.http,
		FunctionPushes:  fns.pushes,
		PublicURL:       cfg.PublicURL,
		Voices:          cfg.Voices,
		Invitations:     invitations,
		EmailChecks:     emailChecks,
		Disposable:      cfg.Disposable,
		Limiter:         limiter,
		Reader:          mgr.GetClient(),
		Usage:           apikey.NewUsageRecorder(queue, log.WithName("usage")),
		CursorKey:       cursorKey,
		Listener:        cfg.Listener,
		ReadyChecks:     checks,
		Pages:           pages,
		Unsubscribe:     unsubscribe.NewHandler(unsubscribes, log.WithName("unsubscribe")),
		Callbacks: &callback.Handler{Messages: messages, Calls: calls, WhatsAppSync: whatsAppSync, Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), PublicURL: cfg.PublicURL,
			InstallationNamespace: cfg.InstallationNamespace, Bots: transports,
			Templates: templates.Reviewer(), Media: transports,
			Log: log.WithName("callbacks")},
		MaxInFlight: cfg.MaxRequestsInFlight,
		Metrics:     ctrlmetrics.Registry,
		Log:         log.WithName("api"),
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(server); err != nil {
		return fmt.Errorf("add api server: %w", err)
	}
	if cfg.SMTPListener != nil {
		mail, err := mailin.New(mailin.Config{Listener: cfg.SMTPListener, Hostname: cfg.Email.InboundHost,
			MaxMessageBytes: cfg.SMTPMaxMessageBytes, Limits: cfg.SMTPLimits, Resolver: resolver,
			Recipients: &emailin.Router{Reader: mgr.GetClient(), Pool: cfg.Pool, InboundHost: cfg.Email.InboundHost, Unsubscribes: unsubscribes},
			Handler: &emailin.Receiver{Messages: messages, Checks: emailChecks, Pool: cfg.Pool, Unsubscribes: unsubscribes,
				Log: log.WithName("mail")},
			Log: log.WithName("smtp")})
		if err != nil {
			return err
		}
		if err := mgr.Add(mail); err != nil {
			return fmt.Errorf("add smtp listener: %w", err)
		}
	}
	return nil
}

// attachmentTimeout bounds the fetch of one email attachment given by URL (up to 40 MB).
const attachmentTimeout = 2 * time.Minute

// dnsTimeout bounds one DNS question of email checks (each is asked again once).
const dnsTimeout = 3 * time.Second

// dashboardURL is where invitation links point: DashboardURL, else PublicURL, else the API's
// own listener (a local installation).
func (c *Config) dashboardURL() string {
	switch {
	case c.DashboardURL != "":
		return c.DashboardURL
	case c.PublicURL != "":
		return c.PublicURL
	case c.Listener != nil:
		return "http://" + c.Listener.Addr().String()
	}
	return ""
}

// SandboxOptions are the sandbox transport's delays: sent at once, delivered after DeliverAfter,
// read (whatsapp) after ReadAfter more.
// CallOptions tune voice calls; tests shorten them.
type CallOptions struct {
	// Minute is a minute of maxDurationMinutes.
	Minute time.Duration
	// TurnTimeout bounds one answer of the agent.
	TurnTimeout time.Duration
	// SweepEvery is how often calls nobody holds are looked at, Quiet how long a call without a
	// relay may go without news before that.
	SweepEvery, Quiet time.Duration
	// SandboxRing and SandboxPause pace the sandbox's caller.
	SandboxRing, SandboxPause time.Duration
}

// NumberOptions pace bought numbers' money.
type NumberOptions struct {
	// Month is how long a paid month lasts (0: a calendar month).
	Month time.Duration
	// RenewEvery is how often due months are charged (0: a minute).
	RenewEvery time.Duration
	// SettleAfter is how long a purchase Twilio did not answer waits before its account is asked
	// (0: numbers.DefaultSettleAfter).
	SettleAfter time.Duration
}

type SandboxOptions struct {
	DeliverAfter time.Duration
	ReadAfter    time.Duration
}

// DefaultSandbox is how the sandbox paces a message unless told otherwise.
var DefaultSandbox = SandboxOptions{DeliverAfter: 500 * time.Millisecond, ReadAfter: time.Second}

func ptr[T any](v T) *T { return &v }

// retentionPolicy is the configured retention, retention.Default when none is.
func retentionPolicy(cfg Config) retention.Policy {
	if cfg.Retention == (retention.Policy{}) {
		return retention.Default
	}
	return cfg.Retention
}
