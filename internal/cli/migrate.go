package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-logr/logr"
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
			log, err := g.logger(stderr)
			if err != nil {
				return err
			}
			pool, err := operatorPool(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			// The conversion to time partitions logs its steps (minutes on a large table).
			applied, err := postgres.Migrate(logr.NewContext(cmd.Context(), log), pool)
			if err != nil {
				return err
			}
			current, _, err := postgres.SchemaVersion(cmd.Context(), pool)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "schema at version %d (applied now: %d Switchboard, %d job queue migrations)\n",
				current, len(applied.Switchboard), len(applied.River))
			if len(applied.Partitioned) > 0 {
				fmt.Fprintf(stdout, "partitioned by day now: %s\n", strings.Join(applied.Partitioned, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	return cmd
}
