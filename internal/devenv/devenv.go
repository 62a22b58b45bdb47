// Package devenv runs `switchboard dev`: a local control plane, a local Postgres, and the `all`
// role on them, seeded with the default project, a default sandbox Sender and a test key.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/console"
	"github.com/switchboard-io/switchboard/internal/controlplane"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/localpg"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/tendlc"
)

// Config of a dev run.
type Config struct {
	// Listen is the API's address.
	Listen string
	// StateDir holds dev.env, the kubeconfig and the dev key.
	StateDir string
	// DatabaseURL, when set, is used as it is; otherwise see localpg.
	DatabaseURL string
	// AssetsDir holds kube-apiserver and etcd.
	AssetsDir string
	// PublicURL is where providers call back; empty is the API's own address, which providers
	// on this machine (local peers, a tunnel) reach.
	PublicURL string
	// TelegramAPI is the Bot API's address; empty is Telegram's own.
	TelegramAPI string
	// GitBase is where functions' linked repositories are cloned from ("": GitHub); NPMRegistry
	// the registry their dependencies come from ("": npm's configured one).
	GitBase, NPMRegistry string
	// DispatchAttempts bounds the calls to a provider for one message (0: the default).
	DispatchAttempts int
	// DNSServer is the DNS email checks ask (host:port); empty: /etc/resolv.conf's.
	DNSServer string
	// EmailInboundHost is the host name MX records name for receiving; empty: no receiving.
	EmailInboundHost string
	// SMTPListen is the inbound SMTP listener's address; empty: none.
	SMTPListen string
	// Out receives the banner once everything is ready.
	Out io.Writer
	Log logr.Logger
}

// devDatabase is the database dev uses on a shared server (127.0.0.1:5432), kept between runs.
const devDatabase = "switchboard_dev"

// Run starts everything, prints how to reach it, and stops everything when ctx ends. Whatever it
// started is stopped again when a later step fails.
func Run(ctx context.Context, cfg Config) (err error) {
	log := cfg.Log
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	// Cheap checks first, so a taken port or a missing binary fails before anything starts.
	listener, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen on %s: address already in use; stop what uses it or pass --listen with another address", cfg.Listen)
		}
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	cleanups = append(cleanups, func() { _ = listener.Close() })
	var smtpListener net.Listener
	if cfg.SMTPListen != "" {
		if smtpListener, err = net.Listen("tcp", cfg.SMTPListen); err != nil {
			return fmt.Errorf("listen for mail on %s: %w", cfg.SMTPListen, err)
		}
		cleanups = append(cleanups, func() { _ = smtpListener.Close() })
	}
	if err := controlplane.CheckAssets(cfg.AssetsDir); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	envFile := filepath.Join(cfg.StateDir, "dev.env")
	// A dev.env from an earlier run would tell scripts we are up before we are.
	_ = os.Remove(envFile)

	log.Info("starting Postgres")
	pg, err := localpg.Start(ctx, log, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, pg.Stop)
	dbURL := pg.AdminURL
	if cfg.DatabaseURL == "" {
		name := devDatabase
		if pg.Throwaway {
			name = "switchboard"
		}
		if dbURL, err = localpg.EnsureDatabase(ctx, pg.AdminURL, name); err != nil {
			return err
		}
	}
	pool, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, pool.Close)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		return err
	}

	log.Info("starting the local control plane", "assets", cfg.AssetsDir)
	cp, err := controlplane.Start(cfg.AssetsDir)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() {
		if err := cp.Stop(); err != nil {
			log.Error(err, "stop control plane")
		}
	})
	kubeconfig, _ := filepath.Abs(filepath.Join(cfg.StateDir, "kubeconfig"))
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	k8s, err := client.New(cp.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return fmt.Errorf("connect to the local control plane: %w", err)
	}
	if err := seedResources(ctx, k8s); err != nil {
		return err
	}
	key, err := seedKey(ctx, apikey.NewService(pool), filepath.Join(cfg.StateDir, "api-key"))
	if err != nil {
		return err
	}
	// The sandbox's +1 numbers need an approved 10DLC campaign in test mode, as every +1 SMS does.
	if err := tendlc.SeedApproved(ctx, pool, DefaultNamespace, true); err != nil {
		return fmt.Errorf("seed the default project's test-mode 10DLC campaign: %w", err)
	}

	url := "http://" + displayAddr(listener.Addr())
	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = url
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, app.Config{
			Role:              app.RoleAll,
			RestConfig:        cp.Config,
			Pool:              pool,
			Listener:          listener,
			MetricsAddr:       "0",
			HealthAddr:        "0",
			LeaderElection:    false,
			WorkerConcurrency: 10,
			PublicURL:         publicURL,
			TelegramAPI:       cfg.TelegramAPI,
			Functions:         app.FunctionOptions{GitBase: cfg.GitBase, Registry: cfg.NPMRegistry},
			DispatchAttempts:  cfg.DispatchAttempts,
			DNSServer:         cfg.DNSServer,
			Email:             domainverify.Config{InboundHost: cfg.EmailInboundHost},
			SMTPListener:      smtpListener,
			// Providers of the whole installation sit beside the default project.
			InstallationNamespace: DefaultNamespace,
			// A developer's receiver runs on this machine, often on plain http.
			Delivery: delivery.WorkerOptions{Client: delivery.ClientOptions{
				AllowHTTPLoopback: true,
				Allow:             []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
			}},
			Log: log,
		})
	}()
	// Stop the role before the control plane and Postgres go away under it.
	cleanups = append(cleanups, func() { stop(); <-done })

	if err := waitReady(ctx, k8s, done); err != nil {
		return err
	}

	// The console signs in with the key, or once with this operator's link (a day to open it).
	consoleLink, err := console.Login(ctx, pool, url, "dev", 24*time.Hour)
	if err != nil {
		return err
	}
	// DATABASE_URL lets the documented CLI (switchboard apikey create …) work against this system.
	env := fmt.Sprintf("SWITCHBOARD_URL=%s\nSWITCHBOARD_API_KEY=%s\nKUBECONFIG=%s\nDATABASE_URL=%s\nSWITCHBOARD_CONSOLE_URL=%s\n",
		url, key, kubeconfig, dbURL, url+console.Path)
	if err := writeFileAtomic(envFile, []byte(env), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", envFile, err)
	}
	cleanups = append(cleanups, func() { _ = os.Remove(envFile) })
	printBanner(cfg.Out, url, key, consoleLink, kubeconfig, cfg.AssetsDir, envFile)

	select {
	case <-ctx.Done():
		log.Info("stopping")
		return nil
	case err := <-done:
		// The role stopped by itself: report why, after the deferred cleanups.
		done <- err
		if err == nil {
			err = errors.New("switchboard stopped unexpectedly")
		}
		return err
	}
}

// waitReady waits until the seeded Sender is Ready, which means the controllers run, or until the
// role fails.
func waitReady(ctx context.Context, k8s client.Client, done chan error) error {
	deadline := time.After(2 * time.Minute)
	for {
		var s v1alpha1.Sender
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: DefaultNamespace, Name: DefaultSender}, &s); err == nil && s.IsReady() {
			return nil
		}
		select {
		case err := <-done:
			done <- err
			if err == nil {
				err = errors.New("switchboard stopped before it was ready")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return errors.New("the default Sender did not become Ready within 2 minutes")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func printBanner(w io.Writer, url, key, consoleLink, kubeconfig, assets, envFile string) {
	kubectl := "kubectl"
	if _, err := os.Stat(filepath.Join(assets, "kubectl")); err == nil {
		kubectl = filepath.Join(assets, "kubectl")
	}
	fmt.Fprintf(w, `
Switchboard is running.

  Base URL   %s
  API key    %s   (test mode: sends go to the sandbox)
  Console    %s%s   (sign in with the API key)
             %s   (once, as the installation's operator)

  Try it:
    curl -H "Authorization: Bearer %s" %s/v1/me
    curl -H "Authorization: Bearer %s" -H "Content-Type: application/json" \
         -d '{"to":"+15005550100","text":"Hello from Switchboard"}' %s/v1/messages

  The control plane:
    KUBECONFIG=%s %s get senders -n default

  These settings are in %s. Press Ctrl-C to stop everything.

`, url, key, url, console.Path, consoleLink, key, url, key, url, kubeconfig, kubectl, envFile)
}

// displayAddr turns a wildcard listen address into one a client can dial.
func displayAddr(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func trimLine(b []byte) string { return strings.TrimSpace(string(b)) }
