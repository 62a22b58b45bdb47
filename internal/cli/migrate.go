package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/postgres"
)

func newMigrateCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring the Postgres schema up to date (Switchboard's and the job queue's)",
		Long: `Applies the schema migrations embedded in this binary, and the job queue's own, in one step.
Safe to run again and from several places at once: a lock serialises concurrent runs. The api
and worker roles refuse to start on an older schema.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := g.logger(stderr); err != nil {
				return err
			}
			if databaseURL == "" {
				return &UsageError{Err: errors.New("--database-url (or DATABASE_URL) is required")}
			}
			pool, err := postgres.Open(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			applied, err := postgres.Migrate(cmd.Context(), pool)
			if err != nil {
				return err
			}
			current, _, err := postgres.SchemaVersion(cmd.Context(), pool)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "schema at version %d (applied now: %d Switchboard, %d job queue migrations)\n",
				current, len(applied.Switchboard), len(applied.River))
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	return cmd
}
