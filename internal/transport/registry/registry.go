// Package registry picks the transport of each message (message.Transports): the sandbox for
// every test key; for live keys, the sandbox when the sender simulates (spec.transport
// sandbox), else the transport of the Provider the sender's channel uses.
package registry

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/sandbox"
)

// Errors a message fails with when nothing can carry it (docs/transports.md).
const (
	ErrSenderGone       = "SENDER_NOT_FOUND"
	ErrNoProvider       = "PROVIDER_NOT_CONFIGURED"
	ErrProviderNotReady = "PROVIDER_NOT_READY"
)

// Registry picks transports.
type Registry struct {
	Sandbox *sandbox.Sandbox
	// Reader reads Senders, Providers and their Secrets (the informer cache).
	Reader client.Reader
}

// Route implements message.Transports.
func (r *Registry) Route(ctx context.Context, m db.Message) (message.Route, error) {
	if m.TestMode {
		return message.Route{Transport: r.Sandbox}, nil
	}
	var snd v1alpha1.Sender
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: m.Project, Name: m.Sender}, &snd)
	if apierrors.IsNotFound(err) {
		return message.Route{}, &transport.Failure{Code: ErrSenderGone,
			Message: fmt.Sprintf("Sender %s was deleted before the message was sent.", m.Sender)}
	}
	if err != nil {
		return message.Route{}, fmt.Errorf("read sender %s: %w", m.Sender, err)
	}
	if snd.Spec.Transport == v1alpha1.TransportSandbox || snd.Spec.Transport == "" {
		return message.Route{Transport: r.Sandbox}, nil
	}
	return message.Route{}, &transport.Failure{Code: ErrNoProvider,
		Message: fmt.Sprintf("No Provider serves %s for sender %s.", m.Channel, m.Sender)}
}
