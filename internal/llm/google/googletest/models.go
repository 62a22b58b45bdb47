package googletest

import (
	"net/http"
	"strconv"
	"strings"
)

// The page sizes of models.list: 50 when the request sets none, at most 1000.
const (
	defaultListPageSize = 50
	maxListPageSize     = 1000
)

// listModels answers models.list (GET /v1beta/models?pageSize=&pageToken=) as the Gemini API
// does: {models: [Model…], nextPageToken} with the key checked first, then scripted failures
// and hangs.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	rec := Request{Method: "list", Query: r.URL.RawQuery, Header: r.Header.Clone()}
	if r.Method != http.MethodGet {
		rec.Status = http.StatusNotFound
		s.recordList(rec)
		writeError(w, apiErr(http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server."))
		return
	}
	if e := s.checkKey(r); e != nil {
		rec.Status = e.Code
		s.recordList(rec)
		writeError(w, e)
		return
	}
	if f, ok := s.nextFailure(); ok {
		rec.Status = f.Status
		s.recordList(rec)
		writeError(w, failure(f))
		return
	}
	if s.takeHang() {
		s.recordList(rec)
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}

	q := r.URL.Query()
	size := defaultListPageSize
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			rec.Status = http.StatusBadRequest
			s.recordList(rec)
			writeError(w, invalid("Invalid value at 'page_size' (TYPE_INT32), \""+v+"\""))
			return
		}
		if n > 0 {
			size = min(n, maxListPageSize)
		}
	}
	models := s.opts.Models
	if len(models) == 0 {
		models = DefaultModels
	}
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "page-"))
		if !strings.HasPrefix(tok, "page-") || err != nil || n < 0 || n > len(models) {
			rec.Status = http.StatusBadRequest
			s.recordList(rec)
			writeError(w, invalid("Invalid page token."))
			return
		}
		start = n
	}
	end := min(start+size, len(models))
	out := make([]map[string]any, 0, end-start)
	for _, m := range models[start:end] {
		out = append(out, modelResource(m))
	}
	body := map[string]any{"models": out}
	if end < len(models) {
		body["nextPageToken"] = "page-" + strconv.Itoa(end)
	}
	rec.Status = http.StatusOK
	s.recordList(rec)
	writeJSON(w, http.StatusOK, body)
}

// modelResource is a Model resource as models.list answers it.
func modelResource(name string) map[string]any {
	if strings.Contains(name, "embedding") {
		return map[string]any{
			"name": "models/" + name, "version": "001", "displayName": displayName(name),
			"description":     "Obtain a distributed representation of a text.",
			"inputTokenLimit": 2048, "outputTokenLimit": 1,
			"supportedGenerationMethods": []string{"embedContent", "countTextTokens", "countTokens", "asyncBatchEmbedContent"},
		}
	}
	return map[string]any{
		"name": "models/" + name, "version": "001", "displayName": displayName(name),
		"description":     displayName(name),
		"inputTokenLimit": 1048576, "outputTokenLimit": 65536,
		"supportedGenerationMethods": []string{"generateContent", "countTokens", "createCachedContent", "batchGenerateContent"},
		"temperature":                1, "topP": 0.95, "topK": 64, "maxTemperature": 2, "thinking": true,
	}
}

// displayName is a model's display name as Google writes them: gemini-2.5-flash is
// "Gemini 2.5 Flash".
func displayName(name string) string {
	words := strings.Split(name, "-")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}
