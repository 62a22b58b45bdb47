package dnsresolve

import (
	"context"
	"errors"
	"fmt"
	"net"
)

var (
	// ErrNotFound: the name does not exist (NXDOMAIN) or has no record of the type asked
	// (NOERROR with no answer): the domain's owner has not published it.
	ErrNotFound = errors.New("no such record")
	// ErrUnavailable: the lookup could not run — a timeout, SERVFAIL, REFUSED, a network error
	// or no server to ask — so nothing is known about the record; a later try may succeed.
	ErrUnavailable = errors.New("dns lookup unavailable")
	// ErrInvalidName: the name cannot be looked up as given (not ASCII, or not a domain name).
	ErrInvalidName = errors.New("invalid domain name")
)

// Every lookup error is a *net.DNSError, unwrapped, because the mail-authentication libraries
// (blitiri.com.ar/go/spf, go-msgauth's dkim and dmarc) classify errors with type assertions on
// it: IsNotFound makes a missing record "none" rather than an error, Temporary makes a failed
// lookup a temporary failure. Its UnwrapErr carries one of the sentinels above, and the cause.

// IsNotFound reports whether err says the record does not exist: NXDOMAIN or NODATA.
func IsNotFound(err error) bool {
	if errors.Is(err, ErrNotFound) {
		return true
	}
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// IsUnavailable reports whether err says the lookup could not run (timeout, SERVFAIL, REFUSED,
// network error), so that the record's existence is unknown.
func IsUnavailable(err error) bool {
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var de *net.DNSError
	return errors.As(err, &de) && (de.IsTimeout || de.IsTemporary)
}

// notFound is the error for a name without the record asked; what says which, for people.
func notFound(name, server, what string) error {
	return &net.DNSError{Err: what, Name: name, Server: server, IsNotFound: true, UnwrapErr: ErrNotFound}
}

// unavailable is the error for a lookup that could not run because of cause.
func unavailable(name, server string, cause error) error {
	return &net.DNSError{
		Err:         cause.Error(),
		Name:        name,
		Server:      server,
		IsTimeout:   isTimeout(cause),
		IsTemporary: true,
		UnwrapErr:   fmt.Errorf("%w: %w", ErrUnavailable, cause),
	}
}

// invalidName is the error for a name that is not looked up at all.
func invalidName(name, why string) error {
	return &net.DNSError{Err: why, Name: name, UnwrapErr: ErrInvalidName}
}

// isTimeout reports whether err is a deadline passing, the network's or the context's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
