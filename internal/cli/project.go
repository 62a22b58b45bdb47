package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newProjectCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var databaseURL, kubeconfig, project, by string
	cmd := &cobra.Command{
		Use:   "project",
		Short: "Operator actions on a project",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	unsuspend := &cobra.Command{
		Use:   "unsuspend",
		Short: "Lift the suspension of a project's sending that repeated risk refusals caused",
		Long: `Repeated risk review refusals suspend a project's sending (403 sending_suspended; its queued
messages fail with SENDING_SUSPENDED). Once the cause is dealt with, this lets it send again,
on live and test keys alike. See docs/risk.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := g.logger(stderr); err != nil {
				return err
			}
			if project == "" {
				return &UsageError{Err: errors.New("--project is required")}
			}
			s, done, err := operatorMessages(cmd.Context(), databaseURL, kubeconfig)
			if err != nil {
				return err
			}
			defer done()
			n, err := s.LiftSuspension(cmd.Context(), project, by)
			if err != nil {
				return err
			}
			if n == 0 {
				fmt.Fprintf(stderr, "%s was not suspended.\n", project)
				return nil
			}
			fmt.Fprintf(stdout, "lifted %d suspension(s) of %s\n", n, project)
			return nil
		},
	}
	fl := unsuspend.Flags()
	fl.StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster config, else $KUBECONFIG, else ~/.kube/config")
	fl.StringVar(&project, "project", "", "the project: its namespace (required)")
	fl.StringVar(&by, "by", "operator", "who lifts it, kept with the suspension")
	cmd.AddCommand(unsuspend)
	return cmd
}
