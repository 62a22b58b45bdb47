package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/console"
)

func newConsoleCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Sign in to the operator console",
		Long: `The console (/console on the api role) shows messages, webhook deliveries, the review queue,
broadcasts, usage and senders. Projects sign in with an API key; an installation operator signs
in with a one-time link that sees every project, and whose every decision is audited. See
docs/console.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var databaseURL, baseURL, operator string
	var ttl time.Duration
	login := &cobra.Command{
		Use:   "login",
		Short: "Print a one-time sign-in link for an installation operator",
		Long: fmt.Sprintf(`Prints a link that signs its opener in to the console as an installation operator, once,
within --ttl (default %s). Keep it to yourself: whoever opens it first sees every project.`, console.LinkTTL),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := g.logger(stderr); err != nil {
				return err
			}
			if ttl <= 0 || ttl > 24*time.Hour {
				return &UsageError{Err: fmt.Errorf("--ttl must be from 1s to 24h")}
			}
			pool, err := operatorPool(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			link, err := console.Login(cmd.Context(), pool, baseURL, operator, ttl)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, link)
			return nil
		},
	}
	fl := login.Flags()
	fl.StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fl.StringVar(&baseURL, "url", envOr("SWITCHBOARD_CONSOLE_URL", "http://localhost:8080"),
		"the address people reach the api role at, e.g. https://switchboard.example.com (env SWITCHBOARD_CONSOLE_URL)")
	fl.StringVar(&operator, "operator", envOr("USER", "operator"), "who signs in, as the audit records it")
	fl.DurationVar(&ttl, "ttl", console.LinkTTL, "how long the link works, at most 24h")
	cmd.AddCommand(login)
	return cmd
}
