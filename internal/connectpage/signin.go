package connectpage

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// A Facebook sign-in is bound to the browser that started it: start sets a random nonce in a
// cookie and the sign-in keeps its SHA-256; the callback and the Page pick go on only when the
// browser brings it back. Otherwise a link with the OAuth state (Facebook's dialog, or the
// callback itself) sent to someone else would connect their Page to an invitation they never
// opened, or let another finish the client's sign-in.

// nonceCookie names the cookie that carries a sign-in's nonce.
const nonceCookie = "switchboard_signin"

// newSignIn records the OAuth state of a Facebook sign-in for inv, bound to a new nonce, and sets
// the nonce's cookie on w.
func (h *Handler) newSignIn(ctx context.Context, w http.ResponseWriter, inv *v1alpha1.Invitation) (string, error) {
	state, err := randid.String(randid.Base62, 32)
	if err != nil {
		return "", err
	}
	nonce, err := randid.String(randid.Base62, 32)
	if err != nil {
		return "", err
	}
	now := h.now().UTC()
	q := db.Planned(h.o.Pool)
	if err := q.DropStaleSignIns(ctx, now.Add(-signInLifetime)); err != nil {
		return "", fmt.Errorf("drop stale sign-ins: %w", err)
	}
	if err := q.StartSignIn(ctx, db.StartSignInParams{State: state, Project: inv.Namespace, Invitation: inv.Name,
		NonceHash: nonceHash(nonce), CreatedAt: now}); err != nil {
		return "", fmt.Errorf("record a sign-in: %w", err)
	}
	http.SetCookie(w, h.cookie(nonce, int(signInLifetime/time.Second)))
	return state, nil
}

// cookie is the nonce's cookie: only for the page's paths, never for scripts, sent on the
// top-level redirect back from Facebook (Lax) and no longer than a sign-in lives. maxAge -1
// deletes it.
func (h *Handler) cookie(nonce string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: nonceCookie, Value: nonce, Path: h.cookiePath, MaxAge: maxAge, HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode}
}

// endSignIn deletes the nonce's cookie: the sign-in is over.
func (h *Handler) endSignIn(w http.ResponseWriter) { http.SetCookie(w, h.cookie("", -1)) }

func nonceHash(nonce string) []byte {
	sum := sha256.Sum256([]byte(nonce))
	return sum[:]
}

// sameBrowser says whether r comes from the browser that started the sign-in whose nonce hash
// is want.
func sameBrowser(r *http.Request, want []byte) bool {
	c, err := r.Cookie(nonceCookie)
	return err == nil && c.Value != "" && subtle.ConstantTimeCompare(nonceHash(c.Value), want) == 1
}

// browserHash is the nonce hash r's cookie carries (none: a hash no sign-in has).
func browserHash(r *http.Request) []byte {
	if c, err := r.Cookie(nonceCookie); err == nil && c.Value != "" {
		return nonceHash(c.Value)
	}
	return []byte{}
}

// otherBrowser answers a step of a sign-in from a browser that did not start it: nothing is
// taken or changed, and the page says to start again from the invitation's link in this
// browser (it links to it, as whoever holds the sign-in's state came from that page).
func (h *Handler) otherBrowser(w http.ResponseWriter, r *http.Request, project, name string) {
	v := h.messageView(r, "otherBrowser", "otherBrowserBody")
	if inv, err := h.o.Invitations.Fresh(r.Context(), project, name); err == nil {
		v.Next = invitation.PagePath + h.o.Invitations.Token(inv)
	}
	h.render(w, http.StatusForbidden, "message.html", v)
}

// callback is where Facebook Login returns. Its state is taken once, by the browser that
// started the sign-in: a replayed or unknown one changes nothing and says so, and so does one
// brought by another browser, which is not taken (the client can still finish). A refusal fails
// the invitation with its reason; a sign-in without Pages fails it with provider_no_pages;
// otherwise the client picks a Page.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := h.now().UTC()
	state := q.Get("state")
	var row db.FindSignInRow
	err := pgx.ErrNoRows
	if state != "" {
		row, err = db.Planned(h.o.Pool).FindSignIn(r.Context(), db.FindSignInParams{State: state, FreshAfter: now.Add(-signInLifetime)})
	}
	if err == nil && row.UsedAt == nil && !sameBrowser(r, row.NonceHash) {
		h.otherBrowser(w, r, row.Project, row.Invitation)
		return
	}
	if err == nil {
		_, err = db.Planned(h.o.Pool).UseSignIn(r.Context(), db.UseSignInParams{State: state, NonceHash: row.NonceHash, UsedAt: &now,
			FreshAfter: now.Add(-signInLifetime)})
	}
	if errors.Is(err, pgx.ErrNoRows) {
		h.render(w, http.StatusBadRequest, "message.html", h.messageView(r, "badState", "badStateBody"))
		return
	}
	if err != nil {
		h.o.Log.Error(err, "take a sign-in")
		h.render(w, http.StatusInternalServerError, "message.html", h.messageView(r, "reason.internal_error", ""))
		return
	}
	inv, err := h.o.Invitations.Fresh(r.Context(), row.Project, row.Invitation)
	if err != nil {
		h.render(w, http.StatusNotFound, "message.html", h.messageView(r, "notFound", "notFoundBody"))
		return
	}
	token := h.o.Invitations.Token(inv)
	if inv.Stored() != v1alpha1.InvitationInProgress || !inv.ActiveAt(h.now()) {
		h.endSignIn(w)
		headers(w)
		http.Redirect(w, r, invitation.PagePath+token, http.StatusSeeOther)
		return
	}
	if e := q.Get("error"); e != "" {
		// Facebook's answer to Cancel (error_reason user_denied) and to anything else the
		// client did not finish.
		h.endSignIn(w)
		h.failed(w, r, token, inv, &Failure{Reason: v1alpha1.FailureSocialCancelled})
		return
	}
	pages, err := h.o.Connector.MessengerPages(r.Context(), inv, q.Get("code"), h.o.BaseURL+callbackPath)
	if err == nil && len(pages) == 0 {
		err = &Failure{Reason: v1alpha1.FailureProviderNoPages}
	}
	if err == nil {
		err = h.keepPages(r.Context(), state, pages)
	}
	if err != nil {
		h.endSignIn(w)
		h.failed(w, r, token, inv, err)
		return
	}
	v := h.viewOf(r, inv, token)
	v.Pages, v.SignIn = pages, state
	for i := range v.Pages {
		v.Pages[i].AccessToken = "" // the page shows names, never tokens
	}
	h.render(w, http.StatusOK, "pages.html", v)
}

// keepPages seals the Pages of a sign-in until the client picks one.
func (h *Handler) keepPages(ctx context.Context, state string, pages []Page) error {
	plain, err := json.Marshal(pages)
	if err != nil {
		return err
	}
	sealed, err := h.seal(plain, state)
	if err != nil {
		return err
	}
	return db.Planned(h.o.Pool).SetSignInPages(ctx, db.SetSignInPagesParams{State: state, Pages: sealed})
}

// pickPage connects the Page the client picked among those of their sign-in, in the browser
// that started it (another browser's pick takes nothing and changes nothing).
func (h *Handler) pickPage(w http.ResponseWriter, r *http.Request, token string) {
	inv := h.lookup(w, r, token)
	if inv == nil {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxStepBody)
	state, pageID := r.PostFormValue("signIn"), r.PostFormValue("page")
	now := h.now().UTC()
	q := db.Planned(h.o.Pool)
	row, err := q.FindSignIn(r.Context(), db.FindSignInParams{State: state, FreshAfter: now.Add(-signInLifetime)})
	if err == nil && row.Project == inv.Namespace && row.Invitation == inv.Name && !sameBrowser(r, row.NonceHash) {
		h.otherBrowser(w, r, row.Project, row.Invitation)
		return
	}
	var sealed []byte
	if err == nil {
		sealed, err = q.TakeSignInPages(r.Context(), db.TakeSignInPagesParams{State: state, Project: inv.Namespace,
			Invitation: inv.Name, NonceHash: browserHash(r), FreshAfter: now.Add(-signInLifetime)})
	}
	if errors.Is(err, pgx.ErrNoRows) {
		h.render(w, http.StatusBadRequest, "message.html", h.messageView(r, "badState", "badStateBody"))
		return
	}
	h.endSignIn(w)
	var pages []Page
	if err == nil {
		var plain []byte
		if plain, err = h.open(sealed, state); err == nil {
			err = json.Unmarshal(plain, &pages)
		}
	}
	if err != nil {
		h.failed(w, r, token, inv, err)
		return
	}
	var chosen *Page
	for i := range pages {
		if pages[i].ID == pageID {
			chosen = &pages[i]
		}
	}
	if chosen == nil {
		h.failed(w, r, token, inv, &Failure{Reason: v1alpha1.FailureInternalError, Err: errors.New("the page picked was not among the sign-in's")})
		return
	}
	h.connect(r, inv, func(inv *v1alpha1.Invitation) (invitation.Connected, error) {
		return h.o.Connector.ConnectMessenger(r.Context(), inv, *chosen)
	})
	headers(w)
	http.Redirect(w, r, invitation.PagePath+token, http.StatusSeeOther)
}

// seal encrypts plain with AES-GCM under a key derived from SessionKey, bound to the sign-in's
// state (the additional data), so a row cannot be moved to another sign-in.
func (h *Handler) seal(plain []byte, state string) ([]byte, error) {
	aead, err := h.aead()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plain, []byte(state)), nil
}

func (h *Handler) open(sealed []byte, state string) ([]byte, error) {
	aead, err := h.aead()
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("sealed pages too short")
	}
	return aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(state))
}

func (h *Handler) aead() (cipher.AEAD, error) {
	m := hmac.New(sha256.New, h.o.SessionKey)
	m.Write([]byte("invitation sign-in pages"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
