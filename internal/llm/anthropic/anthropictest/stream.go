package anthropictest

import (
	"encoding/json"
	"net/http"
)

// sse writes server-sent events as the Messages API streams them: "event: <type>" and
// "data: <json>" lines, a blank line after each event, flushed at once.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &sse{w: w, f: f}
	s.flush()
	return s
}

func (s *sse) event(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // the peer's own shapes always marshal
	}
	_, _ = s.w.Write([]byte("event: " + typ + "\ndata: " + string(b) + "\n\n"))
	s.flush()
}

func (s *sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// stream answers msg as events: message_start, a ping, each content block (start, deltas,
// stop), message_delta with the stop reason and the output tokens, message_stop.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, a *answer, reply *Reply) {
	out := startSSE(w)
	out.event("message_start", map[string]any{"type": "message_start", "message": a.start()})
	out.event("ping", map[string]any{"type": "ping"})
	index := 0
	if len(a.deltas) > 0 {
		empty := ""
		out.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": wireBlock{Type: "text", Text: &empty}})
		for i, d := range a.deltas {
			out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": d}})
			if i == 0 && reply.Stall {
				s.stall(r)
				return
			}
		}
		out.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	} else if reply.Stall {
		s.stall(r)
		return
	}
	for _, tu := range a.toolUses {
		out.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": wireBlock{Type: "tool_use", ID: tu.ID, Name: tu.Name, Input: json.RawMessage(`{}`)}})
		// The arguments come as pieces of JSON text, the first one empty, as the API sends them.
		for _, piece := range append([]string{""}, chunk(compact(tu.Input), 7)...) {
			out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		out.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	out.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.stopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": a.usage.OutputTokens}})
	out.event("message_stop", map[string]any{"type": "message_stop"})
}

func compact(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// chunk cuts s into pieces of n characters (never inside a character).
func chunk(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	if len(r) > 0 {
		out = append(out, string(r))
	}
	return out
}
