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
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// A Break is a mistake that `bank serve --break NAME` (and so `bank
// torture --break`) can run with, on real servers.
type Break struct {
	Name    string
	Summary string
	New     func(db idem.DB, ttl time.Duration) api.Handler
}

// Breaks is the one table --break resolves its names through.
var Breaks = []Break{
	{"memory-keys", "keys in a map in each server's memory: lost on restart, not shared",
		func(db idem.DB, _ time.Duration) api.Handler { return &memoryKeys{db: db} }},
	{"no-keys", "the Idempotency-Key ignored: every delivery is a new transfer",
		func(db idem.DB, _ time.Duration) api.Handler { return noKeys{db: db} }},
	{"no-fencing", "locks that expire, with no fencing token",
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &leakyStore{db: db, mistake: noFencing, ttl: ttl}
		}},
	{"no-lock-expiry", "locks that never expire: a crashed request's key is stuck for ever",
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &leakyStore{db: db, mistake: noExpiry, ttl: ttl}
		}},
	{"second-transaction", "the answer stored in a transaction of its own, after the transfer's commit",
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &leakyStore{db: db, mistake: secondTransaction, ttl: ttl}
		}},
	{"replay-500", "a server error stored under the key and replayed to every retry",
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &leakyStore{db: db, mistake: storeFailures, ttl: ttl}
		}},
}

// LookupBreak finds a break by name.
func LookupBreak(name string) (Break, bool) {
	for _, b := range Breaks {
		if b.Name == name {
			return b, true
		}
	}
	return Break{}, false
}

// BreakNames lists the breaks' names, in the table's order.
func BreakNames() []string {
	names := make([]string, len(Breaks))
	for i, b := range Breaks {
		names[i] = b.Name
	}
	return names
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

// keyMistake is the rule storedKeys gets wrong.
type keyMistake int

const (
	unscoped      keyMistake = iota + 1 // keys looked up without their user
	noFingerprint                       // whatever was stored under the key is replayed, whatever the request
	replay500                           // server errors are stored and replayed as final
)

// storedKeys keeps keys in a table, but gets one rule wrong.
type storedKeys struct {
	db      idem.DB
	mistake keyMistake
}

func (s *storedKeys) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	user := c.UserID
	if s.mistake == unscoped {
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
		o, err := bank.Transfer(ctx, tx, c.UserID, c.Body)
		if err != nil {
			return err
		}
		resp = idem.Response{Status: o.Status, Body: o.Body()}
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, response_status, response_body, created_at)
			VALUES ($1, $2, '', 'completed', $3, $4::jsonb, $5)`, user, c.Key, resp.Status, string(resp.Body), c.Now)
		return err
	})
	if err != nil && s.mistake == replay500 {
		// The outage's answer is stored as if it were final.
		resp = idem.Problem(500, "internal_error", "something went wrong")
		_, err = s.db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, response_status, response_body, created_at)
			VALUES ($1, $2, '', 'completed', 500, $3::jsonb, $4)`, user, c.Key, string(resp.Body), c.Now)
	}
	return resp, err
}

// lockMistake is the rule leakyStore leaves out.
type lockMistake int

const (
	noExpiry          lockMistake = iota + 1 // a lock is for ever: no retry may take it over
	noFencing                                // a key is completed without checking that the lock is still ours
	secondTransaction                        // the response is stored in a transaction of its own, after the transfer's
	storeFailures                            // an unexpected error is stored under the key as its answer, and replayed
)

// leakyStore is the lesson's key store with one rule left out.
type leakyStore struct {
	db      idem.DB
	mistake lockMistake
	ttl     time.Duration
	// hooks.BeforeStore runs before the response is stored: inside the
	// transaction, or, for secondTransaction, between the two commits.
	hooks   api.Hooks
	holding atomic.Int64
}

// Holding is how many requests hold a claimed key right now.
func (s *leakyStore) Holding() int64 { return s.holding.Load() }

func (s *leakyStore) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	if !idem.ValidKey(c.Key) {
		return idem.KeyRequired(), nil
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
			return idem.KeyReused(), nil
		}
		if status == "completed" {
			return idem.Response{Status: *code, Body: body, Replayed: true}, nil
		}
		takeover := "locked_until < $4"
		if s.mistake == noExpiry {
			takeover = "false AND $4::timestamptz IS NULL" // a lock is for ever
		}
		tag, err := s.db.Exec(ctx, `UPDATE idempotency_keys SET lock_id = $3, locked_until = $5
			WHERE user_id = $1 AND key = $2 AND status = 'in_progress' AND `+takeover, c.UserID, c.Key, lock, c.Now, until)
		if err != nil {
			return idem.Response{}, err
		}
		if tag.RowsAffected() == 0 {
			return idem.InProgress(), nil
		}
	}
	complete := `UPDATE idempotency_keys SET status = 'completed', response_status = $4, response_body = $5::jsonb
		WHERE user_id = $1 AND key = $2 AND lock_id = $3`
	if s.mistake == noFencing {
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
		if s.mistake == secondTransaction {
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
	if err != nil && s.mistake == storeFailures {
		// The failure says nothing about the request, yet it is stored as
		// the request's answer: every retry of this key now gets it back.
		resp = idem.Problem(500, "internal_error", "something went wrong")
		if _, serr := s.db.Exec(ctx, complete, c.UserID, c.Key, lock, resp.Status, string(resp.Body)); serr != nil {
			return idem.Response{}, errors.Join(err, serr)
		}
		return resp, nil
	}
	if err != nil || s.mistake != secondTransaction {
		return resp, err
	}
	if s.hooks.BeforeStore != nil {
		s.hooks.BeforeStore(ctx)
	}
	_, err = s.db.Exec(ctx, complete, c.UserID, c.Key, lock, resp.Status, string(resp.Body))
	return resp, err
}
