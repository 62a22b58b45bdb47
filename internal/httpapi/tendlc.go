package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/tendlc"
)

// 10DLC registration (the published client's /v1/10dlc/...): brands, their campaigns, and the
// numbers of a campaign. A test key works on the sandbox's registrations, a live key on those
// registered through the project's SMS Provider.

func (s *Server) tenDLCPage(w http.ResponseWriter, r *http.Request, list string) (tendlc.Page, int, bool) {
	after, id, limit, ok := s.seekPage(w, r, list)
	return tendlc.Page{AfterTime: after, AfterID: id, Limit: limit + 1}, limit, ok
}

func (s *Server) createBrand(w http.ResponseWriter, r *http.Request) {
	var in tendlc.BrandInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	b, err := s.tenDLC.CreateBrand(r.Context(), key.Project, key.TestMode(), in)
	s.writeBrand(w, r, http.StatusCreated, b, err)
}

func (s *Server) writeBrand(w http.ResponseWriter, r *http.Request, status int, b tendlc.Brand, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"brand": b})
}

func (s *Server) listBrands(w http.ResponseWriter, r *http.Request) {
	p, limit, ok := s.tenDLCPage(w, r, "10dlc-brands")
	if !ok {
		return
	}
	key := keyFrom(r.Context())
	rows, err := s.tenDLC.Brands(r.Context(), key.Project, key.TestMode(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "10dlc-brands", rows, limit,
		func(b tendlc.Brand) (time.Time, string) { return b.CreatedAt, b.ID }, func(b tendlc.Brand) tendlc.Brand { return b }))
}

func (s *Server) getBrand(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	b, err := s.tenDLC.Brand(r.Context(), key.Project, key.TestMode(), r.PathValue("brandId"))
	s.writeBrand(w, r, http.StatusOK, b, err)
}

func (s *Server) updateBrand(w http.ResponseWriter, r *http.Request) {
	var in tendlc.BrandInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	b, err := s.tenDLC.UpdateBrand(r.Context(), key.Project, key.TestMode(), r.PathValue("brandId"), in)
	s.writeBrand(w, r, http.StatusOK, b, err)
}

func (s *Server) deleteBrand(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	if err := s.tenDLC.DeleteBrand(r.Context(), key.Project, key.TestMode(), r.PathValue("brandId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) submitBrand(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	b, err := s.tenDLC.SubmitBrand(r.Context(), key.Project, key.TestMode(), r.PathValue("brandId"))
	s.writeBrand(w, r, http.StatusOK, b, err)
}

func (s *Server) syncBrand(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	b, err := s.tenDLC.SyncBrand(r.Context(), key.Project, key.TestMode(), r.PathValue("brandId"))
	s.writeBrand(w, r, http.StatusOK, b, err)
}

func (s *Server) brandUseCases(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"useCases": tendlc.UseCases})
}

func (s *Server) createCampaign(w http.ResponseWriter, r *http.Request) {
	var in tendlc.CampaignInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	c, err := s.tenDLC.CreateCampaign(r.Context(), key.Project, key.TestMode(), in)
	s.writeCampaign(w, r, http.StatusCreated, c, err)
}

func (s *Server) writeCampaign(w http.ResponseWriter, r *http.Request, status int, c tendlc.Campaign, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"campaign": c})
}

func (s *Server) listCampaigns(w http.ResponseWriter, r *http.Request) {
	p, limit, ok := s.tenDLCPage(w, r, "10dlc-campaigns")
	if !ok {
		return
	}
	key := keyFrom(r.Context())
	rows, err := s.tenDLC.Campaigns(r.Context(), key.Project, key.TestMode(), r.URL.Query().Get("brandId"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "10dlc-campaigns", rows, limit,
		func(c tendlc.Campaign) (time.Time, string) { return c.CreatedAt, c.ID }, func(c tendlc.Campaign) tendlc.Campaign { return c }))
}

func (s *Server) getCampaign(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	c, err := s.tenDLC.Campaign(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId"))
	s.writeCampaign(w, r, http.StatusOK, c, err)
}

func (s *Server) updateCampaign(w http.ResponseWriter, r *http.Request) {
	var in tendlc.CampaignInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	c, err := s.tenDLC.UpdateCampaign(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId"), in)
	s.writeCampaign(w, r, http.StatusOK, c, err)
}

func (s *Server) deleteCampaign(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	if err := s.tenDLC.DeleteCampaign(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) submitCampaign(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	c, err := s.tenDLC.SubmitCampaign(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId"))
	s.writeCampaign(w, r, http.StatusOK, c, err)
}

func (s *Server) syncCampaign(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	c, err := s.tenDLC.SyncCampaign(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId"))
	s.writeCampaign(w, r, http.StatusOK, c, err)
}

func (s *Server) listCampaignNumbers(w http.ResponseWriter, r *http.Request) {
	p, limit, ok := s.tenDLCPage(w, r, "10dlc-phone-numbers")
	if !ok {
		return
	}
	key := keyFrom(r.Context())
	rows, err := s.tenDLC.Assignments(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "10dlc-phone-numbers", rows, limit,
		func(a tendlc.Assignment) (time.Time, string) { return a.CreatedAt, a.ID }, func(a tendlc.Assignment) tendlc.Assignment { return a }))
}

func (s *Server) assignCampaignNumber(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PhoneNumberID *string `json:"phoneNumberId"`
	}
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	a, err := s.tenDLC.Assign(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId"), req.PhoneNumberID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"assignment": a})
}

func (s *Server) unassignCampaignNumber(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	if err := s.tenDLC.Unassign(r.Context(), key.Project, key.TestMode(), r.PathValue("campaignId"), r.PathValue("assignmentId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
