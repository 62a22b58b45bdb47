// Package cli is the `switchboard` command: one binary with a command per role (manager, api,
// worker, all, dev) plus migrate and version.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// UsageError is a mistake in the command line: the caller prints usage and exits with 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Execute runs the command line args and returns the process exit code.
func Execute(args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var usage *UsageError
	if errors.As(err, &usage) || isCobraUsageError(err) {
		fmt.Fprintf(stderr, "Error: %v\n\n%s", err, cmd.UsageString())
		return 2
	}
	fmt.Fprintf(stderr, "switchboard: %v\n", err)
	return 1
}

// isCobraUsageError recognises the command-line errors cobra itself raises.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

type globalFlags struct {
	logFormat string
	logLevel  string
}

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "switchboard",
		Short: "Switchboard: a Kubernetes-native multi-channel messaging platform",
		Long: `Switchboard serves one REST API to send and receive SMS, WhatsApp, Telegram, email, Instagram,
Messenger and voice messages, with senders, webhooks, email domains, templates and invitations
declared as Kubernetes resources and high-volume data in Postgres.

One binary runs every part. In a cluster, run the roles separately (manager once, api and worker
as many as you need) or together with "all". On a laptop, "dev" runs everything with a local
control plane and Postgres.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "json", "log format: json (one object a line) or console (human-readable)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: info, or debug for detail")
	root.CompletionOptions.DisableDefaultCmd = true

	root.AddCommand(
		newRoleCommand(g, stderr, "manager", "Run the controllers of Switchboard's custom resources (leader-elected)",
			`Runs the controllers that reconcile Projects and Senders. Run one replica, or several with leader
election on (the default): one leads, the others wait.`),
		newRoleCommand(g, stderr, "api", "Serve the REST API (/v1, /v2) and health endpoints",
			`Serves the REST API on --listen. Stateless: run as many replicas as you need behind a Service.`),
		newRoleCommand(g, stderr, "worker", "Work the job queue (dispatch, webhook delivery, broadcasts, scheduled jobs)",
			`Works the Postgres job queue. Run as many replicas as you need; no job is worked twice.`),
		newRoleCommand(g, stderr, "all", "Run manager, api and worker in one process",
			`Runs the manager, api and worker roles in one process: the small installation profile.`),
		newDevCommand(g, stdout, stderr),
		newMigrateCommand(g, stdout, stderr),
		newAPIKeyCommand(g, stdout, stderr),
		newBalanceCommand(g, stdout, stderr),
		newReviewCommand(g, stdout, stderr),
		newInvitationCommand(g, stdout, stderr),
		newBroadcastCommand(g, stdout, stderr),
		newProjectCommand(g, stdout, stderr),
		newContactCommand(g, stdout, stderr),
		newWebhookCommand(g, stdout, stderr),
		newConsoleCommand(g, stdout, stderr),
		newVersionCommand(stdout),
	)
	return root
}

// noArgs refuses positional arguments as a usage error: an unknown role lands here.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return &UsageError{Err: fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
		}
		return &UsageError{Err: fmt.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

// logger builds the process logger from the global flags and installs it for controller-runtime.
func (g *globalFlags) logger(stderr io.Writer) (logr.Logger, error) {
	var level zapcore.Level
	switch g.logLevel {
	case "info":
		level = zapcore.InfoLevel
	case "debug":
		level = zapcore.DebugLevel
	default:
		return logr.Logger{}, &UsageError{Err: fmt.Errorf("--log-level must be info or debug, not %q", g.logLevel)}
	}
	opts := []crzap.Opts{crzap.WriteTo(stderr), crzap.Level(level)}
	switch g.logFormat {
	case "json":
		opts = append(opts, crzap.UseDevMode(false), crzap.JSONEncoder())
	case "console":
		opts = append(opts, crzap.UseDevMode(false), crzap.ConsoleEncoder())
	default:
		return logr.Logger{}, &UsageError{Err: fmt.Errorf("--log-format must be json or console, not %q", g.logFormat)}
	}
	log := crzap.New(opts...)
	ctrl.SetLogger(log)
	return log, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
