package httpapi

import (
	"net/http"
	"strconv"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/numbers"
)

// numberRoutes are the phone numbers projects buy (docs/numbers-wire.md): what is for sale, and
// what buying one asks of the project.
func (s *Server) numberRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/phone-numbers/available", access: anyKey, handle: s.availableNumbers},
		{method: "GET", path: "/v2/numbers/available", access: anyKey, handle: s.availableNumbers},
		{method: "GET", path: "/v1/phone-numbers/requirements", access: anyKey, handle: s.numberRequirements},
	}
}

func (s *Server) availableNumbers(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := numbers.Query{Country: v.Get("countryCode"), Type: v.Get("type"), Contains: v.Get("contains")}
	var err error
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit < 1 {
			err = apperror.InvalidFields(apperror.FieldError{Path: "limit", Message: "must be a whole number from 1 to 100"})
		}
	}
	if err == nil {
		err = numbers.ParseCapabilities(&q, v.Get("capabilities"))
	}
	var items []numbers.Available
	if err == nil {
		items, err = s.numbers.Search(r.Context(), keyFrom(r.Context()), q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) numberRequirements(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	items, err := s.numbers.Requirements(r.Context(), keyFrom(r.Context()), v.Get("countryCode"), v.Get("type"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}
