// Package idem makes a request safe to retry: an idempotency key names one
// intent, and however many times the request arrives, its work runs once
// and every copy gets the same answer.
//
// The whole flow is one call, Store.Do, so no caller can get the steps in
// the wrong order:
//
//  1. claim the key atomically (INSERT … ON CONFLICT DO NOTHING);
//  2. if someone has it: a different request under the same key is 422, a
//     completed one is replayed, a valid lock is 409, an expired lock is
//     taken over;
//  3. run the caller's work and store its response in one transaction,
//     guarded by the lock id (a fencing token): a holder that lost the
//     lock cannot store, and its whole transaction rolls back;
//  4. on an unexpected error (or a 5xx), give the key back so a retry can
//     try again. Business refusals are real answers: stored and replayed.
//
// idem knows nothing of what the work is; the caller composes it.
package idem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Schema is the key store. Keys are scoped to the user. It creates only
// what is missing, so a server may run it on a database that has it.
const Schema = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  user_id bigint NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('in_progress', 'completed')),
  lock_id text,
  locked_until timestamptz,
  response_status integer,
  response_body jsonb,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at);
CREATE TABLE IF NOT EXISTS processed_events (
  consumer text NOT NULL,
  event_id text NOT NULL,
  object_id text,
  event_type text,
  processed_at timestamptz NOT NULL,
  PRIMARY KEY (consumer, event_id),
  UNIQUE (consumer, object_id, event_type)
);
`

// EnsureSchema creates the key store where it is missing. Servers that
// start together take turns (an advisory lock), since two CREATE TABLE IF
// NOT EXISTS at the same moment can still collide.
func EnsureSchema(ctx context.Context, db DB) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('idempotency_keys'))"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, Schema)
		return err
	})
}

// DefaultLockTTL is how long a claim holds a key before a retry may take
// it over. It must outlive the slowest normal request.
const DefaultLockTTL = 30 * time.Second

// The two writes a key adds to a transfer, exported so that a benchmark
// can run the very same statements without Go or HTTP (bank bench).
const (
	// ClaimSQL claims a key, committed on its own before the work: $1 user,
	// $2 key, $3 request hash, $4 lock id, $5 locked until, $6 now. Of two
	// copies, exactly one inserts.
	ClaimSQL = `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
		VALUES ($1, $2, $3, 'in_progress', $4, $5, $6)
		ON CONFLICT (user_id, key) DO NOTHING RETURNING true`
	// CompleteSQL stores the answer in the work's transaction, fenced by
	// the lock id: $1 user, $2 key, $3 lock id, $4 status, $5 body.
	CompleteSQL = `UPDATE idempotency_keys
		SET status = 'completed', response_status = $4, response_body = $5::jsonb, lock_id = NULL, locked_until = NULL
		WHERE user_id = $1 AND key = $2 AND lock_id = $3 RETURNING response_body`
)

// ErrLockLost means the caller's lock expired and a retry took the key
// over: the fencing token refused to store the response, and the
// caller's transaction, work included, was rolled back.
var ErrLockLost = errors.New("lost the idempotency lock; rolling back")

// DB is a pool or a connection.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store runs requests under idempotency keys.
type Store struct {
	LockTTL   time.Duration // zero means DefaultLockTTL
	NewLockID func() string // zero means 16 random bytes in hex

	// Observe, if set, hears each thing the store does to a key, as it
	// happens (the lab draws them). It must be quick.
	Observe func(ctx context.Context, e Event)
}

// Event is one thing the store did to a key.
type Event struct {
	Kind        EventKind
	LockedUntil time.Time // for Claimed and TookOver
	Status      int       // for Completed: the stored answer's status
}

// EventKind names what the store did.
type EventKind int

const (
	Claimed   EventKind = iota + 1 // the key is ours: in progress, locked
	Replayed                       // the key was completed: its answer is replayed
	Locked                         // the key is in progress under a valid lock: 409
	Reused                         // the key belongs to another request: 422
	TookOver                       // the lock had expired: the key is ours, under a new lock id
	Completed                      // the work and its answer committed together
	Fenced                         // the lock id changed: the answer was refused, the work rolled back
	Released                       // the work failed: the key was given back (deleted)
)

func (s *Store) observe(ctx context.Context, kind EventKind, until time.Time) {
	if s.Observe != nil {
		s.Observe(ctx, Event{Kind: kind, LockedUntil: until})
	}
}

// Request is one delivery of a request.
type Request struct {
	UserID int64
	Key    string
	Method string
	Path   string
	Body   []byte    // JSON; its fingerprint ignores key order and spacing
	Now    time.Time // the caller's clock
}

// Response is what the caller answers.
type Response struct {
	Status   int
	Body     []byte // JSON
	Replayed bool   // the stored answer of an earlier delivery
	TookOver bool   // this delivery took over an expired lock
}

// Work is the caller's side of the transaction. Its response is stored in
// the same transaction, so both commit or neither does.
type Work func(ctx context.Context, tx pgx.Tx) (Response, error)

func (s *Store) ttl() time.Duration {
	if s.LockTTL > 0 {
		return s.LockTTL
	}
	return DefaultLockTTL
}

func (s *Store) lockID() string {
	if s.NewLockID != nil {
		return s.NewLockID()
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ProblemBody is the JSON of every refusal the API sends, idem's own and
// the bank's: an RFC 9457 problem details object (served as
// application/problem+json), whose type names the error, with the
// lesson's code and message kept as the extension members "error" and
// "message", so that a client of the lesson's shape reads it as before.
type ProblemBody struct {
	Type    string `json:"type"`   // ProblemTypes + the code
	Title   string `json:"title"`  // the same for every occurrence of the type
	Status  int    `json:"status"` // the HTTP status it is sent with
	Detail  string `json:"detail"` // the message
	Code    string `json:"error"`
	Message string `json:"message"`
}

// ProblemTypes is where a problem's type points: ProblemTypes + its code,
// a path the API answers with the documentation of that error (RFC 9457
// §3.1.1 allows a relative type, and asks that it be a full path).
const ProblemTypes = "/problems/"

// Problem builds the problem details answers idem gives (and the API's
// others, through it): the code names the problem's type.
func Problem(status int, code, message string) Response {
	body, _ := json.Marshal(ProblemBody{Type: ProblemTypes + code, Title: Title(code), Status: status, Detail: message, Code: code, Message: message})
	return Response{Status: status, Body: body}
}

// Title is a problem type's title, made from its code: idempotency_key_reused
// is "Idempotency-Key reused", invalid_json "Invalid JSON".
func Title(code string) string {
	t := strings.ReplaceAll(code, "_", " ")
	t = strings.Replace(t, "idempotency key", "Idempotency-Key", 1)
	t = strings.ReplaceAll(t, "json", "JSON")
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// The answers Do gives on its own, exported so that the lab's broken
// stores refuse in the same words.

// KeyRequired answers a request with no key, or one that is not 16 to 64
// letters, digits, - or _ (400).
func KeyRequired() Response {
	return Problem(http.StatusBadRequest, "idempotency_key_required",
		"send an Idempotency-Key header of 16 to 64 letters, digits, - or _")
}

// KeyTooLong answers a request whose key is longer than MaxKeyLength
// (400): sent, but refused for its length alone, which a client can fix.
func KeyTooLong(n int) Response {
	return Problem(http.StatusBadRequest, "idempotency_key_too_long",
		fmt.Sprintf("the Idempotency-Key is %d characters long: send one of at most %d (16 to %d letters, digits, - or _)", n, MaxKeyLength, MaxKeyLength))
}

// KeyInvalid answers a request whose Idempotency-Key field is not one
// key: sent twice, or neither a bare key nor one quoted string (400).
// KeyFromHeader tells.
func KeyInvalid() Response {
	return Problem(http.StatusBadRequest, "idempotency_key_invalid",
		`send one Idempotency-Key header with one key, bare (abc…) or as one quoted string ("abc…")`)
}

// KeyReused answers a key sent with a different request (422).
func KeyReused() Response {
	return Problem(http.StatusUnprocessableEntity, "idempotency_key_reused",
		"this Idempotency-Key was already used with a different request")
}

// InProgress answers a copy while the first is still running (409).
func InProgress() Response {
	return Problem(http.StatusConflict, "request_in_progress",
		"an earlier copy of this request is still being processed; retry shortly")
}

// Do runs work at most once per (user, key), as described in the package
// documentation. It returns an error only when something unexpected
// failed; then the key has been released and a retry may succeed.
func (s *Store) Do(ctx context.Context, db DB, r Request, work Work) (Response, error) {
	if len(r.Key) > MaxKeyLength {
		return KeyTooLong(len(r.Key)), nil
	}
	if !ValidKey(r.Key) {
		return KeyRequired(), nil
	}
	hash, err := Fingerprint(r.Method, r.Path, r.Body)
	if err != nil {
		return Problem(http.StatusBadRequest, "invalid_json", "the body is not valid JSON"), nil
	}
	lock := s.lockID()
	until := r.Now.Add(s.ttl())

	var claimed bool
	err = db.QueryRow(ctx, ClaimSQL,
		r.UserID, r.Key, hash, lock, until, r.Now).Scan(&claimed)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Response{}, fmt.Errorf("claiming idempotency key: %w", err)
	}
	tookOver := false
	if !claimed {
		prev, err := s.settle(ctx, db, r, hash, lock, until)
		if err != nil || prev != nil {
			return deref(prev), err
		}
		tookOver = true
		s.observe(ctx, TookOver, until)
	} else {
		s.observe(ctx, Claimed, until)
	}

	resp, err := s.run(ctx, db, r, lock, work)
	resp.TookOver = tookOver
	return resp, err
}

func deref(r *Response) Response {
	if r == nil {
		return Response{}
	}
	return *r
}

// settle decides what a delivery that could not claim the key gets. A nil
// response with a nil error means the lock had expired and is now ours.
func (s *Store) settle(ctx context.Context, db DB, r Request, hash, lock string, until time.Time) (*Response, error) {
	var prevHash, status string
	var code *int
	var body []byte
	err := db.QueryRow(ctx, `SELECT request_hash, status, response_status, response_body
		FROM idempotency_keys WHERE user_id = $1 AND key = $2`, r.UserID, r.Key).Scan(&prevHash, &status, &code, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		// Released between our claim and our look: a retry will claim it.
		s.observe(ctx, Locked, time.Time{})
		resp := InProgress()
		return &resp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading idempotency key: %w", err)
	}
	if prevHash != hash {
		s.observe(ctx, Reused, time.Time{})
		resp := KeyReused()
		return &resp, nil
	}
	if status == "completed" {
		s.observe(ctx, Replayed, time.Time{})
		return &Response{Status: *code, Body: body, Replayed: true}, nil
	}
	tag, err := db.Exec(ctx, `UPDATE idempotency_keys SET lock_id = $3, locked_until = $4
		WHERE user_id = $1 AND key = $2 AND status = 'in_progress' AND locked_until < $5`,
		r.UserID, r.Key, lock, until, r.Now)
	if err != nil {
		return nil, fmt.Errorf("taking over idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		s.observe(ctx, Locked, time.Time{})
		resp := InProgress()
		return &resp, nil
	}
	return nil, nil
}

// run executes the work and stores its answer in one transaction.
func (s *Store) run(ctx context.Context, db DB, r Request, lock string, work Work) (Response, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		s.release(ctx, db, r, lock)
		return Response{}, fmt.Errorf("beginning transaction: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	resp, err := work(ctx, tx)
	if err != nil || resp.Status >= 500 {
		// Says nothing about the request: let a retry try again.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		s.release(ctx, db, r, lock)
		return resp, err
	}
	// The fencing token: only the current holder may complete the key.
	// The stored body comes back as PostgreSQL keeps it (jsonb orders
	// keys its own way), so the first answer and every replay are the
	// same bytes.
	var stored []byte
	err = tx.QueryRow(ctx, CompleteSQL,
		r.UserID, r.Key, lock, resp.Status, string(resp.Body)).Scan(&stored)
	if errors.Is(err, pgx.ErrNoRows) {
		s.observe(ctx, Fenced, time.Time{})
		return Response{}, ErrLockLost
	}
	if err != nil {
		s.release(ctx, db, r, lock)
		return Response{}, fmt.Errorf("storing response: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		// If the commit did happen, the key is completed and has no lock
		// id any more, so this release deletes nothing.
		s.release(ctx, db, r, lock)
		return Response{}, fmt.Errorf("committing: %w", err)
	}
	if s.Observe != nil {
		s.Observe(ctx, Event{Kind: Completed, Status: resp.Status})
	}
	return Response{Status: resp.Status, Body: stored}, nil
}

// release gives the key back, if it is still ours. It is observed only
// when the key was given back: a server whose connection died (a crash)
// cannot, and its key stays in progress until its lock expires.
func (s *Store) release(ctx context.Context, db DB, r Request, lock string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	tag, err := db.Exec(rctx, "DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND lock_id = $3", r.UserID, r.Key, lock)
	if err == nil && tag.RowsAffected() > 0 {
		s.observe(ctx, Released, time.Time{})
	}
}

// MinKeyLength and MaxKeyLength bound a key's length.
const (
	MinKeyLength = 16
	MaxKeyLength = 64
)

// ValidKey reports whether key is 16 to 64 letters, digits, - or _.
func ValidKey(key string) bool {
	return len(key) >= MinKeyLength && len(key) <= MaxKeyLength && keyChars(key)
}

// keyChars reports whether s is made of letters, digits, - and _ only.
func keyChars(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// Record is what the store knows about one key.
type Record struct {
	Status         string // "in_progress" or "completed"
	ResponseStatus int    // when completed
	ResponseBody   []byte // when completed
}

// Lookup reads the caller's own key. found is false for a key this user
// never sent (or whose record was pruned).
func Lookup(ctx context.Context, db DB, userID int64, key string) (rec Record, found bool, err error) {
	var code *int
	err = db.QueryRow(ctx, "SELECT status, response_status, response_body FROM idempotency_keys WHERE user_id = $1 AND key = $2",
		userID, key).Scan(&rec.Status, &code, &rec.ResponseBody)
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("looking up idempotency key: %w", err)
	}
	if code != nil {
		rec.ResponseStatus = *code
	}
	return rec, true, nil
}
