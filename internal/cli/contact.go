package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/erasure"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

func newContactCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "contact",
		Short: "Act on a project's contacts as the operator",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var databaseURL, project, contactID, mode string
	var addresses []string
	erase := &cobra.Command{
		Use:   "erase",
		Short: "Erase a person from a project: addresses, names and message content, everywhere",
		Long: `Erases a person from a project's data, as a request under a data protection law asks: their
contacts, conversations, the text, content and attachments of every message to or from them, their
addresses in messages, calls, webhook deliveries, function runs and broadcasts, and what agents kept
of their conversations. Opt-outs and email suppressions are kept as a keyed hash, so the person
stays opted out. Ledger entries keep their amounts. The work goes in batches, and a run that is
stopped is resumed by running the command again with the erasure's id (--resume).

The person is a contact (--contact, its channels' addresses) and/or addresses (--address, any
number). The command prints the erasure's id and what it removed or redacted, per table; the audit
record it leaves (table erasures) names no personal data. docs/data-lifecycle.md has the details.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger(stderr)
			if err != nil {
				return err
			}
			resume, _ := cmd.Flags().GetString("resume")
			if resume == "" && project == "" {
				return &UsageError{Err: errors.New("--project is required")}
			}
			if resume == "" && contactID == "" && len(addresses) == 0 {
				return &UsageError{Err: errors.New("name the person: --contact, --address, or both")}
			}
			var testMode *bool
			switch mode {
			case "both":
			case "live", "test":
				v := mode == "test"
				testMode = &v
			default:
				return &UsageError{Err: fmt.Errorf("--mode must be both, live or test, not %q", mode)}
			}
			pool, err := operatorPool(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			s := &erasure.Service{Pool: pool, Log: log}
			id := resume
			if id == "" {
				err = pgx.BeginFunc(cmd.Context(), pool, func(tx pgx.Tx) error {
					id, err = s.Start(cmd.Context(), tx, erasure.Request{Project: project, TestMode: testMode, ContactID: contactID,
						Addresses: addresses, RequestedBy: "operator"})
					return err
				})
				if errors.Is(err, erasure.ErrNothing) {
					return &UsageError{Err: err}
				}
				if err != nil {
					return err
				}
			}
			fmt.Fprintf(stdout, "erasure %s\n", id)
			if err := s.Run(cmd.Context(), id); err != nil {
				return fmt.Errorf("%w (run again with --resume %s)", err, id)
			}
			e, err := db.Planned(pool).GetErasure(cmd.Context(), id)
			if err != nil {
				return err
			}
			var counts map[string]int64
			if err := json.Unmarshal(e.Counts, &counts); err != nil {
				return err
			}
			for _, what := range slices.Sorted(maps.Keys(counts)) {
				fmt.Fprintf(stdout, "%s\t%d\n", what, counts[what])
			}
			return nil
		},
	}
	fl := erase.Flags()
	fl.StringVar(&databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fl.StringVar(&project, "project", "", "the project: its namespace (required, unless --resume)")
	fl.StringVar(&contactID, "contact", "", "a contact id (ct_…): the person's addresses are its channels'")
	fl.StringSliceVar(&addresses, "address", nil, "an address of the person: a phone number in E.164, an email address, a chat id (repeat or comma-separate)")
	fl.StringVar(&mode, "mode", "both", "whose data: both (test and live), live or test")
	fl.String("resume", "", "the id of an erasure a stopped run left unfinished, to finish it")
	cmd.AddCommand(erase)
	return cmd
}
