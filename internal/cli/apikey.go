package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

func newAPIKeyCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var databaseURL, project string
	cmd := &cobra.Command{
		Use:   "apikey",
		Short: "Create, list and revoke API keys",
		Long: `Manages the API keys of a project (its namespace). A key is shown once, when it is created;
only its hash is stored. A revoked key is refused by every api replica at once.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	cmd.PersistentFlags().StringVar(&project, "project", "", "the project: its namespace (required)")

	service := func(cmd *cobra.Command) (*apikey.Service, func(), error) {
		if _, err := g.logger(stderr); err != nil {
			return nil, nil, err
		}
		if databaseURL == "" {
			return nil, nil, errNoDatabase
		}
		if project == "" {
			return nil, nil, &UsageError{Err: errors.New("--project is required")}
		}
		pool, err := operatorPool(cmd.Context(), databaseURL)
		if err != nil {
			return nil, nil, err
		}
		return apikey.NewService(pool), pool.Close, nil
	}

	var name, environment string
	var permissions []string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a key and print it (the only time it is shown)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return &UsageError{Err: errors.New("--name is required")}
			}
			if _, err := apikey.ParsePermissions(permissions); err != nil {
				return &UsageError{Err: err}
			}
			env := apikey.Environment(environment)
			if !env.Valid() {
				return &UsageError{Err: fmt.Errorf("--environment must be live or test, not %q", environment)}
			}
			keys, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			secret, k, err := keys.Create(cmd.Context(), project, name, env, permissions)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", secret)
			fmt.Fprintf(stderr, "Created %s (%s, %s) for project %s. Store the key now: it is not shown again.\n",
				k.ID, k.Environment, strings.Join(k.Permissions, ","), project)
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "a name to recognise the key by (required)")
	create.Flags().StringVar(&environment, "environment", "test", "live (real sends, costs money) or test (sandbox)")
	create.Flags().StringSliceVar(&permissions, "permissions", nil,
		"comma-separated permissions: *, messages:send, messages:read, templates:read, templates:write, contacts:read, contacts:write (default *)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the project's keys (never the keys themselves)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			all, err := keys.List(cmd.Context(), project)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPREFIX\tPERMISSIONS\tCREATED\tLAST USED\tREVOKED")
			for _, k := range all {
				fmt.Fprintf(w, "%s\t%s\t%s…\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix,
					strings.Join(k.Permissions, ","), k.CreatedAt.UTC().Format(time.RFC3339), when(k.LastUsedAt), when(k.RevokedAt))
			}
			return w.Flush()
		},
	}

	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke a key: every api replica refuses it at once; it cannot be restored",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &UsageError{Err: errors.New("revoke takes exactly one key id (key_…)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, done, err := service(cmd)
			if err != nil {
				return err
			}
			defer done()
			k, err := keys.Revoke(cmd.Context(), project, args[0])
			if e := apperror.As(err); e != nil {
				return errors.New(e.Message)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "revoked %s at %s\n", k.ID, k.RevokedAt.UTC().Format(time.RFC3339))
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
