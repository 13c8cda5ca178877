// Package api is the transfer API: the lesson's handler, which composes
// the bank's transfer with the idempotency store in one transaction, the
// wire of a transfer (the JSON body read into the bank's request, the
// receipt and problem bodies, a status for each of the bank's refusals),
// and the HTTP server around them.
package api

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/idem"
)

// Hooks let a lesson stop a request at an exact point, so that an
// interleaving is choreographed rather than left to timing. Production
// code leaves them nil.
type Hooks struct {
	// AfterClaim runs inside the transaction, once the key is ours and
	// before the transfer: a server that goes silent here holds the key.
	AfterClaim func(ctx context.Context)
	// BeforeStore runs after the transfer, before its response is stored
	// and committed: a copy arriving now finds the key in progress.
	BeforeStore func(ctx context.Context)
}

// Transfers handles POST /transfers for an authenticated user.
type Transfers struct {
	DB    idem.DB
	Keys  *idem.Store
	Hooks Hooks

	holding atomic.Int64
}

// Holding is how many requests hold a claimed key right now (inside their
// work). The torture run pauses a server only while this is above zero.
func (h *Transfers) Holding() int64 { return h.holding.Load() }

// Call is one delivery of a transfer request.
type Call struct {
	UserID int64
	Key    string // the Idempotency-Key header
	Body   []byte
	Now    time.Time
}

// Handle runs the transfer at most once per (user, key). The transfer and
// the stored response commit in the same transaction.
func (h *Transfers) Handle(ctx context.Context, c Call) (idem.Response, error) {
	req := idem.Request{UserID: c.UserID, Key: c.Key, Method: "POST", Path: "/transfers", Body: c.Body, Now: c.Now}
	return h.Keys.Do(ctx, h.DB, req, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		h.holding.Add(1)
		defer h.holding.Add(-1)
		if h.Hooks.AfterClaim != nil {
			h.Hooks.AfterClaim(ctx)
		}
		resp, err := Transfer(ctx, tx, c.UserID, c.Body)
		if err != nil {
			return idem.Response{}, err
		}
		if h.Hooks.BeforeStore != nil {
			h.Hooks.BeforeStore(ctx)
		}
		return resp, nil
	})
}
