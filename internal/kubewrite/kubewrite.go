// Package kubewrite writes the REST API's changes to resources as one field manager,
// "switchboard-api", and turns the API server's refusals into the REST API's 400 with every field.
//
// Writes are full updates conditional on the resource version that was read (an optimistic
// lock), not server-side apply: the REST API must be able to clear a flag, blank a field or drop
// a connected account that kubectl (another manager) set, and apply cannot remove a field
// another manager owns. The field manager still records what the API changed, so a later
// `kubectl apply` of a field the API changed meets the usual apply conflict instead of silently
// undoing the API's change.
package kubewrite

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// FieldManager names the REST API's writes.
const FieldManager = "switchboard-api"

// Write creates obj when it has no resource version, else updates it conditionally on it. obj
// receives what the server stored. It returns once c's reads (the informer cache this process
// serves requests from) show the write too, or after cacheWait: the API answers a change only
// when the next request to this process acts on it (a send right after PUT /v2/webhook is
// delivered to the new webhook).
func Write(ctx context.Context, c client.Client, obj client.Object) error {
	var err error
	if obj.GetResourceVersion() == "" {
		err = c.Create(ctx, obj, client.FieldOwner(FieldManager))
	} else {
		err = c.Update(ctx, obj, client.FieldOwner(FieldManager))
	}
	if err != nil {
		return Error(err, obj.GetName())
	}
	waitCached(ctx, c, obj)
	return nil
}

// cacheWait bounds how long a write waits for the cache; watch events arrive within
// milliseconds, so only an API server in trouble makes it last.
const cacheWait = 3 * time.Second

// waitCached waits until c reads obj at the generation written or a later one (a status written
// meanwhile by a controller changes the resource version, not the generation).
func waitCached(ctx context.Context, c client.Reader, obj client.Object) {
	ctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	seen, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(obj)
	for {
		if err := c.Get(ctx, key, seen); err == nil && seen.GetUID() == obj.GetUID() && seen.GetGeneration() >= obj.GetGeneration() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Error turns the API server's refusal of a write (schema, CEL rules) into 400 invalid_request
// listing every field it named; a conflict stays a conflict, for the caller to retry.
func Error(err error, name string) error {
	var status apierrors.APIStatus
	if apierrors.IsInvalid(err) && errors.As(err, &status) && status.Status().Details != nil {
		var fields []apperror.FieldError
		for _, c := range status.Status().Details.Causes {
			fields = append(fields, apperror.FieldError{Path: c.Field, Message: c.Message})
		}
		if len(fields) > 0 {
			return apperror.InvalidFields(fields...)
		}
	}
	if apierrors.IsConflict(err) {
		return err
	}
	return fmt.Errorf("write %s: %w", name, err)
}

// WaitGone waits until c's reads (the informer cache) no longer show obj, or cacheWait: a
// deleted resource is not found by the next request to this process.
func WaitGone(ctx context.Context, c client.Reader, obj client.Object) {
	ctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	seen, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return
	}
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), seen)
		if apierrors.IsNotFound(err) || (err == nil && seen.GetUID() != obj.GetUID()) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}
