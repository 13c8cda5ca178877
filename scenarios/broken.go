package scenarios

// ============================================================
//  BROKEN ON PURPOSE. Everything in this file is wrong, each
//  piece in one of the ways the lesson's table of mistakes
//  lists. The correct code is idem.Store and api.Transfers.
// ============================================================

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// BrokenModes are the mistakes `bank serve --break` can run with.
var BrokenModes = []string{"memory-keys", "no-keys", "no-fencing"}

// BrokenHandler returns a transfer handler that makes one mistake, for
// `bank serve --break`.
func BrokenHandler(mode string, db idem.DB, ttl time.Duration) (api.Handler, error) {
	switch mode {
	case "memory-keys":
		return &memoryKeys{db: db}, nil
	case "no-keys":
		return noKeys{db: db}, nil
	case "no-fencing":
		return &leakyStore{db: db, mistake: "no-fencing", ttl: ttl}, nil
	}
	names := append([]string(nil), BrokenModes...)
	sort.Strings(names)
	return nil, fmt.Errorf("unknown mistake %q; choose one of %s", mode, strings.Join(names, ", "))
}

func randomLock() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func transferOnce(ctx context.Context, db idem.DB, c api.Call) (idem.Response, error) {
	var o bank.Outcome
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) (err error) {
		o, err = bank.Transfer(ctx, tx, c.UserID, c.Body)
		return err
	})
	return idem.Response{Status: o.Status, Body: o.Body()}, err
}

// noKeys ignores the Idempotency-Key: every delivery is a new transfer.
type noKeys struct{ db idem.DB }

func (n noKeys) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	return transferOnce(ctx, n.db, c)
}

// memoryKeys keeps keys in a map in this process: gone when the process
// restarts, and invisible to the other copies of the server.
type memoryKeys struct {
	db   idem.DB
	mu   sync.Mutex
	seen map[string]idem.Response
}

func (m *memoryKeys) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	id := fmt.Sprint(c.UserID, "/", c.Key)
	m.mu.Lock()
	prev, ok := m.seen[id]
	m.mu.Unlock()
	if ok {
		prev.Replayed = true
		return prev, nil
	}
	resp, err := transferOnce(ctx, m.db, c)
	if err == nil {
		m.mu.Lock()
		if m.seen == nil {
			m.seen = map[string]idem.Response{}
		}
		m.seen[id] = resp
		m.mu.Unlock()
	}
	return resp, err
}

// storedKeys keeps keys in a table, but gets one rule wrong: "unscoped"
// looks keys up without the user, "no-fingerprint" replays whatever was
// stored under the key, "replay-500" stores and replays server errors.
type storedKeys struct {
	db      idem.DB
	mistake string
	// Fail, if set, runs inside the transfer's transaction: the lab uses
	// it to cause a real database error (a brief outage).
	Fail func(ctx context.Context, tx pgx.Tx) error
}

func (s *storedKeys) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	user := c.UserID
	if s.mistake == "unscoped" {
		user = 0 // every user shares one key space
	}
	var status int
	var body []byte
	err := s.db.QueryRow(ctx, "SELECT response_status, response_body FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND status = 'completed'",
		user, c.Key).Scan(&status, &body)
	if err == nil {
		return idem.Response{Status: status, Body: body, Replayed: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return idem.Response{}, err
	}
	var resp idem.Response
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if s.Fail != nil {
			if err := s.Fail(ctx, tx); err != nil {
				return err
			}
		}
		o, err := bank.Transfer(ctx, tx, c.UserID, c.Body)
		if err != nil {
			return err
		}
		resp = idem.Response{Status: o.Status, Body: o.Body()}
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, response_status, response_body, created_at)
			VALUES ($1, $2, '', 'completed', $3, $4::jsonb, $5)`, user, c.Key, resp.Status, string(resp.Body), c.Now)
		return err
	})
	if err != nil && s.mistake == "replay-500" {
		// The outage's answer is stored as if it were final.
		resp = idem.Problem(500, "internal_error", "something went wrong")
		_, err = s.db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, response_status, response_body, created_at)
			VALUES ($1, $2, '', 'completed', 500, $3::jsonb, $4)`, user, c.Key, string(resp.Body), c.Now)
	}
	return resp, err
}

// leakyStore is the lesson's key store with one rule removed: "no-expiry"
// never lets a retry take over a lock, "no-fencing" completes a key
// without checking that the lock is still ours, "second-transaction"
// stores the response in a transaction of its own after the transfer's.
type leakyStore struct {
	db      idem.DB
	mistake string
	ttl     time.Duration
	// hooks.BeforeStore runs before the response is stored: inside the
	// transaction, or, for second-transaction, between the two commits.
	hooks   api.Hooks
	holding atomic.Int64
}

// Holding is how many requests hold a claimed key right now.
func (s *leakyStore) Holding() int64 { return s.holding.Load() }

func (s *leakyStore) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	if !idem.ValidKey(c.Key) {
		return idem.Problem(400, "idempotency_key_required", "send an Idempotency-Key header"), nil
	}
	hash, err := idem.Fingerprint("POST", "/transfers", c.Body)
	if err != nil {
		return idem.Problem(400, "invalid_json", "the body is not valid JSON"), nil
	}
	lock := randomLock()
	until := c.Now.Add(s.ttl)
	var claimed bool
	err = s.db.QueryRow(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
		VALUES ($1, $2, $3, 'in_progress', $4, $5, $6) ON CONFLICT DO NOTHING RETURNING true`,
		c.UserID, c.Key, hash, lock, until, c.Now).Scan(&claimed)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return idem.Response{}, err
	}
	if !claimed {
		var status, prevHash string
		var code *int
		var body []byte
		if err := s.db.QueryRow(ctx, "SELECT status, request_hash, response_status, response_body FROM idempotency_keys WHERE user_id = $1 AND key = $2",
			c.UserID, c.Key).Scan(&status, &prevHash, &code, &body); err != nil {
			return idem.Response{}, err
		}
		if prevHash != hash {
			return idem.Problem(422, "idempotency_key_reused", "this Idempotency-Key was already used with a different request"), nil
		}
		if status == "completed" {
			return idem.Response{Status: *code, Body: body, Replayed: true}, nil
		}
		takeover := "locked_until < $4"
		if s.mistake == "no-expiry" {
			takeover = "false AND $4::timestamptz IS NULL" // a lock is for ever
		}
		tag, err := s.db.Exec(ctx, `UPDATE idempotency_keys SET lock_id = $3, locked_until = $5
			WHERE user_id = $1 AND key = $2 AND status = 'in_progress' AND `+takeover, c.UserID, c.Key, lock, c.Now, until)
		if err != nil {
			return idem.Response{}, err
		}
		if tag.RowsAffected() == 0 {
			return idem.Problem(409, "request_in_progress", "an earlier copy of this request is still being processed; retry shortly"), nil
		}
	}
	complete := `UPDATE idempotency_keys SET status = 'completed', response_status = $4, response_body = $5::jsonb
		WHERE user_id = $1 AND key = $2 AND lock_id = $3`
	if s.mistake == "no-fencing" {
		complete = `UPDATE idempotency_keys SET status = 'completed', response_status = $4, response_body = $5::jsonb
		WHERE user_id = $1 AND key = $2 AND $3::text IS NOT NULL` // whoever finishes, wins
	}
	var resp idem.Response
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		s.holding.Add(1)
		defer s.holding.Add(-1)
		if s.hooks.AfterClaim != nil {
			s.hooks.AfterClaim(ctx)
		}
		o, err := bank.Transfer(ctx, tx, c.UserID, c.Body)
		if err != nil {
			return err
		}
		resp = idem.Response{Status: o.Status, Body: o.Body()}
		if s.mistake == "second-transaction" {
			return nil
		}
		if s.hooks.BeforeStore != nil {
			s.hooks.BeforeStore(ctx)
		}
		tag, err := tx.Exec(ctx, complete, c.UserID, c.Key, lock, resp.Status, string(resp.Body))
		if err == nil && tag.RowsAffected() == 0 {
			err = idem.ErrLockLost
		}
		return err
	})
	if err != nil || s.mistake != "second-transaction" {
		return resp, err
	}
	if s.hooks.BeforeStore != nil {
		s.hooks.BeforeStore(ctx)
	}
	_, err = s.db.Exec(ctx, complete, c.UserID, c.Key, lock, resp.Status, string(resp.Body))
	return resp, err
}
