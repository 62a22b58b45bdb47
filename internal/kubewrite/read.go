package kubewrite

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Object is a pointer to a resource type T.
type Object[T any] interface {
	*T
	client.Object
}

// Read reads the resource id of project as the REST API shows it: one being deleted is gone
// already; a missing one is a 404 saying "No <what> <id>.".
func Read[T any, P Object[T]](ctx context.Context, r client.Reader, project, id, what string) (P, error) {
	obj := P(new(T))
	err := r.Get(ctx, client.ObjectKey{Namespace: project, Name: id}, obj)
	if apierrors.IsNotFound(err) || (err == nil && !obj.GetDeletionTimestamp().IsZero()) {
		return nil, apperror.NotFoundf("No %s %s.", what, id)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, id, err)
	}
	return obj, nil
}

// Live drops the resources being deleted and sorts the rest as the REST API lists them:
// oldest first, then by name.
func Live[T any, P Object[T]](items []T) []T {
	out := items[:0]
	for i := range items {
		if P(&items[i]).GetDeletionTimestamp().IsZero() {
			out = append(out, items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := P(&out[i]), P(&out[j])
		ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return a.GetName() < b.GetName()
	})
	return out
}

// Retry runs step on obj, and when another writer (a controller) changed obj meanwhile, reads
// it again through live and runs step once more, as a conflict asks.
func Retry[T any, P Object[T]](ctx context.Context, live client.Reader, obj P, step func(P) error) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := live.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
		}
		first = false
		return step(obj)
	})
}

// ProjectOf reads the Project of a namespace through r (the informer cache); nil when the
// namespace has none (yet).
func ProjectOf(ctx context.Context, r client.Reader, namespace string) (*v1alpha1.Project, error) {
	var list v1alpha1.ProjectList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("read project %s: %w", namespace, err)
	}
	return v1alpha1.NamespaceProject(list.Items), nil
}
