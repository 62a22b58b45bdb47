package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/message"
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
	return cmd
}
