package cli

import (
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/controlplane"
	"github.com/switchboard-io/switchboard/internal/devenv"
)

func newDevCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	cfg := devenv.Config{Out: stdout}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything locally: control plane, Postgres, manager+api+worker, seeded",
		Long: `Runs Switchboard on this machine for development and trying it out:

  - a local kube-apiserver and etcd (from --control-plane-assets) with Switchboard's CRDs,
  - Postgres: --database-url when given, else the server on 127.0.0.1:5432 (database
    switchboard_dev), else a throwaway server started with initdb and removed at exit,
  - the manager, api and worker roles in this process,

seeded with namespace and project "default", a default Sender on the sandbox transport, a
test-mode 10DLC brand and approved campaign (so test sends to +1 numbers go), and a test API
key. Once ready it prints the base URL, the key and a curl to try, and writes
<state-dir>/dev.env (SWITCHBOARD_URL, SWITCHBOARD_API_KEY, KUBECONFIG, DATABASE_URL). Ctrl-C stops
everything.

No provider account is needed: test keys send through the sandbox. To deliver for real, create a
live key (switchboard apikey create --environment live), a Provider and a Sender on it in the
"default" namespace (docs/providers.md); providers call back to --public-url.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("log-format") {
				g.logFormat = "console" // a person reads dev's logs
			}
			log, err := g.logger(stderr)
			if err != nil {
				return err
			}
			cfg.Log = log
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return devenv.Run(ctx, cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "address the REST API listens on")
	fl.StringVar(&cfg.StateDir, "state-dir", ".switchboard", "directory for dev.env, the kubeconfig and the dev API key")
	fl.StringVar(&cfg.DatabaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL to use as it is (env DATABASE_URL); empty: see above")
	fl.StringVar(&cfg.AssetsDir, "control-plane-assets", controlplane.AssetsDir(), "directory with kube-apiserver and etcd (env KUBEBUILDER_ASSETS); make envtest-assets provides them")
	fl.StringVar(&cfg.PublicURL, "public-url", "", "the address providers call back (a tunnel to this machine, say); empty: the API's own address")
	fl.StringVar(&cfg.TelegramAPI, "telegram-api-url", "https://api.telegram.org", "the Telegram Bot API's address (a proxy or a local Bot API server)")
	fl.StringVar(&cfg.GitBase, "git-base-url", "https://github.com", "where functions' linked repositories (owner/repo) are cloned from: GitHub, a GitHub Enterprise server or a mirror")
	fl.StringVar(&cfg.NPMRegistry, "npm-registry", "", "the npm registry functions' dependencies are installed from; empty: npm's configured registry")
	fl.IntVar(&cfg.DispatchAttempts, "dispatch-attempts", 8, "calls to a provider for one message before it fails with PROVIDER_UNAVAILABLE")
	fl.StringVar(&cfg.DNSServer, "dns-server", "", "DNS server (host:port) email domain checks and pre-flight ask; empty: /etc/resolv.conf's")
	fl.StringVar(&cfg.EmailInboundHost, "email-inbound-host", "", "host name the MX records of domains that receive mail point at (docs/email.md); empty: no receiving")
	fl.StringVar(&cfg.SMTPListen, "smtp-listen", "", "address of the inbound SMTP listener, e.g. 127.0.0.1:2525 (try it with swaks); empty: none")
	return cmd
}
