// Package apperror is the one error type the domain services return to say what went wrong in
// the API's terms: a kind that decides the HTTP status, the spec's error code, a message safe to
// show the caller, and optional details.
package apperror

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an error; the HTTP renderer maps each kind to one status.
type Kind int

const (
	// Internal is any error that is not the caller's: it is logged, and the caller sees a generic message.
	Internal Kind = iota
	Invalid
	Unauthorized
	Forbidden
	NotFound
	MethodNotAllowed
	Conflict
	TooLarge
	RateLimited
	Unavailable
	// PaymentRequired: the project's balance cannot pay (402).
	PaymentRequired
)

// Error is a failure the caller can act on.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// New returns an error of kind with the spec's code and a message for the caller.
func New(kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// FieldError names one invalid field of a request: its path (`name`, `contacts[2].recipient`)
// and why it is invalid.
type FieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// InvalidFields is a 400 invalid_request listing every invalid field in details.errors.
func InvalidFields(errs ...FieldError) *Error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Path + ": " + e.Message
		if e.Path == "" {
			msgs[i] = e.Message
		}
	}
	return &Error{
		Kind: Invalid, Code: "invalid_request",
		Message: "Invalid request: " + strings.Join(msgs, "; "),
		Details: map[string]any{"errors": errs},
	}
}

// Unauthenticated is the answer to a missing, malformed, unknown or revoked API key. It does not
// say which, so a caller cannot probe for keys.
func Unauthenticated() *Error {
	return New(Unauthorized, "unauthorized", "Missing or invalid API key. Send Authorization: Bearer <API key>.")
}

// NotFoundf is a 404 not_found with a message.
func NotFoundf(format string, args ...any) *Error {
	return New(NotFound, "not_found", fmt.Sprintf(format, args...))
}
