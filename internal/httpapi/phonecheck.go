package httpapi

import (
	"net/http"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

type carrierJSON struct {
	Name *string `json:"name"`
	Type string  `json:"type"`
}

// introspectPhoneJSON is POST /v1/introspect/phone's bare answer (WIRE.md §9).
type introspectPhoneJSON struct {
	PhoneNumber       string      `json:"phoneNumber"`
	CountryCode       string      `json:"countryCode"`
	ValidNumber       bool        `json:"validNumber"`
	NationalFormat    string      `json:"nationalFormat"`
	LineType          string      `json:"lineType"`
	Carrier           carrierJSON `json:"carrier"`
	AvailableChannels []string    `json:"availableChannels"`
}

func (s *Server) introspectPhone(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PhoneNumber *string `json:"phoneNumber"`
	}
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.PhoneNumber == nil {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: "is required"}))
		return
	}
	key := keyFrom(r.Context())
	res, err := s.phones.Introspect(r.Context(), key.Project, !key.TestMode(), *req.PhoneNumber)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := introspectPhoneJSON{PhoneNumber: res.PhoneNumber, CountryCode: res.CountryCode, ValidNumber: res.ValidNumber,
		NationalFormat: res.NationalFormat, LineType: res.LineType, Carrier: carrierJSON{Type: res.Carrier.Type},
		AvailableChannels: res.AvailableChannels}
	if res.Carrier.Name != "" {
		out.Carrier.Name = &res.Carrier.Name
	}
	writeJSON(w, http.StatusOK, out)
}
