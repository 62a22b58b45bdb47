package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/postgres"
)

func newInvitationCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var databaseURL, kubeconfig, project, dashboardURL string
	cmd := &cobra.Command{
		Use:   "invitation",
		Short: "Operator actions on a project's invitations",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	resend := &cobra.Command{
		Use:   "resend NAME",
		Short: "Resend an invitation: back to pending, with a new expiry",
		Long: `Sets the Invitation's spec.resendRequestedAt to now; the manager moves it back to pending with
a new expiry (expiresInDays from now), and announces the change with invitation.status_changed.
The link stays the same. See docs/invitations.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.logger(stderr); err != nil {
				return err
			}
			if project == "" {
				return &UsageError{Err: errors.New("--project is required")}
			}
			k8s, err := operatorKube(kubeconfig)
			if err != nil {
				return err
			}
			now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var inv v1alpha1.Invitation
				if err := k8s.Get(cmd.Context(), client.ObjectKey{Namespace: project, Name: args[0]}, &inv); err != nil {
					return err
				}
				inv.Spec.ResendRequestedAt = &now
				return k8s.Update(cmd.Context(), &inv)
			})
			if err != nil {
				return fmt.Errorf("resend invitation %s of %s: %w", args[0], project, err)
			}
			fmt.Fprintf(stdout, "invitation %s of %s: resend requested at %s\n", args[0], project, now.Format(time.RFC3339))
			return nil
		},
	}
	link := &cobra.Command{
		Use:   "link NAME",
		Short: "Print an invitation's link (for one applied with kubectl)",
		Long: `Prints the link to share with the client: --dashboard-url, /invitations/ and the invitation's
token, which is derived from a key kept in Postgres and never stored on the resource.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.logger(stderr); err != nil {
				return err
			}
			if project == "" || dashboardURL == "" {
				return &UsageError{Err: errors.New("--project and --dashboard-url are required")}
			}
			k8s, pool, err := operatorClients(cmd.Context(), databaseURL, kubeconfig)
			if err != nil {
				return err
			}
			defer pool.Close()
			var inv v1alpha1.Invitation
			if err := k8s.Get(cmd.Context(), client.ObjectKey{Namespace: project, Name: args[0]}, &inv); err != nil {
				return fmt.Errorf("read invitation %s of %s: %w", args[0], project, err)
			}
			key, err := postgres.SharedSecret(cmd.Context(), pool, invitation.KeyName, invitation.KeySize)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, invitation.NewService(nil, nil, nil, nil, key, dashboardURL).URL(&inv))
			return nil
		},
	}
	link.Flags().StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	for _, c := range []*cobra.Command{resend, link} {
		fl := c.Flags()
		fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster config, else $KUBECONFIG, else ~/.kube/config")
		fl.StringVar(&project, "project", "", "the project: its namespace (required)")
		cmd.AddCommand(c)
	}
	link.Flags().StringVar(&dashboardURL, "dashboard-url", envOr("SWITCHBOARD_DASHBOARD_URL", ""),
		"where invitation links point, as the api role's --dashboard-url (env SWITCHBOARD_DASHBOARD_URL)")
	return cmd
}
