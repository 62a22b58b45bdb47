package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// documentMaxBody bounds a document's body: a file of extract.MaxBytes in base64 (4/3 of it),
// or text of knowledge.MaxTextContent characters of up to 4 bytes, escaped, with room to spare.
const documentMaxBody = 28 << 20

// agentKnowledgeRoutes are the routes of agents' knowledge bases and their documents, under the
// sender's agent and the agent itself (docs/agents-wire.md §1.2, §1.7).
func (s *Server) agentKnowledgeRoutes() []route {
	all := apikey.PermissionAll
	var out []route
	for _, p := range []string{"/v1/senders/{senderId}/agent", "/v1/agents/{agentId}"} {
		kb := p + "/knowledge-bases/{kbId}"
		out = append(out,
			route{method: "POST", path: p + "/knowledge-bases", access: permission, permission: all, handle: s.createKnowledgeBase},
			route{method: "GET", path: p + "/knowledge-bases", access: anyKey, handle: s.listKnowledgeBases},
			route{method: "GET", path: kb, access: anyKey, handle: s.getKnowledgeBase},
			route{method: "PATCH", path: kb, access: permission, permission: all, handle: s.updateKnowledgeBase},
			route{method: "DELETE", path: kb, access: permission, permission: all, handle: s.deleteKnowledgeBase},
			route{method: "POST", path: kb + "/documents", access: permission, permission: all, maxBody: documentMaxBody, handle: s.createKnowledgeDocument},
			route{method: "GET", path: kb + "/documents", access: anyKey, handle: s.listKnowledgeDocuments},
			route{method: "GET", path: kb + "/documents/{docId}", access: anyKey, handle: s.getKnowledgeDocument},
			route{method: "PATCH", path: kb + "/documents/{docId}", access: permission, permission: all, maxBody: documentMaxBody, handle: s.updateKnowledgeDocument},
			route{method: "DELETE", path: kb + "/documents/{docId}", access: permission, permission: all, handle: s.deleteKnowledgeDocument},
		)
	}
	return out
}

// knowledgeBaseJSON is the client's AgentKnowledgeBase (§3.8).
type knowledgeBaseJSON struct {
	ID            string    `json:"id"`
	AgentID       string    `json:"agentId"`
	Name          string    `json:"name"`
	Description   *string   `json:"description"`
	DocumentCount int32     `json:"documentCount"`
	TotalChunks   int32     `json:"totalChunks"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

func knowledgeBaseView(b knowledge.Base) knowledgeBaseJSON {
	return knowledgeBaseJSON{ID: b.ID, AgentID: b.Agent, Name: b.Name, Description: b.Description, DocumentCount: b.DocumentCount,
		TotalChunks: b.TotalChunks, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
}

// documentJSON is the client's AgentDocument (§3.8), with Switchboard's status, failure
// reason and source besides (the client reads only isProcessed).
type documentJSON struct {
	ID              string    `json:"id"`
	KnowledgeBaseID string    `json:"knowledgeBaseId"`
	Title           string    `json:"title"`
	ChunkCount      int32     `json:"chunkCount"`
	ContentLength   int32     `json:"contentLength"`
	IsProcessed     bool      `json:"isProcessed"`
	Status          string    `json:"status"`
	FailureReason   *string   `json:"failureReason"`
	Source          string    `json:"source"`
	URL             *string   `json:"url,omitempty"`
	Filename        *string   `json:"filename,omitempty"`
	ContentType     *string   `json:"contentType,omitempty"`
	EmbeddingModel  *string   `json:"embeddingModel"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

func documentView(d db.KnowledgeDocument) documentJSON {
	return documentJSON{ID: d.ID, KnowledgeBaseID: d.KnowledgeBaseID, Title: d.Title, ChunkCount: d.ChunkCount,
		ContentLength: d.ContentLength, IsProcessed: d.Status == "ready", Status: d.Status, FailureReason: d.FailureReason,
		Source: d.Source, URL: d.SourceUrl, Filename: d.Filename, ContentType: d.ContentType, EmbeddingModel: d.EmbeddingModel,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

func (s *Server) createKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	var in knowledge.BaseInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.knowledge.CreateBase(r.Context(), a, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"knowledgeBase": knowledgeBaseView(b)})
}

func (s *Server) listKnowledgeBases(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	list := "knowledge-bases:" + a.Name
	limit, after, err := s.pageRequest(r, key.Project, list)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, id := after.seek()
	rows, err := s.knowledge.Bases(r.Context(), a, t, id, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(b knowledge.Base) (time.Time, string) { return b.CreatedAt, b.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, list, rows, limit, at, knowledgeBaseView))
}

func (s *Server) getKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.knowledge.GetBase(r.Context(), a, r.PathValue("kbId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"knowledgeBase": knowledgeBaseView(b)})
}

func (s *Server) updateKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	var in knowledge.BaseInput
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.knowledge.UpdateBase(r.Context(), a, r.PathValue("kbId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"knowledgeBase": knowledgeBaseView(b)})
}

func (s *Server) deleteKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err == nil {
		err = s.knowledge.DeleteBase(r.Context(), a, r.PathValue("kbId"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) createKnowledgeDocument(w http.ResponseWriter, r *http.Request) {
	var in knowledge.DocumentInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.knowledge.CreateDocument(r.Context(), a, r.PathValue("kbId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"document": documentView(d)})
}

func (s *Server) listKnowledgeDocuments(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	kb := r.PathValue("kbId")
	list := "knowledge-documents:" + a.Name + "/" + kb
	limit, after, err := s.pageRequest(r, key.Project, list)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, id := after.seek()
	rows, err := s.knowledge.Documents(r.Context(), a, kb, t, id, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(d db.KnowledgeDocument) (time.Time, string) { return d.CreatedAt, d.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, list, rows, limit, at, documentView))
}

func (s *Server) getKnowledgeDocument(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.knowledge.GetDocument(r.Context(), a, r.PathValue("kbId"), r.PathValue("docId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"document": documentView(d)})
}

func (s *Server) updateKnowledgeDocument(w http.ResponseWriter, r *http.Request) {
	var in knowledge.DocumentInput
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.knowledge.UpdateDocument(r.Context(), a, r.PathValue("kbId"), r.PathValue("docId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"document": documentView(d)})
}

func (s *Server) deleteKnowledgeDocument(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err == nil {
		err = s.knowledge.DeleteDocument(r.Context(), a, r.PathValue("kbId"), r.PathValue("docId"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
