package httpapi

import (
	"net/http"

	"github.com/switchboard-io/switchboard/internal/billing"
)

// balanceJSON is GET /v1/balance (WIRE.md §9): amounts in cents.
type balanceJSON struct {
	Balance      float64 `json:"balance"`
	Currency     string  `json:"currency"`
	CreditLimit  *int64  `json:"creditLimit"`
	IsSubAccount bool    `json:"isSubAccount"`
	TotalSpent   float64 `json:"totalSpent"`
}

func balanceView(v billing.View) balanceJSON {
	return balanceJSON{Balance: v.Balance.Cents(), Currency: "USD", CreditLimit: v.CreditLimit, IsSubAccount: v.IsSubAccount,
		TotalSpent: v.TotalSpent.Cents()}
}

func (s *Server) getBalance(w http.ResponseWriter, r *http.Request) {
	v, err := s.balances.Balance(r.Context(), keyFrom(r.Context()).Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, balanceView(v))
}

func (s *Server) getSubAccountBalance(w http.ResponseWriter, r *http.Request) {
	sa, err := s.accounts.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.balances.Balance(r.Context(), sa.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, balanceView(v))
}
