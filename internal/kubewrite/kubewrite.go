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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// FieldManager names the REST API's writes.
const FieldManager = "switchboard-api"

// Write creates obj when it has no resource version, else updates it conditionally on it. obj
// receives what the server stored.
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
	return nil
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
