package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
)

func newBalanceCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var databaseURL, kubeconfig, project, installationNS string
	cmd := &cobra.Command{
		Use:   "balance",
		Short: "Show and credit a project's prepaid balance",
		Long: `The prepaid balance a project's live SMS and voice messages are paid from, and that email
needs above zero (docs/limits.md). Amounts are US dollars. The project's Project and PriceList
are read from Kubernetes (its opening credit), the balance from Postgres.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster config, else $KUBECONFIG, else ~/.kube/config")
	fl.StringVar(&project, "project", "", "the project: its namespace (required)")
	fl.StringVar(&installationNS, "installation-namespace", envOr("POD_NAMESPACE", "switchboard-system"),
		"namespace of the installation, whose PriceList prices projects that have none of their own")

	service := func(cmd *cobra.Command) (*billing.Service, func(), error) {
		if _, err := g.logger(stderr); err != nil {
			return nil, nil, err
		}
		if project == "" {
			return nil, nil, &UsageError{Err: errors.New("--project is required")}
		}
		k8s, pool, err := operatorClients(cmd.Context(), databaseURL, kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		return &billing.Service{Pool: pool, Reader: k8s, Prices: &billing.Prices{Reader: k8s, InstallationNamespace: installationNS}}, pool.Close, nil
	}

	show := &cobra.Command{
		Use:   "show",
		Short: "Print the balance, what was spent and the credit limit",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			v, err := s.Balance(cmd.Context(), project)
			if err != nil {
				return err
			}
			limit := "none"
			if v.CreditLimit != nil {
				limit = billing.FromCents(*v.CreditLimit).String() + " USD"
			}
			fmt.Fprintf(stdout, "balance\t%s USD\nspent\t%s USD\ncredit limit\t%s\n", v.Balance, v.TotalSpent, limit)
			return nil
		},
	}

	var amount, note string
	credit := &cobra.Command{
		Use:   "credit",
		Short: "Add money to the balance (a top-up) and print the new balance",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := billing.ParseUSD(v1alpha1.USDAmount(amount))
			if err != nil || m <= 0 {
				return &UsageError{Err: fmt.Errorf("--amount must be a positive amount of dollars such as 25.00, not %q", amount)}
			}
			s, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			balance, err := s.Credit(cmd.Context(), project, m, note)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s USD\n", balance)
			fmt.Fprintf(stderr, "Credited %s USD to %s.\n", m, project)
			return nil
		},
	}
	credit.Flags().StringVar(&amount, "amount", "", "dollars to add, e.g. 25.00 (required, positive)")
	credit.Flags().StringVar(&note, "note", "", "a note kept with the ledger entry (an invoice number)")
	cmd.AddCommand(show, credit)
	return cmd
}
