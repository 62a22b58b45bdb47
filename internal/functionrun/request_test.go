package functionrun

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-io/switchboard/internal/functionbuild"
)

// apiServer is a stand-in of the API on 127.0.0.1 recording what functions send it.
type apiServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []apiRequest
}

type apiRequest struct {
	Method, Path, Auth, ContentType string
	Body                            map[string]any
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := apiRequest{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type")}
		_ = json.Unmarshal(raw, &req.Body)
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/nothing":
			w.WriteHeader(http.StatusNoContent)
		case req.Body["to"] == "bad":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"code":"invalid_to","message":"to is not a phone number"}`)
		default:
			io.WriteString(w, `{"message":{"id":"msg_1","status":"queued"}}`)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) taken() []apiRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]apiRequest(nil), s.requests...)
}

// The client's example, built by functionbuild: the real esbuild output loads and runs.
func TestTypeScriptExample(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	api := newAPIServer(t)
	b, err := functionbuild.Build(functionbuild.Source{Entrypoint: "index.ts", Files: map[string]string{"index.ts": `
import { defineFunction } from '@zavudev/functions';
export default defineFunction(async (event, ctx) => {
  ctx.log('received', event.type);
  await ctx.send({ to: event.data.from, text: 'hi' });
  return { ok: true };
});
`}})
	if err != nil {
		t.Fatal(err)
	}
	d := &Deployment{ID: "ts-" + b.SHA256[:12], FunctionID: "fn_ts", Bundle: b.Code,
		Env: map[string]string{"ZAVUDEV_BASE_URL": api.URL, "ZAVU_API_KEY": "zv_live_secret"}}
	r := invoke(t, l, d, "inv_ts", `{"type":"message.inbound","data":{"from":"+5511999990000"}}`)
	wantOK(t, r, `{"ok":true}`)
	if len(r.Logs) != 1 || r.Logs[0].Stream != "log" || r.Logs[0].Message != "received message.inbound" {
		t.Errorf("logs %v", r.Logs)
	}
	reqs := api.taken()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := reqs[0]
	if got.Method != "POST" || got.Path != "/v1/messages" || got.Auth != "Bearer zv_live_secret" || got.ContentType != "application/json" {
		t.Errorf("request %+v", got)
	}
	if got.Body["to"] != "+5511999990000" || got.Body["text"] != "hi" || len(got.Body) != 2 {
		t.Errorf("body %v", got.Body)
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	api := newAPIServer(t)
	d := deployment("request", handler(`
if (event.op === 'caught') {
  try { await ctx.send({ to: 'bad', text: 'x' }); } catch (e) { return { status: e.status, code: e.code, message: e.message, body: e.body }; }
}
if (event.op === 'thrown') await ctx.send({ to: 'bad', text: 'x' });
if (event.op === 'get') return { sent: await ctx.request('get', '/v1/messages/msg_1'), none: await ctx.request('DELETE', '/v1/nothing') };
return null;`))
	d.Env = map[string]string{"ZAVUDEV_BASE_URL": api.URL + "/", "ZAVU_API_KEY": "k1"}

	wantOK(t, invoke(t, l, d, "caught", `{"op":"caught"}`),
		`{"status":400,"code":"invalid_to","message":"to is not a phone number","body":{"code":"invalid_to","message":"to is not a phone number"}}`)
	r := invoke(t, l, d, "thrown", `{"op":"thrown"}`)
	wantFail(t, r, ReasonError, "to is not a phone number")
	wantOK(t, invoke(t, l, d, "get", `{"op":"get"}`), `{"sent":{"message":{"id":"msg_1","status":"queued"}},"none":null}`)

	reqs := api.taken()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if g := reqs[2]; g.Method != "GET" || g.Path != "/v1/messages/msg_1" || g.Auth != "Bearer k1" || g.ContentType != "" {
		t.Errorf("GET request %+v", g)
	}
	if !strings.HasPrefix(reqs[3].Path, "/v1/nothing") {
		t.Errorf("DELETE request %+v", reqs[3])
	}
}
