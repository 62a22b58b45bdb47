package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

type signinData struct {
	Token string
	Next  string
	Error string
}

// signinPage shows the sign-in form, with a fresh token in a cookie and the form alike: a page
// of another site cannot sign a browser into a session of its choosing.
func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	h.showSignin(w, r, http.StatusOK, "")
}

func (h *Handler) showSignin(w http.ResponseWriter, r *http.Request, status int, problem string) {
	lang := langOf(r, "")
	tok, err := token(24)
	if err != nil {
		h.internal(w, r, lang, err)
		return
	}
	http.SetCookie(w, h.sessions.cookie(signinCookie, tok, 3600))
	next := r.FormValue("next")
	if !strings.HasPrefix(next, Path) || strings.HasPrefix(next, "//") {
		next = Path + "messages"
	}
	data := signinData{Token: tok, Next: next}
	if problem != "" {
		data.Error = t(lang, problem)
	}
	h.render(w, r, &view{lang: lang}, status, "signin", t(lang, "signin.title"), data)
}

// signin exchanges an API key for a session. The key is never echoed or logged.
func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(signinCookie)
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("token"))) != 1 {
		h.showSignin(w, r, http.StatusForbidden, "signin.expired")
		return
	}
	// A key pasted as an Authorization header's value ("Bearer svc_…") is taken too.
	secret := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.PostFormValue("apiKey")), "Bearer "))
	key, err := h.o.Auth.Authenticate(r.Context(), secret)
	if err != nil {
		h.showSignin(w, r, http.StatusUnauthorized, "signin.refused")
		return
	}
	lang := langOf(r, "")
	http.SetCookie(w, h.sessions.cookie(signinCookie, "", -1))
	if err := h.sessions.start(r.Context(), w, &key, "", lang); err != nil {
		h.internal(w, r, lang, err)
		return
	}
	next := r.PostFormValue("next")
	if !strings.HasPrefix(next, Path) || strings.HasPrefix(next, "//") {
		next = Path + "messages"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// operatorLogin takes an operator's one-time link (switchboard console login) and starts a
// session that sees every project.
func (h *Handler) operatorLogin(w http.ResponseWriter, r *http.Request) {
	lang := langOf(r, "")
	operator, ok, err := h.sessions.useLogin(r.Context(), r.URL.Query().Get("token"))
	if err != nil {
		h.internal(w, r, lang, err)
		return
	}
	if !ok {
		h.fail(w, r, lang, http.StatusUnauthorized, "signin.linkUsed")
		return
	}
	if err := h.sessions.start(r.Context(), w, nil, operator, lang); err != nil {
		h.internal(w, r, lang, err)
		return
	}
	h.o.Log.Info("an operator signed in to the console", "operator", operator)
	http.Redirect(w, r, Path+"messages", http.StatusSeeOther)
}

func (h *Handler) signout(w http.ResponseWriter, r *http.Request, v *view) {
	if err := h.sessions.end(r.Context(), w, v.s); err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	http.Redirect(w, r, Path+"signin?"+url.Values{"lang": {v.lang}}.Encode(), http.StatusSeeOther)
}
