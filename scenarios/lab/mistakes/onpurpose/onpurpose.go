// Package onpurpose holds the code made wrong on purpose: each server
// makes one mistake of the lab's catalogue (package mistakes). The
// mistakes' stories (bank mistake) and bank serve --mistake run them;
// nothing else should. The correct code is idem.Store and api.Transfers.
package onpurpose

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
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// Server is a mistake of the catalogue that `bank serve --mistake NAME`
// (and so `bank torture --mistake` and the mistakes' stories that start
// bank serve) runs with, on real servers.
type Server struct {
	mistakes.Mistake
	New func(db idem.DB, ttl time.Duration) api.Handler
}

// Servers is the one table --mistake resolves its names through.
var Servers = []Server{
	{mistakes.Must("memory-keys"),
		func(db idem.DB, _ time.Duration) api.Handler { return &MemoryKeys{DB: db} }},
	{mistakes.Must("no-keys"),
		func(db idem.DB, _ time.Duration) api.Handler { return NoKeys{DB: db} }},
	{mistakes.Must("no-fencing"),
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &LockStore{DB: db, Mistake: NoFencing, TTL: ttl}
		}},
	{mistakes.Must("no-lock-expiry"),
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &LockStore{DB: db, Mistake: NoExpiry, TTL: ttl}
		}},
	{mistakes.Must("second-transaction"),
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &LockStore{DB: db, Mistake: SecondTransaction, TTL: ttl}
		}},
	{mistakes.Must("replay-500"),
		func(db idem.DB, ttl time.Duration) api.Handler {
			return &LockStore{DB: db, Mistake: StoreFailures, TTL: ttl}
		}},
}

// Lookup finds a server made wrong on purpose by its mistake's name.
func Lookup(name string) (Server, bool) {
	for _, b := range Servers {
		if b.Name == name {
			return b, true
		}
	}
	return Server{}, false
}

// Names lists the mistakes served on purpose, in the table's order.
func Names() []string {
	names := make([]string, len(Servers))
	for i, b := range Servers {
		names[i] = b.Name
	}
	return names
}

func randomLock() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TransferOnce makes the transfer in a transaction of its own, and
// nothing else: no key is looked at.
func TransferOnce(ctx context.Context, db idem.DB, c api.Call) (idem.Response, error) {
	var resp idem.Response
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) (err error) {
		resp, err = api.Transfer(ctx, tx, c.UserID, c.Body)
		return err
	})
	return resp, err
}

// NoKeys ignores the Idempotency-Key: every delivery is a new transfer.
type NoKeys struct{ DB idem.DB }

func (n NoKeys) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	return TransferOnce(ctx, n.DB, c)
}

// KeyMistake is the rule StoredKeys gets wrong.
type KeyMistake int

const (
	Unscoped      KeyMistake = iota + 1 // keys looked up without their user
	NoFingerprint                       // whatever was stored under the key is replayed, whatever the request
	Replay500                           // server errors are stored and replayed as final
)

// Observer hears each step a broken store takes on a key, as idem.Store's
// Observe does (the lab draws them): as the step of the correct store
// nearest to it (Claimed where it claims, Released where the correct
// store would release the key), and, where it takes that step its own
// broken way, that way in words (own; "" for a step the correct store
// takes alike).
type Observer func(ctx context.Context, e idem.Event, own string)

func (o Observer) step(ctx context.Context, kind idem.EventKind, until time.Time, own string) {
	if o != nil {
		o(ctx, idem.Event{Kind: kind, LockedUntil: until}, own)
	}
}

// StoredKeys keeps keys in a table, but gets one rule wrong. It has no
// claim: a key is written with its answer, in the transfer's transaction.
type StoredKeys struct {
	DB      idem.DB
	Mistake KeyMistake
	Observe Observer
}

func (s *StoredKeys) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	user := c.UserID
	if s.Mistake == Unscoped {
		user = 0 // every user shares one key space
	}
	hash, err := idem.Fingerprint("POST", "/transfers", c.Body)
	if err != nil {
		return idem.Problem(400, "invalid_json", "the body is not valid JSON"), nil
	}
	var status int
	var body []byte
	var prevHash string
	err = s.DB.QueryRow(ctx, "SELECT response_status, response_body, request_hash FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND status = 'completed'",
		user, c.Key).Scan(&status, &body, &prevHash)
	if err == nil {
		switch {
		case s.Mistake == NoFingerprint:
			s.Observe.step(ctx, idem.Replayed, time.Time{}, "key completed: replay its answer, the request never compared")
		case prevHash != hash && s.Mistake == Unscoped:
			s.Observe.step(ctx, idem.Reused, time.Time{}, "key string found, stored for no user: it holds a different request")
			return idem.KeyReused(), nil
		case prevHash != hash:
			s.Observe.step(ctx, idem.Reused, time.Time{}, "")
			return idem.KeyReused(), nil
		case s.Mistake == Unscoped:
			s.Observe.step(ctx, idem.Replayed, time.Time{}, "key string found, stored for no user: the same request: replay its answer")
		case status >= 500:
			s.Observe.step(ctx, idem.Replayed, time.Time{}, "key completed: replay the stored 500")
		default:
			s.Observe.step(ctx, idem.Replayed, time.Time{}, "")
		}
		return idem.Response{Status: status, Body: body, Replayed: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return idem.Response{}, err
	}
	var resp idem.Response
	err = pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		var err error
		resp, err = api.Transfer(ctx, tx, c.UserID, c.Body)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, response_status, response_body, created_at)
			VALUES ($1, $2, $3, 'completed', $4, $5::jsonb, $6)`, user, c.Key, hash, resp.Status, string(resp.Body), c.Now)
		return err
	})
	made := "transfer"
	if resp.Status >= 400 { // a refusal: nothing made, the answer stored
		made = fmt.Sprintf("no transfer, refusal %d", resp.Status)
	}
	switch {
	case err == nil && s.Mistake == Unscoped:
		s.Observe.step(ctx, idem.Completed, time.Time{}, "no such key string: "+made+" + answer stored under it, for no user: COMMIT")
	case err == nil:
		s.Observe.step(ctx, idem.Completed, time.Time{}, "no such key: "+made+" + key and answer stored: COMMIT")
	case s.Mistake == Replay500:
		// The outage's answer is stored as if it were final.
		s.Observe.step(ctx, idem.Released, time.Time{}, "the transfer failed: ROLLBACK")
		resp = idem.Problem(500, "internal_error", "something went wrong")
		_, err = s.DB.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, response_status, response_body, created_at)
			VALUES ($1, $2, $3, 'completed', 500, $4::jsonb, $5)`, user, c.Key, hash, string(resp.Body), c.Now)
		if err == nil {
			s.Observe.step(ctx, idem.Released, time.Time{}, "500 stored under the key as its final answer: COMMIT")
		}
	}
	return resp, err
}

// LockMistake is the rule LockStore leaves out.
type LockMistake int

const (
	NoExpiry          LockMistake = iota + 1 // a lock is for ever: no retry may take it over
	NoFencing                                // a key is completed without checking that the lock is still ours
	SecondTransaction                        // the response is stored in a transaction of its own, after the transfer's
	StoreFailures                            // an unexpected error is stored under the key as its answer, and replayed
)

// LockStore is the lesson's key store with one rule of its locks left out
// (a LockMistake).
type LockStore struct {
	DB      idem.DB
	Mistake LockMistake
	TTL     time.Duration
	// Hooks.BeforeStore runs before the response is stored: inside the
	// transaction, or, for SecondTransaction, between the two commits.
	Hooks   api.Hooks
	Observe Observer
	holding atomic.Int64
}

// Holding is how many requests hold a claimed key right now.
func (s *LockStore) Holding() int64 { return s.holding.Load() }

// It is long because it mirrors idem.Store.Do step for step, each step
// with the mistake it makes on purpose beside it, so that the two can be
// read side by side.
func (s *LockStore) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	if !idem.ValidKey(c.Key) {
		return idem.KeyRequired(), nil
	}
	hash, err := idem.Fingerprint("POST", "/transfers", c.Body)
	if err != nil {
		return idem.Problem(400, "invalid_json", "the body is not valid JSON"), nil
	}
	lock := randomLock()
	until := c.Now.Add(s.TTL)
	var claimed bool
	err = s.DB.QueryRow(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
		VALUES ($1, $2, $3, 'in_progress', $4, $5, $6) ON CONFLICT DO NOTHING RETURNING true`,
		c.UserID, c.Key, hash, lock, until, c.Now).Scan(&claimed)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return idem.Response{}, err
	}
	switch {
	case claimed && s.Mistake == NoExpiry:
		s.Observe.step(ctx, idem.Claimed, until, "claim the key (locked, with no expiry)")
	case claimed:
		s.Observe.step(ctx, idem.Claimed, until, "")
	}
	if !claimed {
		var status, prevHash string
		var code *int
		var body []byte
		if err := s.DB.QueryRow(ctx, "SELECT status, request_hash, response_status, response_body FROM idempotency_keys WHERE user_id = $1 AND key = $2",
			c.UserID, c.Key).Scan(&status, &prevHash, &code, &body); err != nil {
			return idem.Response{}, err
		}
		if prevHash != hash {
			s.Observe.step(ctx, idem.Reused, time.Time{}, "")
			return idem.KeyReused(), nil
		}
		if status == "completed" {
			if *code >= 500 {
				s.Observe.step(ctx, idem.Replayed, time.Time{}, "key completed: replay the stored 500")
			} else {
				s.Observe.step(ctx, idem.Replayed, time.Time{}, "")
			}
			return idem.Response{Status: *code, Body: body, Replayed: true}, nil
		}
		takeover := "locked_until < $4"
		if s.Mistake == NoExpiry {
			takeover = "false AND $4::timestamptz IS NULL" // a lock is for ever
		}
		tag, err := s.DB.Exec(ctx, `UPDATE idempotency_keys SET lock_id = $3, locked_until = $5
			WHERE user_id = $1 AND key = $2 AND status = 'in_progress' AND `+takeover, c.UserID, c.Key, lock, c.Now, until)
		if err != nil {
			return idem.Response{}, err
		}
		if tag.RowsAffected() == 0 {
			if s.Mistake == NoExpiry {
				s.Observe.step(ctx, idem.Locked, time.Time{}, "key in progress, its lock never expires")
			} else {
				s.Observe.step(ctx, idem.Locked, time.Time{}, "")
			}
			return idem.InProgress(), nil
		}
		s.Observe.step(ctx, idem.TookOver, until, "")
	}
	complete := `UPDATE idempotency_keys SET status = 'completed', response_status = $4, response_body = $5::jsonb
		WHERE user_id = $1 AND key = $2 AND lock_id = $3`
	if s.Mistake == NoFencing {
		complete = `UPDATE idempotency_keys SET status = 'completed', response_status = $4, response_body = $5::jsonb
		WHERE user_id = $1 AND key = $2 AND $3::text IS NOT NULL` // whoever finishes, wins
	}
	var resp idem.Response
	tookOver := !claimed
	err = pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		s.holding.Add(1)
		defer s.holding.Add(-1)
		if s.Hooks.AfterClaim != nil {
			s.Hooks.AfterClaim(ctx)
		}
		var err error
		resp, err = api.Transfer(ctx, tx, c.UserID, c.Body)
		if err != nil {
			return err
		}
		if s.Mistake == SecondTransaction {
			return nil
		}
		if s.Hooks.BeforeStore != nil {
			s.Hooks.BeforeStore(ctx)
		}
		tag, err := tx.Exec(ctx, complete, c.UserID, c.Key, lock, resp.Status, string(resp.Body))
		if err == nil && tag.RowsAffected() == 0 {
			err = idem.ErrLockLost
		}
		return err
	})
	switch {
	case s.Mistake == SecondTransaction && err == nil:
		s.Observe.step(ctx, idem.Completed, time.Time{}, "transfer: COMMIT, with no answer stored")
	case errors.Is(err, idem.ErrLockLost):
		s.Observe.step(ctx, idem.Fenced, time.Time{}, "")
	case err != nil && s.Mistake == StoreFailures:
		s.Observe.step(ctx, idem.Released, time.Time{}, "the transfer failed: ROLLBACK")
	case err != nil:
		// A crash, say: a dead server tells nothing.
	case s.Mistake == NoFencing:
		s.Observe.step(ctx, idem.Completed, time.Time{}, "transfer + answer stored, lock id not checked: COMMIT")
	default:
		s.Observe.step(ctx, idem.Completed, time.Time{}, "")
	}
	if err != nil && s.Mistake == StoreFailures {
		// The failure says nothing about the request, yet it is stored as
		// the request's answer: every retry of this key now gets it back.
		resp = idem.Problem(500, "internal_error", "something went wrong")
		if _, serr := s.DB.Exec(ctx, complete, c.UserID, c.Key, lock, resp.Status, string(resp.Body)); serr != nil {
			return idem.Response{}, errors.Join(err, serr)
		}
		s.Observe.step(ctx, idem.Released, time.Time{}, "500 stored under the key as its final answer: COMMIT")
		return resp, nil
	}
	resp.TookOver = tookOver
	if err != nil || s.Mistake != SecondTransaction {
		return resp, err
	}
	if s.Hooks.BeforeStore != nil {
		s.Hooks.BeforeStore(ctx)
	}
	_, err = s.DB.Exec(ctx, complete, c.UserID, c.Key, lock, resp.Status, string(resp.Body))
	if err == nil {
		s.Observe.step(ctx, idem.Completed, time.Time{}, "answer stored, in a second transaction: COMMIT")
	}
	return resp, err
}

// MemoryKeys (bank serve --mistake memory-keys) keeps keys in a map in this process: gone when the process
// restarts, and invisible to the other copies of the server. Everything
// else it does right (a key required, a fingerprint, one copy at a time),
// so that the memory is the only thing wrong with it.
type MemoryKeys struct {
	DB   idem.DB
	mu   sync.Mutex
	seen map[string]*memoryKey
}

type memoryKey struct {
	hash string
	resp idem.Response
	done bool
}

func (m *MemoryKeys) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	if !idem.ValidKey(c.Key) {
		return idem.KeyRequired(), nil
	}
	hash, err := idem.Fingerprint("POST", "/transfers", c.Body)
	if err != nil {
		return idem.Problem(400, "invalid_json", "the body is not valid JSON"), nil
	}
	id := fmt.Sprint(c.UserID, "/", c.Key)
	m.mu.Lock()
	prev, ok := m.seen[id]
	if !ok {
		if m.seen == nil {
			m.seen = map[string]*memoryKey{}
		}
		m.seen[id] = &memoryKey{hash: hash}
	}
	m.mu.Unlock()
	switch {
	case ok && prev.hash != hash:
		return idem.KeyReused(), nil
	case ok && !prev.done:
		return idem.InProgress(), nil
	case ok:
		resp := prev.resp
		resp.Replayed = true
		return resp, nil
	}
	resp, err := TransferOnce(ctx, m.DB, c)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil || resp.Status >= 500 {
		delete(m.seen, id) // free for a retry
	} else {
		m.seen[id].resp, m.seen[id].done = resp, true
	}
	return resp, err
}
