package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/zudojs/bank/idem"
)

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	key := r.URL.Query().Get("key")
	if key == "" {
		problem(w, http.StatusBadRequest, "key_required", "add ?key= with the Idempotency-Key of the transfer")
		return
	}
	if !idem.ValidKey(key) {
		// No transfer is ever stored under such a key, and asking again
		// will not change that: a 400, not a 500 to retry.
		problem(w, http.StatusBadRequest, "invalid_key", "a key is 16 to 64 letters, digits, - or _; this one cannot name a transfer")
		return
	}
	rec, found, err := idem.Lookup(r.Context(), s.Keys, user, key)
	if err != nil {
		s.failed(w, err, "the key could not be looked up; try again")
		return
	}
	if !found {
		problem(w, http.StatusNotFound, "key_not_found", "no transfer was received under this key: it never arrived, or it was released after an error, so it is safe to send again")
		return
	}
	out := map[string]any{"key": key, "status": rec.Status}
	if rec.Status == "completed" {
		out["responseStatus"] = rec.ResponseStatus
		out["responseBody"] = json.RawMessage(rec.ResponseBody)
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) account(w http.ResponseWriter, r *http.Request) {
	rawID := r.PathValue("id")
	var a struct {
		ID          int64  `json:"id"`
		Holder      string `json:"holder"`
		Status      string `json:"status"`
		BalanceKobo int64  `json:"balanceKobo"`
	}
	s.owned(w, r, &a, "the account could not be read; try again",
		func() { problem(w, http.StatusNotFound, "account_not_found", "account "+rawID+" was not found") },
		func(ctx context.Context, id int64, owner *int64) error {
			return s.DB.QueryRow(ctx, "SELECT id, owner_id, holder, status, balance_kobo FROM accounts WHERE id = $1::bigint", id).
				Scan(&a.ID, owner, &a.Holder, &a.Status, &a.BalanceKobo)
		})
}

// transferByID is GET /transfers/{id}, where a 201's Location points:
// the transfer, to the user who owns the account it was sent from, and
// 404 to anyone else, as for an id that names no transfer.
func (s *Server) transferByID(w http.ResponseWriter, r *http.Request) {
	rawID := r.PathValue("id")
	var t struct {
		ID         int64 `json:"transferId"`
		From       int64 `json:"from"`
		To         int64 `json:"to"`
		AmountKobo int64 `json:"amountKobo"`
	}
	s.owned(w, r, &t, "the transfer could not be read; try again",
		func() { problem(w, http.StatusNotFound, "transfer_not_found", "transfer "+rawID+" was not found") },
		func(ctx context.Context, id int64, owner *int64) error {
			return s.DB.QueryRow(ctx, `SELECT t.id, t.from_account, t.to_account, t.amount_kobo, a.owner_id
				FROM transfers t JOIN accounts a ON a.id = t.from_account WHERE t.id = $1::bigint`, id).
				Scan(&t.ID, &t.From, &t.To, &t.AmountKobo, owner)
		})
}

// owned answers GET /…/{id} for one row that belongs to a user: read
// fills v and the row's owner; the caller's own row is sent as JSON, and
// anyone else's, a row that is not there and an id that is no number are
// all notFound, so that a stranger cannot tell which ids exist.
func (s *Server) owned(w http.ResponseWriter, r *http.Request, v any, failure string, notFound func(), read func(ctx context.Context, id int64, owner *int64) error) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		notFound()
		return
	}
	var owner int64
	err = read(r.Context(), id, &owner)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && owner != user {
		notFound()
		return
	}
	if err != nil {
		s.failed(w, err, failure)
		return
	}
	b, _ := json.Marshal(v)
	writeJSON(w, http.StatusOK, b)
}
