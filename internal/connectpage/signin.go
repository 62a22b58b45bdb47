package connectpage

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// newSignIn records the OAuth state of a Facebook sign-in for inv.
func (h *Handler) newSignIn(ctx context.Context, inv *v1alpha1.Invitation) (string, error) {
	state, err := randid.String(randid.Base62, 32)
	if err != nil {
		return "", err
	}
	now := h.now().UTC()
	q := db.New(h.o.Pool)
	if err := q.DropStaleSignIns(ctx, now.Add(-signInLifetime)); err != nil {
		return "", fmt.Errorf("drop stale sign-ins: %w", err)
	}
	if err := q.StartSignIn(ctx, db.StartSignInParams{State: state, Project: inv.Namespace, Invitation: inv.Name, CreatedAt: now}); err != nil {
		return "", fmt.Errorf("record a sign-in: %w", err)
	}
	return state, nil
}

// callback is where Facebook Login returns. Its state is taken once: a replayed or unknown one
// changes nothing and says so. A refusal fails the invitation with its reason; a sign-in
// without Pages fails it with provider_no_pages; otherwise the client picks a Page.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := h.now().UTC()
	row, err := db.New(h.o.Pool).UseSignIn(r.Context(), db.UseSignInParams{State: q.Get("state"), UsedAt: &now,
		FreshAfter: now.Add(-signInLifetime)})
	if errors.Is(err, pgx.ErrNoRows) || q.Get("state") == "" {
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
		headers(w)
		http.Redirect(w, r, invitation.PagePath+token, http.StatusSeeOther)
		return
	}
	if e := q.Get("error"); e != "" {
		// Facebook's answer to Cancel (error_reason user_denied) and to anything else the
		// client did not finish.
		h.failed(w, r, token, inv, &Failure{Reason: v1alpha1.FailureSocialCancelled})
		return
	}
	pages, err := h.o.Connector.MessengerPages(r.Context(), inv, q.Get("code"), h.o.BaseURL+callbackPath)
	if err == nil && len(pages) == 0 {
		err = &Failure{Reason: v1alpha1.FailureProviderNoPages}
	}
	if err == nil {
		err = h.keepPages(r.Context(), q.Get("state"), pages)
	}
	if err != nil {
		h.failed(w, r, token, inv, err)
		return
	}
	v := h.viewOf(r, inv, token)
	v.Pages, v.SignIn = pages, q.Get("state")
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
	return db.New(h.o.Pool).SetSignInPages(ctx, db.SetSignInPagesParams{State: state, Pages: sealed})
}

// pickPage connects the Page the client picked among those of their sign-in.
func (h *Handler) pickPage(w http.ResponseWriter, r *http.Request, token string) {
	inv := h.lookup(w, r, token)
	if inv == nil {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxStepBody)
	state, pageID := r.PostFormValue("signIn"), r.PostFormValue("page")
	now := h.now().UTC()
	sealed, err := db.New(h.o.Pool).TakeSignInPages(r.Context(), db.TakeSignInPagesParams{State: state, Project: inv.Namespace,
		Invitation: inv.Name, FreshAfter: now.Add(-signInLifetime)})
	if errors.Is(err, pgx.ErrNoRows) {
		h.render(w, http.StatusBadRequest, "message.html", h.messageView(r, "badState", "badStateBody"))
		return
	}
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
