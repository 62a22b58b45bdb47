package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/regulatory"
)

// regulatoryRoutes are the addresses and documents some countries ask of a number's buyer
// (docs/numbers.md#addresses-and-documents). They are personal data: full-access keys only.
// The upload URL itself takes no key: its one-time token is the credential.
func (s *Server) regulatoryRoutes() []route {
	all := func(method, path string, h http.HandlerFunc) route {
		return route{method: method, path: path, access: permission, permission: apikey.PermissionAll, handle: h}
	}
	return []route{
		all("POST", "/v1/addresses", s.createAddress),
		all("GET", "/v1/addresses", s.listAddresses),
		all("GET", "/v1/addresses/{addressId}", s.getAddress),
		all("DELETE", "/v1/addresses/{addressId}", s.deleteAddress),
		all("POST", "/v1/documents/upload-url", s.documentUploadURL),
		all("POST", "/v1/documents", s.createDocument),
		all("GET", "/v1/documents", s.listDocuments),
		all("GET", "/v1/documents/{documentId}", s.getDocument),
		all("DELETE", "/v1/documents/{documentId}", s.deleteDocument),
		{method: "POST", path: regulatory.UploadPath + "{token}", access: public, maxBody: regulatory.MaxFileSize + 1, handle: s.receiveUpload},
		{method: "PUT", path: regulatory.UploadPath + "{token}", access: public, maxBody: regulatory.MaxFileSize + 1, handle: s.receiveUpload},
	}
}

func (s *Server) createAddress(w http.ResponseWriter, r *http.Request) {
	var in regulatory.AddressInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.regulatory.CreateAddress(r.Context(), keyFrom(r.Context()).Project, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"address": a})
}

func (s *Server) listAddresses(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "addresses")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, id := after.seek()
	rows, err := s.regulatory.ListAddresses(r.Context(), project, regulatory.Page{BeforeTime: t, BeforeID: id, Limit: int32(limit + 1)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(a regulatory.Address) (time.Time, string) { return a.CreatedAt, a.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, project, "addresses", rows, limit, at, func(a regulatory.Address) regulatory.Address { return a }))
}

func (s *Server) getAddress(w http.ResponseWriter, r *http.Request) {
	a, err := s.regulatory.GetAddress(r.Context(), keyFrom(r.Context()).Project, r.PathValue("addressId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"address": a})
}

func (s *Server) deleteAddress(w http.ResponseWriter, r *http.Request) {
	if err := s.regulatory.DeleteAddress(r.Context(), keyFrom(r.Context()).Project, r.PathValue("addressId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// documentUploadURL answers a one-time URL on this API where the file is POSTed (or PUT) raw.
func (s *Server) documentUploadURL(w http.ResponseWriter, r *http.Request) {
	u, err := s.regulatory.UploadURL(r.Context(), keyFrom(r.Context()).Project, s.baseURL(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"uploadUrl": u})
}

// baseURL is where clients reach this API: --public-url, else the request's own scheme and host.
func (s *Server) baseURL(r *http.Request) string {
	if s.publicURL != "" {
		return strings.TrimRight(s.publicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// receiveUpload takes the file sent to an upload URL and answers its storageId.
func (s *Server) receiveUpload(w http.ResponseWriter, r *http.Request) {
	id, err := s.regulatory.Receive(r.Context(), r.PathValue("token"), r.Header.Get("Content-Type"), r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"storageId": id})
}

func (s *Server) createDocument(w http.ResponseWriter, r *http.Request) {
	var in regulatory.DocumentInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.regulatory.CreateDocument(r.Context(), keyFrom(r.Context()).Project, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"document": d})
}

func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "documents")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, id := after.seek()
	rows, err := s.regulatory.ListDocuments(r.Context(), project, regulatory.Page{BeforeTime: t, BeforeID: id, Limit: int32(limit + 1)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(d regulatory.Document) (time.Time, string) { return d.CreatedAt, d.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, project, "documents", rows, limit, at, func(d regulatory.Document) regulatory.Document { return d }))
}

func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) {
	d, err := s.regulatory.GetDocument(r.Context(), keyFrom(r.Context()).Project, r.PathValue("documentId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"document": d})
}

func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) {
	if err := s.regulatory.DeleteDocument(r.Context(), keyFrom(r.Context()).Project, r.PathValue("documentId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
