package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/account"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/billing"
)

// subAccountJSON is a SubAccount on the wire (WIRE.md §9). totalSpent (cents) comes from the
// balance ledger.
type subAccountJSON struct {
	ID          string          `json:"id"`
	CreatedAt   time.Time       `json:"createdAt"`
	Name        string          `json:"name"`
	Status      string          `json:"status"`
	TotalSpent  float64         `json:"totalSpent"`
	CreditLimit *int64          `json:"creditLimit"`
	ExternalID  *string         `json:"externalId"`
	Metadata    json.RawMessage `json:"metadata"`
	APIKey      string          `json:"apiKey,omitempty"`
}

func subAccountView(sa account.SubAccount, spent map[string]billing.Micros) subAccountJSON {
	out := subAccountJSON{TotalSpent: spent[sa.ID].Cents(), ID: sa.ID, CreatedAt: sa.CreatedAt, Name: sa.Name, Status: "active", CreditLimit: sa.CreditLimit, Metadata: sa.Metadata}
	if !sa.Active {
		out.Status = "inactive"
	}
	if sa.ExternalID != "" {
		out.ExternalID = &sa.ExternalID
	}
	if len(out.Metadata) == 0 {
		out.Metadata = json.RawMessage("null")
	}
	return out
}

// spentOf is what each of the sub-accounts has spent, in one read.
func (s *Server) spentOf(r *http.Request, subs ...account.SubAccount) (map[string]billing.Micros, error) {
	if s.balances == nil {
		return nil, nil
	}
	ids := make([]string, len(subs))
	for i, sa := range subs {
		ids[i] = sa.ID
	}
	return s.balances.Spent(r.Context(), ids...)
}

func (s *Server) createSubAccount(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	var in account.CreateInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	parent := projectFrom(r.Context())
	if parent == nil {
		// A key made (with `switchboard apikey`) for a namespace that has no Project yet.
		s.writeError(w, r, forbidden("This key's project is not set up: its namespace has no Project."))
		return
	}
	sa, secret, err := s.accounts.Create(r.Context(), parent, key.Environment, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := subAccountView(sa, nil) // a new sub-account has spent nothing
	out.APIKey = secret
	writeJSON(w, http.StatusCreated, map[string]any{"subAccount": out})
}

func (s *Server) listSubAccounts(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "sub-accounts")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.accounts.List(r.Context(), key.Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := page[subAccountJSON]{Items: []subAccountJSON{}}
	var shown []account.SubAccount
	for _, sa := range all {
		if !after.after(sa.CreatedAt, sa.ID) {
			continue
		}
		if len(shown) == limit {
			last := shown[len(shown)-1]
			out.NextCursor = s.cursors.encode(position{Project: key.Project, List: "sub-accounts", Time: last.CreatedAt.UnixMicro(), ID: last.ID})
			break
		}
		shown = append(shown, sa)
	}
	spent, err := s.spentOf(r, shown...)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, sa := range shown {
		out.Items = append(out.Items, subAccountView(sa, spent))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSubAccount(w http.ResponseWriter, r *http.Request) {
	sa, err := s.accounts.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeSubAccount(w, r, sa)
}

func (s *Server) updateSubAccount(w http.ResponseWriter, r *http.Request) {
	var in account.UpdateInput
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	sa, err := s.accounts.Update(r.Context(), key.Project, r.PathValue("id"), key.Environment, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeSubAccount(w, r, sa)
}

func (s *Server) deactivateSubAccount(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	n, err := s.accounts.Deactivate(r.Context(), key.Project, r.PathValue("id"), key.Environment)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"keysRevoked": n,
		"message":     "Sub-account deactivated; its API keys are revoked.",
	})
}

type keyCreateInput struct {
	Name        string   `json:"name"`
	Environment string   `json:"environment"`
	Permissions []string `json:"permissions"`
}

func (s *Server) createSubAccountKey(w http.ResponseWriter, r *http.Request) {
	var in keyCreateInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	if in.Environment == "" {
		in.Environment = string(key.Environment)
	}
	secret, k, err := s.accounts.CreateKey(r.Context(), key.Project, r.PathValue("id"), key.Environment,
		in.Name, apikey.Environment(in.Environment), in.Permissions)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"apiKey": map[string]any{
		"id": k.ID, "name": k.Name, "environment": k.Environment, "key": secret,
	}})
}

// keyJSON is a listed key (WIRE.md §9): times as Unix milliseconds, never the key itself.
type keyJSON struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Environment string   `json:"environment"`
	KeyPrefix   string   `json:"keyPrefix"`
	CreatedAt   int64    `json:"createdAt"`
	LastUsedAt  *int64   `json:"lastUsedAt"`
	RevokedAt   *int64   `json:"revokedAt"`
	Permissions []string `json:"permissions"`
}

func unixMilli(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	ms := t.UnixMilli()
	return &ms
}

func (s *Server) listSubAccountKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.accounts.ListKeys(r.Context(), keyFrom(r.Context()).Project, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := make([]keyJSON, len(keys))
	for i, k := range keys {
		items[i] = keyJSON{ID: k.ID, Name: k.Name, Environment: string(k.Environment), KeyPrefix: k.Prefix,
			CreatedAt: k.CreatedAt.UnixMilli(), LastUsedAt: unixMilli(k.LastUsedAt), RevokedAt: unixMilli(k.RevokedAt),
			Permissions: k.Permissions}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) revokeSubAccountKey(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	if err := s.accounts.RevokeKey(r.Context(), key.Project, r.PathValue("id"), key.Environment, r.PathValue("keyId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeSubAccount answers {subAccount}.
func (s *Server) writeSubAccount(w http.ResponseWriter, r *http.Request, sa account.SubAccount) {
	spent, err := s.spentOf(r, sa)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"subAccount": subAccountView(sa, spent)})
}
