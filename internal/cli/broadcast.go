package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/broadcast"
)

func newBroadcastCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var databaseURL, kubeconfig, project string
	cmd := &cobra.Command{
		Use:   "broadcast",
		Short: "List and decide the broadcasts waiting for an operator",
		Long: `A broadcast sent for review waits for an operator when its project's RiskPolicy holds it, or
when its owner escalated a rejection. Approving it lets it go (at its scheduledAt when that is
ahead); refusing rejects a held one and finally rejects (rejected_final) an escalated one.
approved and rejected raise broadcast.status_changed; rejected_final, which the spec does not
announce, raises none. See docs/broadcasts.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster config, else $KUBECONFIG, else ~/.kube/config")

	service := func(cmd *cobra.Command) (*broadcast.Service, func(), error) {
		if _, err := g.logger(stderr); err != nil {
			return nil, nil, err
		}
		return operatorBroadcasts(cmd.Context(), databaseURL, kubeconfig)
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List the broadcasts held by review or escalated, longest waiting first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			waiting, err := s.Awaiting(cmd.Context(), project, 1000)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BROADCAST\tNAME\tSTATUS\tCHANNEL\tRECIPIENTS\tSINCE")
			for _, b := range waiting {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", b.ID, b.Name, b.Status, b.Channel, b.TotalContacts, b.UpdatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&project, "project", "", "only this project's broadcasts (its namespace)")

	var by, reason string
	cmd.AddCommand(list)
	cmd.AddCommand(decisionCommands(stderr, "Approve broadcasts (by id): they go",
		"Refuse broadcasts (by id): a held one is rejected, an escalated one rejected for good",
		func(c *cobra.Command) {
			c.Flags().StringVar(&by, "by", "operator", "who decides, kept in the broadcast's reviewResult")
			c.Flags().StringVar(&reason, "reason", "", "why, shown to the broadcast's owner in reviewResult.reasoning")
		},
		func(cmd *cobra.Command) (decider, func(), error) {
			s, done, err := service(cmd)
			if err != nil {
				return nil, nil, err
			}
			return func(id string, approve bool) error { return s.Decide(cmd.Context(), id, approve, by, reason) }, done, nil
		})...)
	return cmd
}
