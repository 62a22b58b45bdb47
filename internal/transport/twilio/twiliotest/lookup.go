package twiliotest

import (
	"net/http"
	"strings"
)

// LineType is what the peer's Lookup v2 knows of a number (SetLineType).
type LineType struct {
	Carrier, Type string
}

// SetLineType makes Lookup answer number's line type intelligence with carrier and typ (mobile,
// landline, fixedVoip, nonFixedVoip, tollFree…); other numbers are answered with Twilio's
// error 60600 (unprovisioned or out of coverage) inside line_type_intelligence.
func (s *Server) SetLineType(number, carrier, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lineTypes[number] = LineType{Carrier: carrier, Type: typ}
}

// Lookups is how many lookups the peer answered.
func (s *Server) Lookups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// lookup answers GET /v2/PhoneNumbers/{number} as lookups.twilio.com does: the number's
// validity and formats, and with Fields=line_type_intelligence its carrier and type.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, number string) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w)
		return
	}
	if !strings.HasPrefix(number, "+") || len(number) < 8 {
		writeJSON(w, http.StatusOK, map[string]any{"phone_number": number, "valid": false, "validation_errors": []string{"INVALID_BUT_POSSIBLE"},
			"line_type_intelligence": nil, "url": s.URL + r.URL.Path})
		return
	}
	s.mu.Lock()
	s.lookups++
	lt, known := s.lineTypes[number]
	s.mu.Unlock()
	answer := map[string]any{"calling_country_code": nil, "country_code": nil, "phone_number": number, "national_format": nil,
		"valid": true, "validation_errors": []string{}, "caller_name": nil, "sim_swap": nil, "call_forwarding": nil,
		"line_type_intelligence": nil, "url": s.URL + r.URL.Path}
	if strings.Contains(r.URL.Query().Get("Fields"), "line_type_intelligence") {
		info := map[string]any{"mobile_country_code": nil, "mobile_network_code": nil, "carrier_name": nil, "type": nil, "error_code": 60600}
		if known {
			info = map[string]any{"mobile_country_code": "310", "mobile_network_code": "456", "carrier_name": lt.Carrier, "type": lt.Type, "error_code": nil}
		}
		answer["line_type_intelligence"] = info
	}
	writeJSON(w, http.StatusOK, answer)
}
