package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres"
)

// operatorClients are what the operator's commands (balance, review) read and write through:
// the Kubernetes API (Projects, PriceLists, Senders and their Secrets) and Postgres.
func operatorClients(ctx context.Context, databaseURL, kubeconfig string) (client.Client, *pgxpool.Pool, error) {
	if databaseURL == "" {
		return nil, nil, errNoDatabase
	}
	k8s, err := operatorKube(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	pool, err := operatorPool(ctx, databaseURL)
	if err != nil {
		return nil, nil, err
	}
	return k8s, pool, nil
}

// errNoDatabase is the usage error of a command that needs Postgres and was given no URL.
var errNoDatabase = &UsageError{Err: errors.New("--database-url (or DATABASE_URL) is required")}

// operatorPool opens Postgres for a command that needs nothing else (migrate, apikey, contact).
func operatorPool(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	if databaseURL == "" {
		return nil, errNoDatabase
	}
	return postgres.Open(ctx, databaseURL)
}

// operatorKube is the Kubernetes client of the operator's commands.
func operatorKube(kubeconfig string) (client.Client, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to Kubernetes: %w", err)
	}
	return k8s, nil
}

// operatorQueued are the clients of operatorClients and a queue client that only inserts: the
// operator's decisions queue the jobs they start (an approved message's dispatch).
func operatorQueued(ctx context.Context, databaseURL, kubeconfig string) (client.Client, *pgxpool.Pool, *river.Client[pgx.Tx], error) {
	k8s, pool, err := operatorClients(ctx, databaseURL, kubeconfig)
	if err != nil {
		return nil, nil, nil, err
	}
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	return k8s, pool, queue, nil
}

// operatorMessages is the message service the operator's commands decide holds and lift
// suspensions through: the decisions' events go to the senders' webhooks, and an approved
// message's dispatch is queued.
func operatorMessages(ctx context.Context, databaseURL, kubeconfig string) (*message.Service, func(), error) {
	k8s, pool, queue, err := operatorQueued(ctx, databaseURL, kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	return message.NewService(pool, k8s, delivery.NewService(k8s), queue, nil, nil), pool.Close, nil
}

// operatorBroadcasts is the broadcast service the operator's decisions go through: their events
// go to the projects' webhooks.
func operatorBroadcasts(ctx context.Context, databaseURL, kubeconfig string) (*broadcast.Service, func(), error) {
	k8s, pool, queue, err := operatorQueued(ctx, databaseURL, kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	return broadcast.NewService(pool, k8s, queue, delivery.NewService(k8s), nil), pool.Close, nil
}

// decider decides one id; done closes what it opened.
type decider func(id string, approve bool) error

// decisionCommands are an operator command's approve and refuse subcommands (with their short
// help): each opens its decider once, decides the ids it is given in order, says so on stderr,
// and stops at the first that cannot be decided. flags adds their flags.
func decisionCommands(stderr io.Writer, approveShort, refuseShort string, flags func(*cobra.Command),
	open func(cmd *cobra.Command) (decider, func(), error)) []*cobra.Command {
	var out []*cobra.Command
	for _, approve := range []bool{true, false} {
		verb, short := "refuse", refuseShort
		if approve {
			verb, short = "approve", approveShort
		}
		c := &cobra.Command{
			Use:   verb + " ID...",
			Short: short,
			Args:  cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, ids []string) error {
				decide, done, err := open(cmd)
				if err != nil {
					return err
				}
				defer done()
				for _, id := range ids {
					if err := decide(id, approve); err != nil {
						return fmt.Errorf("%s %s: %w", verb, id, err)
					}
					fmt.Fprintf(stderr, "%sd %s\n", verb, id)
				}
				return nil
			},
		}
		flags(c)
		out = append(out, c)
	}
	return out
}
