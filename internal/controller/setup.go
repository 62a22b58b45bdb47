package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// SetupAll registers every reconciler with the manager. The field indexes (index.Register) must
// be registered first. activity, when not nil, adds Postgres figures to Sender status.
func SetupAll(mgr ctrl.Manager, activity *ActivitySource) error {
	if err := (&ProjectReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&SenderReconciler{Client: mgr.GetClient(), Activity: activity}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&WebhookReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}

// CacheOptions limits what the informer cache holds: of all Secrets, only the webhook secrets.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.SecretLabel: "true"})},
	}}
}
