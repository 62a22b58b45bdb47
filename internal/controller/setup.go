package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"
)

// SetupAll registers every reconciler with the manager. The field indexes (index.Register) must
// be registered first.
func SetupAll(mgr ctrl.Manager) error {
	if err := (&ProjectReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&SenderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}
