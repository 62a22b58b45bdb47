package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-io/switchboard/internal/delivery"
)

// webhookFlags are the flags every webhook command shares.
type webhookFlags struct {
	databaseURL, kubeconfig, project, mode string
	endpoint, sender                       string
}

func (f *webhookFlags) testMode() (bool, error) {
	switch f.mode {
	case "live":
		return false, nil
	case "test":
		return true, nil
	}
	return false, &UsageError{Err: fmt.Errorf("--mode must be live or test, not %q", f.mode)}
}

// endpointOf reads --endpoint and --sender; nil when neither is set and required is false.
func (f *webhookFlags) endpointOf(required bool) (*delivery.Endpoint, error) {
	var ep delivery.Endpoint
	switch {
	case f.endpoint == "" && f.sender != "", f.endpoint == "sender" && f.sender != "":
		ep = delivery.SenderEndpoint(f.sender)
	case f.endpoint == "v2":
		ep = delivery.V2Endpoint
	case f.endpoint == "invitations":
		ep = delivery.InvitationsEndpoint
	case f.endpoint == "" && !required:
		return nil, nil
	default:
		return nil, &UsageError{Err: errors.New("name the webhook: --endpoint v2, --endpoint invitations, or --sender NAME")}
	}
	return &ep, nil
}

func newWebhookCommand(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	f := &webhookFlags{}
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Read the webhook delivery log, replay deliveries, and enable disabled endpoints",
		Long: `Every webhook delivery of a project, its attempts (time, URL, status, latency, the start of
the answer) and each endpoint's health, read from Postgres; replays send a delivery again with
its event id and a fresh signature. An endpoint failing every attempt for 5 days is disabled
(its WebhookEnabled condition) until it is enabled again. See docs/webhooks.md#the-delivery-log.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster config, else $KUBECONFIG, else ~/.kube/config")
	fl.StringVar(&f.project, "project", "", "the project (its namespace); required")
	fl.StringVar(&f.mode, "mode", "live", "the traffic: live, or test (the sandbox's); events of neither mode are shown in both")

	open := func(cmd *cobra.Command) (*delivery.Log, func(), error) {
		if _, err := g.logger(stderr); err != nil {
			return nil, nil, err
		}
		if f.project == "" {
			return nil, nil, &UsageError{Err: errors.New("--project is required")}
		}
		if _, err := f.testMode(); err != nil {
			return nil, nil, err
		}
		k8s, pool, err := operatorClients(cmd.Context(), f.databaseURL, f.kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		return delivery.NewLog(pool, k8s), pool.Close, nil
	}
	endpointFlags := func(c *cobra.Command) {
		c.Flags().StringVar(&f.endpoint, "endpoint", "", "the webhook: v2, invitations, or sender (with --sender)")
		c.Flags().StringVar(&f.sender, "sender", "", "the sender whose webhook it is")
	}
	cmd.AddCommand(newDeliveriesCommand(f, open, endpointFlags, stdout))

	endpoints := &cobra.Command{
		Use:   "endpoints",
		Short: "List the project's webhooks with their health and whether they are enabled",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			all, err := log.Health(cmd.Context(), f.project)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ENDPOINT\tURL\tENABLED\tLAST SUCCESS\tFAILING SINCE\tFAILURES\tSUCCESS 24H")
			for _, h := range all {
				rate := "-"
				if r := h.SuccessRate(); r != nil {
					rate = fmt.Sprintf("%.1f%% of %d", 100**r, h.Attempts)
				}
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%d\t%s\n", h.Endpoint, h.URL, h.Disabled == nil,
					timeOrDash(h.LastSuccessAt), timeOrDash(h.FailingSince), h.ConsecutiveFailures, rate)
			}
			return tw.Flush()
		},
	}
	enable := &cobra.Command{
		Use:   "enable",
		Short: "Enable a disabled webhook again (it replays nothing by itself)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ep, err := f.endpointOf(true)
			if err != nil {
				return err
			}
			log, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			h, err := log.Enable(cmd.Context(), f.project, *ep, "the operator (switchboard webhook enable)")
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "%s of %s is enabled\n", h.Endpoint, f.project)
			return nil
		},
	}
	endpointFlags(enable)
	cmd.AddCommand(endpoints, enable)
	return cmd
}

func newDeliveriesCommand(f *webhookFlags, open func(*cobra.Command) (*delivery.Log, func(), error), endpointFlags func(*cobra.Command),
	stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deliveries",
		Short: "List, show and replay webhook deliveries",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var filter delivery.Filter
	var since, until time.Duration
	list := &cobra.Command{
		Use:   "list",
		Short: "List deliveries, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ep, err := f.endpointOf(false)
			if err != nil {
				return err
			}
			if filter.Limit < 1 || filter.Limit > 1000 {
				return &UsageError{Err: errors.New("--limit must be from 1 to 1000")}
			}
			log, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			testMode, _ := f.testMode()
			filter.Endpoint = ep
			if since > 0 {
				filter.Since = time.Now().Add(-since)
			}
			rows, err := log.List(cmd.Context(), f.project, testMode, filter)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEVENT\tENDPOINT\tSTATUS\tATTEMPTS\tCREATED\tLAST ERROR")
			for _, d := range rows {
				lastErr := ""
				if d.LastError != nil {
					lastErr = *d.LastError
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Event,
					delivery.EndpointOf(d), d.Status, d.Attempts,
					d.CreatedAt.UTC().Format(time.RFC3339), lastErr)
			}
			return tw.Flush()
		},
	}
	endpointFlags(list)
	list.Flags().StringVar(&filter.Status, "status", "", "only deliveries in this state: pending, delivered, failed or cancelled")
	list.Flags().StringVar(&filter.Event, "event", "", "only deliveries of this event, e.g. message.failed")
	list.Flags().StringVar(&filter.MessageID, "message", "", "only the deliveries of this message's events")
	list.Flags().DurationVar(&since, "since", 0, "only deliveries made in this last while, e.g. 6h; default: the whole retention")
	list.Flags().IntVar(&filter.Limit, "limit", 50, "deliveries shown, at most 1000")

	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show a delivery: its event's data and every attempt",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			testMode, _ := f.testMode()
			d, attempts, err := log.Get(cmd.Context(), f.project, testMode, args[0])
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "ID\t%s\nEVENT\t%s\nENDPOINT\t%s\nSTATUS\t%s\nATTEMPTS\t%d (%d replays)\nCREATED\t%s\nFINISHED\t%s\n",
				d.ID, d.Event, delivery.EndpointOf(d), d.Status,
				d.Attempts, d.Replays, d.CreatedAt.UTC().Format(time.RFC3339), timeOrDash(d.FinishedAt))
			if err := tw.Flush(); err != nil {
				return err
			}
			var data bytes.Buffer
			if json.Indent(&data, d.Data, "", "  ") == nil {
				fmt.Fprintf(stdout, "\nDATA\n%s\n", data.String())
			}
			fmt.Fprintln(stdout)
			tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ATTEMPT\tSTARTED\tURL\tSTATUS\tLATENCY\tERROR\tANSWER")
			for _, a := range attempts {
				status, errText, answer := "-", "", ""
				if a.StatusCode != nil {
					status = fmt.Sprint(*a.StatusCode)
				}
				if a.Error != nil {
					errText = *a.Error
				}
				if a.ResponseBody != nil {
					answer = strings.Join(strings.Fields(*a.ResponseBody), " ")
				}
				replay := ""
				if a.Replay {
					replay = " (replay)"
				}
				fmt.Fprintf(tw, "%d%s\t%s\t%s\t%s\t%d ms\t%s\t%s\n", a.Attempt, replay, a.StartedAt.UTC().Format(time.RFC3339), a.Url,
					status, a.LatencyMs, errText, answer)
			}
			return tw.Flush()
		},
	}

	var failed bool
	replay := &cobra.Command{
		Use:   "replay [ID...]",
		Short: "Send deliveries again (by id), or every failed delivery of one webhook in a time range (--failed)",
		Long: `With ids, each delivery is attempted once more at once, with its event id and a fresh signature.
With --failed, every failed delivery of the webhook named by --endpoint or --sender made since
--since (at most 7 days ago) and before --until is. Enabling a disabled webhook replays nothing:
this does.`,
		RunE: func(cmd *cobra.Command, ids []string) error {
			if failed == (len(ids) > 0) {
				return &UsageError{Err: errors.New("give delivery ids, or --failed with --since and the webhook, not both")}
			}
			var ep *delivery.Endpoint
			if failed {
				var err error
				if ep, err = f.endpointOf(true); err != nil {
					return err
				}
				if since <= 0 {
					return &UsageError{Err: errors.New("--failed needs --since, e.g. --since 24h")}
				}
			}
			log, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			testMode, _ := f.testMode()
			if failed {
				var to time.Time
				if until > 0 {
					to = time.Now().Add(-until)
				}
				n, err := log.ReplayFailed(cmd.Context(), f.project, testMode, *ep, time.Now().Add(-since), to)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%d failed deliveries of %s replayed\n", n, ep)
				return nil
			}
			for _, id := range ids {
				if _, err := log.Replay(cmd.Context(), f.project, testMode, id); err != nil {
					return fmt.Errorf("replay %s: %w", id, err)
				}
				fmt.Fprintf(stdout, "%s replayed\n", id)
			}
			return nil
		},
	}
	endpointFlags(replay)
	replay.Flags().BoolVar(&failed, "failed", false, "replay every failed delivery of the webhook in the time range")
	replay.Flags().DurationVar(&since, "since", 0, "with --failed: deliveries made in this last while, e.g. 24h (at most 168h)")
	replay.Flags().DurationVar(&until, "until", 0, "with --failed: only deliveries made before this long ago, e.g. 1h; default: now")
	cmd.AddCommand(list, get, replay)
	return cmd
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
