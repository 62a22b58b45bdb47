package functions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/functionrun"
	"github.com/switchboard-io/switchboard/internal/index"
)

// HTTPPath is where functions answer HTTP: /fn/<token>/<anything>.
const HTTPPath = "/fn/"

// Limits of an HTTP invocation.
const (
	MaxHTTPRequest = 1 << 20
	// HTTPTimeout bounds an HTTP invocation whatever the function's timeout: a caller waits.
	HTTPTimeout = 30 * time.Second
)

// HTTPHandler serves functions' public URLs. There is no API key: the URL's token finds the
// function, and whatever authentication it wants is its own.
type HTTPHandler struct {
	Reader  client.Reader
	Invoker *Invoker
	Log     logr.Logger
}

// HTTPRequest is event.data of an HTTP invocation.
type HTTPRequest struct {
	Method          string            `json:"method"`
	Path            string            `json:"path"`
	RawQuery        string            `json:"rawQuery"`
	Query           map[string]string `json:"query"`
	Headers         map[string]string `json:"headers"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
	SourceIP        string            `json:"sourceIp"`
}

// httpAnswer is what a handler may return to shape its answer; anything else is sent as JSON.
type httpAnswer struct {
	StatusCode      *int              `json:"statusCode"`
	Headers         map[string]string `json:"headers"`
	Body            any               `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), HTTPPath)
	token, sub, _ := strings.Cut(rest, "/")
	f, err := h.function(r.Context(), token)
	if err != nil || !f.Spec.HTTPEnabled {
		writeHTTPError(w, http.StatusNotFound, "not_found", "No function answers at this URL.")
		return
	}
	if f.Spec.Paused {
		writeHTTPError(w, http.StatusServiceUnavailable, "function_paused", "The function is paused.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHTTPRequest))
	if err != nil {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, "request_too_large", "A function's request body holds at most 1 MiB.")
		return
	}
	req := HTTPRequest{Method: r.Method, Path: "/" + sub, RawQuery: r.URL.RawQuery, Query: map[string]string{},
		Headers: map[string]string{}, SourceIP: r.RemoteAddr}
	for k, v := range r.URL.Query() {
		req.Query[k] = strings.Join(v, ",")
	}
	for k, v := range r.Header {
		req.Headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if utf8.Valid(body) {
		req.Body = string(body)
	} else {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	ctx, cancel := context.WithTimeout(r.Context(), HTTPTimeout)
	defer cancel()
	out, err := h.Invoker.Call(ctx, f, "http", req)
	switch {
	case errors.Is(err, ErrNotDeployed):
		writeHTTPError(w, http.StatusServiceUnavailable, "function_not_deployed", "The function has no active deployment.")
		return
	case ctx.Err() != nil:
		writeHTTPError(w, http.StatusGatewayTimeout, "function_timeout", "The function did not answer within 30 seconds.")
		return
	case err != nil:
		h.Log.Error(err, "function HTTP invocation", "function", f.Name, "project", f.Namespace)
		writeHTTPError(w, http.StatusBadGateway, "function_error", "The function could not be run.")
		return
	}
	w.Header().Set("X-Function-Invocation", out.Invocation)
	if out.Reason != functionrun.ReasonNone {
		status := http.StatusBadGateway
		if out.Reason == functionrun.ReasonTimeout {
			status = http.StatusGatewayTimeout
		}
		writeHTTPError(w, status, "function_"+string(out.Reason), "The function failed: "+string(out.Reason)+" (its logs say more).")
		return
	}
	writeAnswer(w, out.Value)
}

// writeAnswer maps a handler's value to the HTTP answer: {statusCode, headers, body,
// isBase64Encoded} as asked, else 200 with the value as JSON (204 for none).
func writeAnswer(w http.ResponseWriter, value json.RawMessage) {
	var a httpAnswer
	if json.Unmarshal(value, &a) == nil && a.StatusCode != nil && *a.StatusCode >= 100 && *a.StatusCode <= 599 {
		for k, v := range a.Headers {
			w.Header().Set(k, v)
		}
		var body []byte
		switch b := a.Body.(type) {
		case nil:
		case string:
			body = []byte(b)
			if a.IsBase64Encoded {
				if decoded, err := base64.StdEncoding.DecodeString(b); err == nil {
					body = decoded
				}
			}
		default:
			body, _ = json.Marshal(b)
			if w.Header().Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "application/json")
			}
		}
		w.WriteHeader(*a.StatusCode)
		_, _ = w.Write(body)
		return
	}
	if len(value) == 0 || string(value) == "null" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(value)
}

func (h *HTTPHandler) function(ctx context.Context, token string) (*v1alpha1.Function, error) {
	if token == "" {
		return nil, errors.New("no token")
	}
	var list v1alpha1.FunctionList
	if err := h.Reader.List(ctx, &list, client.MatchingFields{index.FunctionURLToken: token}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			return &list.Items[i], nil
		}
	}
	return nil, errors.New("no function")
}

func modeOf(f *v1alpha1.Function) v1alpha1.FunctionMode {
	if f.Spec.Mode == "" {
		return v1alpha1.FunctionLive
	}
	return f.Spec.Mode
}

func writeHTTPError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": message})
}
