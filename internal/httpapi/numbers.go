package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/numbers"
	"github.com/switchboard-io/switchboard/internal/optional"
	"github.com/switchboard-io/switchboard/internal/sender"
)

// numberRoutes are the phone numbers projects buy (docs/numbers-wire.md): what is for sale, and
// what buying one asks of the project.
func (s *Server) numberRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/phone-numbers/available", access: anyKey, handle: s.availableNumbers},
		{method: "GET", path: "/v2/numbers/available", access: anyKey, handle: s.availableNumbers},
		{method: "GET", path: "/v1/phone-numbers/requirements", access: anyKey, handle: s.numberRequirements},
		{method: "POST", path: "/v1/phone-numbers", access: permission, permission: apikey.PermissionAll, handle: s.buyNumber},
		{method: "POST", path: "/v2/numbers", access: permission, permission: apikey.PermissionAll, handle: s.buyNumberV2},
		{method: "GET", path: "/v1/phone-numbers", access: anyKey, handle: s.listNumbers},
		{method: "GET", path: "/v1/phone-numbers/{phoneNumberId}", access: anyKey, handle: s.getNumber},
		{method: "PATCH", path: "/v1/phone-numbers/{phoneNumberId}", access: permission, permission: apikey.PermissionAll, handle: s.updateNumber},
		{method: "DELETE", path: "/v1/phone-numbers/{phoneNumberId}", access: permission, permission: apikey.PermissionAll, handle: s.releaseNumber},
	}
}

// purchaseRequest is the body of POST /v1/phone-numbers and POST /v2/numbers.
type purchaseRequest struct {
	PhoneNumber *string `json:"phoneNumber"`
	Name        *string `json:"name"`
	// Details are Switchboard's extension: a regulation's details the project's records do not hold.
	Details map[string]string `json:"details"`
}

func (req purchaseRequest) purchase() (numbers.Purchase, error) {
	if req.PhoneNumber == nil {
		return numbers.Purchase{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: "is required"})
	}
	return numbers.Purchase{PhoneNumber: *req.PhoneNumber, Name: req.Name, Details: req.Details}, nil
}

func (s *Server) buyNumber(w http.ResponseWriter, r *http.Request) {
	var req purchaseRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := req.purchase()
	var n numbers.Owned
	if err == nil {
		n, err = s.numbers.Buy(r.Context(), keyFrom(r.Context()), in)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"phoneNumber": n})
}

func (s *Server) listNumbers(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "phone-numbers")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.numbers.List(r.Context(), project, r.URL.Query().Get("status"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := page[numbers.Owned]{Items: []numbers.Owned{}}
	for _, n := range all {
		if !after.after(n.CreatedAt, n.ID) {
			continue
		}
		if len(out.Items) == limit {
			last := out.Items[len(out.Items)-1]
			out.NextCursor = s.cursors.encode(position{Project: project, List: "phone-numbers", Time: last.CreatedAt.UnixMicro(), ID: last.ID})
			break
		}
		out.Items = append(out.Items, n)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getNumber(w http.ResponseWriter, r *http.Request) {
	n, err := s.numbers.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("phoneNumberId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"phoneNumber": n})
}

// numberUpdate is the body of PATCH /v1/phone-numbers/{id}: null clears a field.
type numberUpdate struct {
	Name     optional.Value[string] `json:"name"`
	SenderID optional.Value[string] `json:"senderId"`
}

func (s *Server) updateNumber(w http.ResponseWriter, r *http.Request) {
	var req numberUpdate
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	var c numbers.Change
	for _, f := range []struct {
		v   optional.Value[string]
		dst **string
	}{{req.Name, &c.Name}, {req.SenderID, &c.SenderID}} {
		if f.v.Set {
			v := f.v.Value // null: ""
			*f.dst = &v
		}
	}
	n, err := s.numbers.Update(r.Context(), keyFrom(r.Context()).Project, r.PathValue("phoneNumberId"), c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"phoneNumber": n})
}

func (s *Server) releaseNumber(w http.ResponseWriter, r *http.Request) {
	if err := s.numbers.Release(r.Context(), keyFrom(r.Context()).Project, r.PathValue("phoneNumberId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
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

// buyNumberV2 buys a number and turns SMS on at it: the number is an address with an sms
// channel, as POST /v2/channels makes one.
func (s *Server) buyNumberV2(w http.ResponseWriter, r *http.Request) {
	var req purchaseRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := req.purchase()
	key := keyFrom(r.Context())
	var n numbers.Owned
	if err == nil {
		n, err = s.numbers.Buy(r.Context(), key, in)
	}
	if err == nil {
		n, err = s.numbers.WaitActive(r.Context(), key.Project, n.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sms := string(v1alpha1.ChannelSMS)
	a, err := s.senders.CreateAddress(r.Context(), key.Project, sender.CreateInput{Type: &sms, Address: &n.PhoneNumber, Name: in.Name})
	if err != nil {
		if e := apperror.As(err); e != nil {
			e.Message = fmt.Sprintf("%s is bought (GET /v1/phone-numbers/%s), but SMS could not be turned on at it: %s", n.PhoneNumber, n.ID, e.Message)
		}
		s.writeError(w, r, err)
		return
	}
	if n, err = s.numbers.Get(r.Context(), key.Project, n.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"phoneNumber": n, "channel": channelView(a)})
}
