package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
)

func newReviewCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var databaseURL, kubeconfig, project string
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List and decide the messages risk review holds",
		Long: `Messages a RiskPolicy rule holds stay queued (riskHold) until an operator approves them (they
are sent) or refuses them (they fail with RISK_REJECTED and their charge returns), or their
review window closes (RISK_REVIEW_EXPIRED). See docs/risk.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster config, else $KUBECONFIG, else ~/.kube/config")

	service := func(cmd *cobra.Command) (*message.Service, func(), error) {
		if _, err := g.logger(stderr); err != nil {
			return nil, nil, err
		}
		return operatorMessages(cmd.Context(), databaseURL, kubeconfig)
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List the held messages, oldest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			holds, err := s.OpenHolds(cmd.Context(), project, 1000)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MESSAGE\tPROJECT\tMODE\tRULE\tHELD\tEXPIRES\tREASON")
			for _, h := range holds {
				mode := "live"
				if h.TestMode {
					mode = "test"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.MessageID, h.Project, mode, h.Rule,
					h.HeldAt.UTC().Format(time.RFC3339), h.ExpiresAt.UTC().Format(time.RFC3339), h.Reason)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&project, "project", "", "only this project's holds (its namespace)")

	var by string
	cmd.AddCommand(list)
	cmd.AddCommand(decisionCommands(stderr, "Approve held messages (by id): they are sent",
		"Refuse held messages (by id): they fail with RISK_REJECTED and their charge returns",
		func(c *cobra.Command) {
			c.Flags().StringVar(&by, "by", "operator", "who decides, kept with the decision")
		},
		func(cmd *cobra.Command) (decider, func(), error) {
			s, done, err := service(cmd)
			if err != nil {
				return nil, nil, err
			}
			return func(id string, approve bool) error { return s.DecideHold(cmd.Context(), id, approve, by) }, done, nil
		})...)
	cmd.AddCommand(newURLReviewCommand(g, &databaseURL, &kubeconfig, stdout, stderr))
	return cmd
}

// newURLReviewCommand is `switchboard review urls`: the URLs projects escalated, and the
// operator's verdicts on them (docs/urls.md).
func newURLReviewCommand(g *globalFlags, databaseURL, kubeconfig *string, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "urls",
		Short: "List and decide the URLs projects escalated",
		Long: `A rejected URL a project escalates (POST /v1/urls/{id}/escalate) waits for an operator:
approve it (its messages held for it are sent) or refuse it (they fail with URL_REJECTED). A
URL still pending (its threat lookup failed) may be decided too. See docs/urls.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	service := func(cmd *cobra.Command) (*urlcheck.Service, func(), error) {
		if _, err := g.logger(stderr); err != nil {
			return nil, nil, err
		}
		_, pool, _, err := operatorQueued(cmd.Context(), *databaseURL, *kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		return &urlcheck.Service{Pool: pool}, pool.Close, nil
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the escalated URLs, oldest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			rows, err := s.Escalated(cmd.Context(), 1000)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "URL ID\tPROJECT\tURL\tREJECTED FOR\tESCALATED FOR")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Project, r.Url, deref(r.Reason), deref(r.EscalationReason))
			}
			return tw.Flush()
		},
	}
	var by, reason string
	cmd.AddCommand(list)
	cmd.AddCommand(decisionCommands(stderr, "Approve URLs (by id): their held messages are sent",
		"Refuse URLs (by id): their held messages fail with URL_REJECTED",
		func(c *cobra.Command) {
			c.Flags().StringVar(&by, "by", "operator", "who decides, kept with the decision")
			c.Flags().StringVar(&reason, "reason", "", "why a URL is refused (shown to the project)")
		},
		func(cmd *cobra.Command) (decider, func(), error) {
			s, done, err := service(cmd)
			if err != nil {
				return nil, nil, err
			}
			return func(id string, approve bool) error {
				_, err := s.Review(cmd.Context(), id, approve, by, reason)
				return err
			}, done, nil
		})...)
	return cmd
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
