package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres"
)

// operatorClients are what the operator's commands (balance, review) read and write through:
// the Kubernetes API (Projects, PriceLists, Senders and their Secrets) and Postgres.
func operatorClients(ctx context.Context, databaseURL, kubeconfig string) (client.Client, *pgxpool.Pool, error) {
	if databaseURL == "" {
		return nil, nil, &UsageError{Err: errors.New("--database-url (or DATABASE_URL) is required")}
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to Kubernetes: %w", err)
	}
	pool, err := postgres.Open(ctx, databaseURL)
	if err != nil {
		return nil, nil, err
	}
	return k8s, pool, nil
}

// operatorMessages is the message service the operator's commands decide holds and lift
// suspensions through: the decisions' events go to the senders' webhooks, and an approved
// message's dispatch is queued.
func operatorMessages(ctx context.Context, databaseURL, kubeconfig string) (*message.Service, func(), error) {
	k8s, pool, err := operatorClients(ctx, databaseURL, kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{}) // inserts only
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return message.NewService(pool, k8s, delivery.NewService(k8s), queue, nil, nil), pool.Close, nil
}
