package unsubscribe

import (
	"embed"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/go-logr/logr"

	"github.com/switchboard-io/switchboard/internal/pagelang"
)

//go:embed templates/*.html
var templateFiles embed.FS

// maxBody bounds a POST's body: the one-click form is 26 bytes.
const maxBody = 1 << 10

// Handler serves the page of each token under Path: GET shows a confirmation whose button
// POSTs; POST with the form body List-Unsubscribe=One-Click (what mailbox providers send)
// unsubscribes.
type Handler struct {
	service *Service
	log     logr.Logger
	pages   *template.Template
}

// NewHandler returns the page's handler.
func NewHandler(service *Service, log logr.Logger) *Handler {
	t := template.Must(template.New("").Funcs(template.FuncMap{
		"t": func(l, key string) string { return text[l][key] },
	}).ParseFS(templateFiles, "templates/*.html"))
	return &Handler{service: service, log: log, pages: t}
}

type view struct {
	Lang  string
	State string // confirm, done, invalid, badRequest, failed
}

// ServeHTTP routes the page's requests.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.URL.Path, Path)
	l := pagelang.Of(r.Header.Get("Accept-Language"))
	if !ok || token == "" || strings.Contains(token, "/") {
		h.render(w, http.StatusNotFound, view{Lang: l, State: "invalid"})
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if _, err := h.service.Resolve(r.Context(), token); err != nil {
			h.fail(w, err, l)
			return
		}
		h.render(w, http.StatusOK, view{Lang: l, State: "confirm"})
	case http.MethodPost:
		h.unsubscribe(w, r, token, l)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *Handler) unsubscribe(w http.ResponseWriter, r *http.Request, token, l string) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.render(w, http.StatusRequestEntityTooLarge, view{Lang: l, State: "badRequest"})
			return
		}
		h.render(w, http.StatusBadRequest, view{Lang: l, State: "badRequest"})
		return
	}
	if r.PostForm.Get("List-Unsubscribe") != "One-Click" {
		h.render(w, http.StatusBadRequest, view{Lang: l, State: "badRequest"})
		return
	}
	if _, err := h.service.Unsubscribe(r.Context(), token); err != nil {
		h.fail(w, err, l)
		return
	}
	h.render(w, http.StatusOK, view{Lang: l, State: "done"})
}

// fail answers a token that names no one 404, and anything else (the database) 500.
func (h *Handler) fail(w http.ResponseWriter, err error, l string) {
	if errors.Is(err, ErrInvalid) {
		h.render(w, http.StatusNotFound, view{Lang: l, State: "invalid"})
		return
	}
	h.log.Error(err, "read or record an unsubscribe")
	h.render(w, http.StatusInternalServerError, view{Lang: l, State: "failed"})
}

func (h *Handler) render(w http.ResponseWriter, status int, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	if err := h.pages.ExecuteTemplate(w, "page.html", v); err != nil {
		h.log.Error(err, "render the unsubscribe page")
	}
}

// text is the page's wording by language, then key. Every key exists in every language (a test
// holds them to it).
var text = map[string]map[string]string{
	"en": {
		"title":          "Unsubscribe",
		"confirm":        "Unsubscribe from these emails?",
		"confirmBody":    "You will no longer receive this sender's bulk emails at this address.",
		"button":         "Unsubscribe",
		"done":           "You are unsubscribed",
		"doneBody":       "This sender's bulk emails will no longer be sent to this address. You can close this page.",
		"invalid":        "This unsubscribe link is not valid",
		"invalidBody":    "Check that the link is complete. Links work for a year after the email was sent.",
		"badRequest":     "This request cannot be used",
		"badRequestBody": "Open the link from your email again and use its button.",
		"failed":         "Something went wrong",
		"failedBody":     "Please try again in a few minutes.",
	},
	"es": {
		"title":          "Cancelar la suscripción",
		"confirm":        "¿Dejar de recibir estos correos?",
		"confirmBody":    "Ya no recibirás en esta dirección los envíos masivos de este remitente.",
		"button":         "Cancelar la suscripción",
		"done":           "Tu suscripción está cancelada",
		"doneBody":       "Los envíos masivos de este remitente ya no llegarán a esta dirección. Puedes cerrar esta página.",
		"invalid":        "Este enlace para cancelar la suscripción no es válido",
		"invalidBody":    "Comprueba que el enlace esté completo. Los enlaces funcionan durante un año desde el envío del correo.",
		"badRequest":     "Esta solicitud no se puede usar",
		"badRequestBody": "Vuelve a abrir el enlace de tu correo y usa su botón.",
		"failed":         "Algo salió mal",
		"failedBody":     "Vuelve a intentarlo en unos minutos.",
	},
}
