// Package kubeapply writes the API's resources with server-side apply as one field manager, so
// that kubectl (GitOps) and the REST API meet one object and one validation, and turns the API
// server's refusals into the REST API's 400 with every field.
package kubeapply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// FieldManager names the REST API's writes.
const FieldManager = "switchboard-api"

// Apply server-side applies obj's metadata name, namespace, labels and spec as FieldManager,
// taking over fields another manager set (the API's request is the user's intent). A resource
// version on obj makes it conditional. obj must carry its TypeMeta; it receives what the server
// stored.
func Apply(ctx context.Context, c client.Client, obj client.Object) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": raw["apiVersion"],
		"kind":       raw["kind"],
		"metadata":   map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()},
		"spec":       raw["spec"],
	}}
	if rv := obj.GetResourceVersion(); rv != "" {
		u.SetResourceVersion(rv)
	}
	if l := obj.GetLabels(); len(l) > 0 {
		u.SetLabels(l)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return Error(err, obj.GetName())
	}
	// The server's answer (defaults, resource version, creation time) was decoded into u.
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("decode applied %s: %w", obj.GetName(), err)
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
