package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

type keyContextKey struct{}

// authenticated lets a request through only with a valid, unrevoked API key, and puts the key in
// the request's context.
func (s *Server) authenticated(next func(http.ResponseWriter, *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			s.writeError(w, r, apperror.Unauthenticated())
			return
		}
		key, err := s.keys.Authenticate(r.Context(), secret)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if s.usage != nil {
			s.usage.Record(key.ID, s.now())
		}
		next(w, r.WithContext(context.WithValue(r.Context(), keyContextKey{}, key)))
	})
}

// bearer extracts the token of an `Authorization: Bearer <token>` header.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// keyFrom returns the authenticated key of the request.
func keyFrom(ctx context.Context) apikey.Key {
	return ctx.Value(keyContextKey{}).(apikey.Key)
}
