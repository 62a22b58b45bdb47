package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/emaildomain"
	"github.com/switchboard-io/switchboard/internal/httpapi"
	"github.com/switchboard-io/switchboard/internal/mailin"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/regulatory"
	"github.com/switchboard-io/switchboard/internal/retention"
)

type roleFlags struct {
	databaseURL       string
	disableAfter      time.Duration
	redisURL          string
	kubeconfig        string
	listen            string
	metricsAddr       string
	pprofAddr         string
	healthAddr        string
	leaderElect       bool
	leaderElectionNS  string
	workerConcurrency int
	knowledgeMemory   string
	broadcastChunk    int
	retention         retention.Policy
	maxRecipients     int
	webhookAllow      []string
	telegramAPI       string
	publicURL         string
	maxInFlight       int
	documentStore     string
	functions         app.FunctionOptions
	installationNS    string
	projectEndpoints  bool
	dispatchAttempts  int
	reconcileAfter    time.Duration
	reconcileEvery    time.Duration
	dnsServer         string
	inboundHost       string
	spfInclude        string
	disposableFile    string
	voicesFile        string
	smtpListen        string
	smtpMaxBytes      int64
	smtpLimits        mailin.Limits
	templateSync      time.Duration
	tenDLCSync        time.Duration
	webhookCertDir    string
	webhookPort       int
	whatsAppStatus    time.Duration
	supportURL        string
	maxSubAccounts    int
	dashboardURL      string
	abandonAfter      time.Duration
}

func newRoleCommand(g *globalFlags, stderr io.Writer, role, short, long string) *cobra.Command {
	f := &roleFlags{}
	cmd := &cobra.Command{
		Use:   role,
		Short: short,
		Long:  long,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger(stderr)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runRole(ctx, app.Role(role), f, log)
		},
	}
	r := app.Role(role)
	fl := cmd.Flags()
	fl.StringVar(&f.databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL, e.g. postgres://user:pass@host:5432/switchboard (env DATABASE_URL)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster config, else $KUBECONFIG, else ~/.kube/config")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":9090", "address of the Prometheus /metrics endpoint; 0 turns it off")
	fl.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz probes; 0 turns it off")
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "address of Go's profiling endpoints (/debug/pprof/), e.g. 127.0.0.1:6060; 0 (the default) turns them off. They show the process's internals: keep them off a public network")
	fl.StringVar(&f.installationNS, "installation-namespace", envOr("POD_NAMESPACE", "switchboard-system"),
		"namespace of the installation: its Providers serve every project (env POD_NAMESPACE)")
	fl.BoolVar(&f.projectEndpoints, "allow-project-provider-endpoints", false,
		"let Providers in projects' namespaces set baseURL (a regional endpoint, a proxy, a local peer); off, only the installation namespace's Providers do, and a project's Provider that sets one is not Ready (EndpointNotAllowed): a tenant's endpoint could answer for the provider, e.g. claim another project's bot. An smtp Provider's relay is always allowed")
	fl.StringVar(&f.dnsServer, "dns-server", envOr("SWITCHBOARD_DNS_SERVER", ""),
		"DNS server (host:port) that email domain checks, email pre-flight and inbound mail checks ask, e.g. 10.96.0.10:53 (env SWITCHBOARD_DNS_SERVER); empty: the resolvers of /etc/resolv.conf")
	fl.StringVar(&f.inboundHost, "email-inbound-host", envOr("SWITCHBOARD_EMAIL_INBOUND_HOST", ""),
		"host name at which this installation receives mail (its SMTP listener's public name), e.g. mx.switchboard.example.com: the MX email domains publish to receive mail and bounces, and the domain of broadcast email's mailto: unsubscribe addresses (env SWITCHBOARD_EMAIL_INBOUND_HOST); empty: no receiving, no enhanced records and no mailto: unsubscribe")
	fl.StringVar(&f.spfInclude, "email-spf-include", envOr("SWITCHBOARD_EMAIL_SPF_INCLUDE", ""),
		"SPF domain of the SMTP relays mail goes out through, e.g. amazonses.com, asked for as include:<it> in each domain's SPF record (env SWITCHBOARD_EMAIL_SPF_INCLUDE); empty: v=spf1 mx ~all")
	if r == app.RoleAPI || r == app.RoleAll {
		fl.StringVar(&f.smtpListen, "smtp-listen", envOr("SWITCHBOARD_SMTP_LISTEN", ""),
			"address the inbound SMTP listener takes mail on, e.g. :2525 (env SWITCHBOARD_SMTP_LISTEN): mail for the domains that receive, bounces and complaints; the MX records point at --email-inbound-host, which must reach it (port 25 outside). Empty: no listener")
		fl.Int64Var(&f.smtpMaxBytes, "smtp-max-message-bytes", 25<<20, "largest inbound mail the SMTP listener takes, in bytes; larger ones are refused with 552")
		fl.IntVar(&f.smtpLimits.MaxConnections, "smtp-max-connections", mailin.DefaultMaxConnections,
			"connections the SMTP listener serves at once; one more is answered 421 and closed, and its server tries later")
		fl.IntVar(&f.smtpLimits.MaxConnectionsPerIP, "smtp-max-connections-per-ip", mailin.DefaultMaxConnectionsPerIP,
			"connections the SMTP listener serves at once from one client address (an IPv4 address, an IPv6 /64); one more is answered 421 and closed")
		fl.DurationVar(&f.smtpLimits.SessionTimeout, "smtp-session-timeout", mailin.DefaultSessionTimeout,
			"longest an SMTP connection lasts, however busy the client keeps it; then it is answered 421 and closed, a message under way dropped for its server to send again")
		fl.Int64Var(&f.smtpLimits.MaxBufferedBytes, "smtp-max-buffered-bytes", mailin.DefaultMaxBufferedBytes,
			"bytes of inbound mail the SMTP listener holds at once, across connections; a message that finds too little room is answered 452, and its server tries later. At least --smtp-max-message-bytes")
		fl.StringVar(&f.voicesFile, "voices-file", "",
			"JSON array of voices ({id, name, language, provider}) that GET /v1/agents/voices lists besides the catalogue Switchboard ships (a voice with a shipped id replaces it): the ConversationRelay voices of your speech providers' accounts")
		fl.StringVar(&f.disposableFile, "email-disposable-domains", "",
			"file of throwaway mail domains, one per line (# comments), that POST /v1/introspect/email flags as disposable_domain besides the list Switchboard ships")
	}
	if r != app.RoleManager {
		fl.StringVar(&f.publicURL, "public-url", envOr("SWITCHBOARD_PUBLIC_URL", ""),
			"the installation's address as providers reach it, e.g. https://switchboard.example.com; their callbacks arrive under /callbacks/ (env SWITCHBOARD_PUBLIC_URL); empty: no delivery receipts or inbound messages from providers")
	}
	if r != app.RoleManager {
		fl.StringVar(&f.documentStore, "document-store", envOr("SWITCHBOARD_DOCUMENT_STORE", ""),
			"where regulatory documents' files are kept: empty keeps them in Postgres; s3://bucket/prefix?endpoint=host:port&region=r keeps them in an S3-compatible bucket (&insecure=true for plain HTTP), with the credentials of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (env SWITCHBOARD_DOCUMENT_STORE)")
		fl.StringVar(&f.functions.Runtime, "function-runtime", envOr("SWITCHBOARD_FUNCTION_RUNTIME", app.RuntimeLocal),
			"where projects' functions run: local (a warm node process per deployment on this machine, the development runtime: Node's permission model is not a boundary against hostile code; see docs/functions.md) or kubernetes (each function in pods of its own in its project's namespace, behind a Service, a NetworkPolicy and an autoscaler; the pods fetch bundles from the API) (env SWITCHBOARD_FUNCTION_RUNTIME)")
		fl.StringVar(&f.functions.Image, "function-image", envOr("SWITCHBOARD_FUNCTION_IMAGE", ""),
			"the runner image of the kubernetes function runtime (Dockerfile.function-runner); empty: ghcr.io/switchboard-io/function-runner tagged with this build's version (env SWITCHBOARD_FUNCTION_IMAGE)")
		fl.StringVar(&f.functions.Node, "node", "",
			"the node command the local function runtime starts (Node.js 20 or later); empty: node from PATH")
		fl.StringVar(&f.functions.Dir, "function-dir", "",
			"where the local function runtime unpacks deployments; empty: a temporary folder removed at exit")
		fl.StringVar(&f.functions.NPM, "npm", "",
			"the npm command function builds install dependencies with; empty: npm from PATH")
		fl.StringVar(&f.functions.Registry, "npm-registry", envOr("SWITCHBOARD_NPM_REGISTRY", ""),
			"the npm registry functions' dependencies are installed from, e.g. a mirror https://npm.example.com/; empty: npm's configured registry (env SWITCHBOARD_NPM_REGISTRY)")
		fl.StringVar(&f.functions.NPMCache, "npm-cache", "",
			"npm's cache for function builds, kept between builds; empty: switchboard/npm under the user's cache folder")
		fl.StringVar(&f.functions.GitBase, "git-base-url", envOr("SWITCHBOARD_GIT_BASE_URL", "https://github.com"),
			"where functions' linked repositories (owner/repo) are cloned from over HTTPS: GitHub, or a GitHub Enterprise server or mirror (env SWITCHBOARD_GIT_BASE_URL)")
		fl.StringVar(&f.telegramAPI, "telegram-api-url", "https://api.telegram.org",
			"the Telegram Bot API's address (a proxy or a local Bot API server), for bots whose Provider names none")
	}
	if r == app.RoleAPI || r == app.RoleAll {
		fl.StringVar(&f.supportURL, "support-url", envOr("SWITCHBOARD_SUPPORT_URL", ""),
			"where a project whose sending risk review suspended is sent to have it lifted (403 sending_suspended's details.dashboardUrl), e.g. https://example.com/support (env SWITCHBOARD_SUPPORT_URL)")
		fl.IntVar(&f.maxSubAccounts, "max-sub-accounts", 1000,
			"how many sub-accounts (active or deactivated: each keeps its namespace) a project may create through POST /v1/sub-accounts; a Project's spec.maxSubAccounts overrides it for that project")
		fl.StringVar(&f.dashboardURL, "dashboard-url", envOr("SWITCHBOARD_DASHBOARD_URL", ""),
			"where invitation links point, e.g. https://connect.example.com (env SWITCHBOARD_DASHBOARD_URL): the connection page clients open, served by the api role under /invitations/; empty: --public-url, else the API's own address")
		fl.StringVar(&f.listen, "listen", ":8080", "address the REST API listens on")
		fl.IntVar(&f.maxInFlight, "max-requests-in-flight", httpapi.DefaultMaxInFlight,
			"API requests this process works on at once; one more waits up to half a second for one to end (as many wait at most; past that one is refused at once), then is answered 503 with Retry-After: 1, which clients retry, so an overload costs refusals rather than memory. 0: no bound")
		fl.IntVar(&f.maxRecipients, "broadcast-max-recipients", broadcast.DefaultMaxRecipients,
			"recipients one broadcast (v2 campaign) may have: adding more is refused with 400 and adds nothing; its estimate, storage and send grow with them")
		fl.StringVar(&f.redisURL, "redis-url", envOr("REDIS_URL", ""), "Redis URL shared by api replicas, e.g. redis://redis:6379/0 (env REDIS_URL); empty keeps state in memory, for one replica")
	}
	if r == app.RoleManager || r == app.RoleAll {
		fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect one active manager among replicas through a Lease")
		fl.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader-election Lease; default: the pod's namespace")
		fl.DurationVar(&f.templateSync, "template-sync-interval", time.Hour,
			"how often the WhatsApp business accounts of every project are read to apply template verdicts and categories a webhook did not bring (templates are not imported: POST /v1/templates/sync does that)")
		fl.StringVar(&f.webhookCertDir, "webhook-cert-dir", "",
			"directory with the admission webhooks' serving certificate (tls.crt, tls.key; reloaded when they change); empty: no admission webhooks are served (the Helm chart mounts one)")
		fl.IntVar(&f.webhookPort, "webhook-port", 9443, "port the admission webhooks are served on, with --webhook-cert-dir")
		fl.DurationVar(&f.tenDLCSync, "ten-dlc-sync-interval", 15*time.Second,
			"how often pending 10DLC brands and campaigns are looked at for their registrar's verdict (a live one is asked at most every 5 minutes; POST /v1/10dlc/.../sync asks at once)")
		fl.DurationVar(&f.abandonAfter, "invitation-abandon-after", time.Hour,
			"how long a client may take to connect once started before the invitation fails with signup_abandoned (the page reports a closed dialog at once)")
		fl.DurationVar(&f.disableAfter, "webhook-disable-after", delivery.DefaultDisableAfter,
			"how long a webhook endpoint may fail every attempt (no 2xx answer) before it is disabled: its WebhookEnabled condition turns False, its deliveries fail without an attempt until it is enabled again (API, CLI, or a change of its spec), and they can be replayed; 0 never disables")
		fl.DurationVar(&f.whatsAppStatus, "whatsapp-status-interval", time.Hour,
			"how often each WhatsApp sender's number, quality rating and payment status are read from the Graph API into its status (Sender.whatsapp.paymentStatus)")
	}
	if r != app.RoleManager {
		fl.IntVar(&f.retention.Messages, "retain-messages-days", retention.Default.Messages,
			fmt.Sprintf("days a message (its row, text, files and metadata) is kept, %d to %d; older ones answer 404 and their days' partitions are dropped by the workers, with those of its files, of broadcast recipients (counted from their broadcast, kept while it runs) and of risk holds and refusals (docs/data-lifecycle.md). Set the same on every process", retention.MinDays, retention.MaxMessageDays))
		fl.IntVar(&f.retention.WebhookDeliveries, "retain-webhook-deliveries-days", retention.Default.WebhookDeliveries,
			fmt.Sprintf("days a webhook delivery and its attempts' log are kept, %d to %d", retention.MinDays, retention.MaxWebhookDeliveryDays))
		fl.IntVar(&f.retention.WebhookAttempts, "retain-webhook-attempts-days", 0,
			fmt.Sprintf("days the log of webhook attempts (each one's URL, status, latency and answer) is kept, %d to the deliveries' days; 0 keeps it as long as the deliveries", retention.MinDays))
		fl.IntVar(&f.retention.IdempotencyKeys, "retain-idempotency-keys-days", retention.Default.IdempotencyKeys,
			fmt.Sprintf("days a send's idempotency key answers a repeat with the first message, %d to %d; after that the key may be used again", retention.MinDays, retention.MaxIdempotencyKeyDays))
		fl.StringVar(&f.knowledgeMemory, "knowledge-memory", "256Mi",
			"memory for agents' knowledge vectors held in this process (a Kubernetes quantity, e.g. 512Mi); past it the least recently used agents' indexes are dropped and loaded again from Postgres when next asked")
	}
	if r == app.RoleWorker || r == app.RoleAll {
		fl.IntVar(&f.workerConcurrency, "worker-concurrency", 50,
			"jobs one worker process works at once, and as many agent executions (a queue of their own)")
		fl.IntVar(&f.broadcastChunk, "broadcast-chunk", 500,
			"recipients of a broadcast handed to the send path in one transaction: larger chunks accept a broadcast faster, smaller ones hold its rows for less time")
		fl.IntVar(&f.dispatchAttempts, "dispatch-attempts", 8,
			"calls to a provider for one message, backing off from 1 s to 1 min while it answers 429 or 5xx or cannot be reached; then the message fails with PROVIDER_UNAVAILABLE")
		fl.DurationVar(&f.reconcileAfter, "reconcile-sent-after", message.DefaultReconcileAfter,
			"how long a live message may stay sent without its provider's status callback before the provider is asked for its status (Twilio's Message resource), then again an hour and a day later")
		fl.DurationVar(&f.reconcileEvery, "reconcile-every", message.ReconcileEvery,
			fmt.Sprintf("how often messages left sent are looked for; each run asks the providers about at most %d of them", message.ReconcileBatch))
		fl.StringSliceVar(&f.webhookAllow, "webhook-allow-cidr", nil,
			"address ranges webhook deliveries may reach although private, loopback or link-local (refused by default), e.g. 10.20.0.0/16")
	}
	return cmd
}

func runRole(ctx context.Context, role app.Role, f *roleFlags, log logr.Logger) error {
	if f.databaseURL == "" {
		return &UsageError{Err: errors.New("--database-url (or DATABASE_URL) is required")}
	}
	if f.dispatchAttempts < 0 {
		return &UsageError{Err: errors.New("--dispatch-attempts must be positive")}
	}
	if f.disableAfter < 0 {
		return &UsageError{Err: errors.New("--webhook-disable-after must be positive, or 0 to never disable")}
	}
	if f.disableAfter == 0 {
		f.disableAfter = -1 // never
	}
	if f.reconcileAfter < 0 || f.reconcileEvery < 0 {
		return &UsageError{Err: errors.New("--reconcile-sent-after and --reconcile-every must be positive")}
	}
	if f.smtpMaxBytes < 0 {
		return &UsageError{Err: errors.New("--smtp-max-message-bytes must be positive")}
	}
	if l := f.smtpLimits; l.MaxConnections < 0 || l.MaxConnectionsPerIP < 0 || l.SessionTimeout < 0 || l.MaxBufferedBytes < 0 {
		return &UsageError{Err: errors.New("--smtp-max-connections, --smtp-max-connections-per-ip, --smtp-session-timeout and --smtp-max-buffered-bytes must be positive")}
	}
	if f.smtpListen != "" && f.smtpLimits.MaxBufferedBytes > 0 && f.smtpLimits.MaxBufferedBytes < f.smtpMaxBytes {
		return &UsageError{Err: errors.New("--smtp-max-buffered-bytes must be at least --smtp-max-message-bytes: the largest mail could never be taken")}
	}
	if f.templateSync < 0 || f.whatsAppStatus < 0 || f.tenDLCSync < 0 || f.abandonAfter < 0 {
		return &UsageError{Err: errors.New("--template-sync-interval, --ten-dlc-sync-interval, --whatsapp-status-interval and --invitation-abandon-after must be positive")}
	}
	var knowledgeMemory int64
	if f.knowledgeMemory != "" {
		q, err := resource.ParseQuantity(f.knowledgeMemory)
		if err != nil || q.Sign() <= 0 {
			return &UsageError{Err: fmt.Errorf("--knowledge-memory %q is not a positive quantity such as 256Mi", f.knowledgeMemory)}
		}
		knowledgeMemory = q.Value()
	}
	if role != app.RoleManager {
		if err := f.retention.Validate(); err != nil {
			return &UsageError{Err: err}
		}
	}
	if f.workerConcurrency < 0 {
		return &UsageError{Err: errors.New("--worker-concurrency must be positive")}
	}
	if f.maxInFlight < 0 {
		return &UsageError{Err: errors.New("--max-requests-in-flight must be positive, or 0 for no bound")}
	}
	if f.broadcastChunk < 0 || f.broadcastChunk > 5000 {
		return &UsageError{Err: errors.New("--broadcast-chunk must be between 1 and 5000")}
	}
	if f.maxRecipients < 0 {
		return &UsageError{Err: errors.New("--broadcast-max-recipients must be positive")}
	}
	for flag, v := range map[string]string{"--public-url": f.publicURL, "--dashboard-url": f.dashboardURL} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return &UsageError{Err: fmt.Errorf("%s %q is not an absolute http(s) URL", flag, v)}
		}
	}
	if f.inboundHost != "" {
		if _, err := emaildomain.Normalize(f.inboundHost); err != nil {
			return &UsageError{Err: fmt.Errorf("--email-inbound-host %q: %w", f.inboundHost, err)}
		}
	}
	if f.dnsServer != "" {
		if _, _, err := net.SplitHostPort(f.dnsServer); err != nil {
			if net.ParseIP(f.dnsServer) == nil {
				return &UsageError{Err: fmt.Errorf("--dns-server %q is not host:port", f.dnsServer)}
			}
		}
	}
	voices, err := agent.LoadVoicebook(f.voicesFile)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--voices-file: %w", err)}
	}
	disposable := emailcheck.ShippedDisposable()
	if f.disposableFile != "" {
		file, err := os.Open(f.disposableFile)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--email-disposable-domains: %w", err)}
		}
		err = disposable.Add(file)
		file.Close()
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--email-disposable-domains %s: %w", f.disposableFile, err)}
		}
	}
	var allow []netip.Prefix
	for _, c := range f.webhookAllow {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--webhook-allow-cidr %q is not a CIDR range", c)}
		}
		allow = append(allow, p)
	}
	// The flags are valid: the process is going to run.
	setSoftMemoryLimit(log, containerMemoryLimit)
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	var listener, smtpListener net.Listener
	if f.listen != "" {
		if listener, err = listen(f.listen); err != nil {
			return err
		}
		defer listener.Close()
	}
	if f.smtpListen != "" {
		if smtpListener, err = listen(f.smtpListen); err != nil {
			return err
		}
		defer smtpListener.Close()
	}
	var documents regulatory.Store
	if f.documentStore != "" {
		store, err := regulatory.OpenS3(f.documentStore)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--document-store: %w", err)}
		}
		documents = store
	}
	var rdb *redis.Client
	if f.redisURL != "" {
		opts, err := redis.ParseURL(f.redisURL)
		if err != nil {
			return &UsageError{Err: errors.New("--redis-url is not a valid redis:// URL")}
		}
		redis.SetLogger(redisLog{log.WithName("redis")})
		rdb = redis.NewClient(opts)
		defer rdb.Close()
	}
	pool, err := postgres.Open(ctx, f.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := app.CheckSchema(ctx, pool); err != nil {
		return err
	}
	return app.Run(ctx, app.Config{
		Role:                    role,
		RestConfig:              cfg,
		Pool:                    pool,
		Redis:                   rdb,
		Listener:                listener,
		MetricsAddr:             f.metricsAddr,
		PprofAddr:               f.pprofAddr,
		HealthAddr:              f.healthAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionNamespace: f.leaderElectionNS,
		WorkerConcurrency:       f.workerConcurrency,
		MaxRequestsInFlight:     inFlightBound(f.maxInFlight),
		KnowledgeMemory:         knowledgeMemory,
		BroadcastChunk:          f.broadcastChunk,
		Retention:               f.retention,
		BroadcastMaxRecipients:  f.maxRecipients,
		Delivery:                delivery.WorkerOptions{Client: delivery.ClientOptions{Allow: allow}},
		TelegramAPI:             f.telegramAPI,
		PublicURL:               f.publicURL,
		DocumentStore:           documents,
		Functions:               f.functions,
		DispatchAttempts:        f.dispatchAttempts,
		ReconcileSentAfter:      f.reconcileAfter,
		ReconcileEvery:          f.reconcileEvery,
		InstallationNamespace:   f.installationNS,
		AllowProjectEndpoints:   f.projectEndpoints,
		DNSServer:               f.dnsServer,
		Email:                   domainverify.Config{InboundHost: f.inboundHost, SPFInclude: f.spfInclude},
		Disposable:              disposable,
		Voices:                  voices,
		SMTPListener:            smtpListener,
		SMTPMaxMessageBytes:     f.smtpMaxBytes,
		SMTPLimits:              f.smtpLimits,
		TemplateSyncEvery:       f.templateSync,
		TenDLCSyncEvery:         f.tenDLCSync,
		WebhookCertDir:          f.webhookCertDir,
		WebhookPort:             f.webhookPort,
		WhatsAppStatusEvery:     f.whatsAppStatus,
		SupportURL:              f.supportURL,
		MaxSubAccounts:          f.maxSubAccounts,
		DashboardURL:            f.dashboardURL,
		InvitationAbandonAfter:  f.abandonAfter,
		WebhookDisableAfter:     f.disableAfter,
		Log:                     log,
	})
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find the Kubernetes API: %w; pass --kubeconfig or set KUBECONFIG", err)
	}
	return cfg, nil
}

func listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("listen on %s: address already in use; stop what uses it or pass --listen with another address", addr)
		}
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return l, nil
}

// redisLog sends the Redis client's own messages (connection trouble) to the process log.
type redisLog struct{ log logr.Logger }

func (r redisLog) Printf(_ context.Context, format string, v ...any) {
	r.log.Info(fmt.Sprintf(format, v...))
}

// inFlightBound is --max-requests-in-flight as the API takes it: 0 there is no bound.
func inFlightBound(flag int) int {
	if flag == 0 {
		return -1
	}
	return flag
}
