// Package controller holds the reconcilers of Switchboard's custom resources. Each reconciler
// fetches its object, runs its steps in order, computes Ready with a pure function, and patches the
// status once, only when it changed.
package controller
