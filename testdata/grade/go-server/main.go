// Command goserver is a correct transfer server in Go, written from the
// contract printed by `bank grade --contract` alone: idempotent money
// transfers over PostgreSQL, with keys scoped to their user, a request
// fingerprint, an atomic claim, lock expiry with takeover, a fencing token
// checked inside the transfer's transaction, and the answer stored in that
// same transaction.
//
// Run it under the grader:
//
//	go build -o server . && bank grade -- ./server
//
// It reads DATABASE_URL, PORT and LOCK_TTL_MS from the environment and
// listens on 127.0.0.1:$PORT.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

const schema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	user_id         bigint      NOT NULL,
	key             text        NOT NULL,
	fingerprint     text        NOT NULL,
	status          text        NOT NULL DEFAULT 'in_progress'
	                CHECK (status IN ('in_progress', 'completed')),
	lock_token      text,
	locked_until    timestamptz,
	response_status integer,
	response_body   jsonb,
	created_at      timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (user_id, key))`

// The claim: a new key is inserted; an existing one is taken over only when
// it is still in progress, its lock has expired and the request is the same.
const claimSQL = `INSERT INTO idempotency_keys AS k (user_id, key, fingerprint, lock_token, locked_until)
VALUES ($1, $2, $3, $4, now() + $5::float8 * interval '1 millisecond')
ON CONFLICT (user_id, key) DO UPDATE
	SET lock_token = EXCLUDED.lock_token, locked_until = EXCLUDED.locked_until
	WHERE k.status = 'in_progress' AND k.locked_until < now() AND k.fingerprint = EXCLUDED.fingerprint
RETURNING (xmax = 0)`

// The fenced completion: succeeds only while this request holds the lock.
const completeSQL = `UPDATE idempotency_keys
SET status = 'completed', response_status = $4, response_body = $5, lock_token = NULL, locked_until = NULL
WHERE user_id = $1 AND key = $2 AND lock_token = $3 AND status = 'in_progress'`

const releaseSQL = `DELETE FROM idempotency_keys
WHERE user_id = $1 AND key = $2 AND lock_token = $3 AND status = 'in_progress'`

var (
	users      = map[string]int64{"token-ada": 1, "token-bola": 2, "token-chidi": 3}
	keyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)
	errLost    = errors.New("lock lost to a takeover")
)

type server struct {
	db    *pgxpool.Pool
	ttlMS int64
}

type transferRequest struct {
	From       int64 `json:"from"`
	To         int64 `json:"to"`
	AmountKobo int64 `json:"amountKobo"`
}

// answer is a response that may be stored under a key and replayed.
type answer struct {
	status int
	body   []byte
}

func errorAnswer(status int, code, message string) answer {
	body, _ := json.Marshal(map[string]string{"error": code, "message": message})
	return answer{status, body}
}

func (a answer) write(w http.ResponseWriter, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if a.status == http.StatusConflict {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

func (s *server) user(w http.ResponseWriter, r *http.Request) (int64, bool) {
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	id, known := users[token]
	if !found || !known {
		errorAnswer(401, "unauthorized", "missing or unknown bearer token").write(w, false)
	}
	return id, found && known
}

// fingerprint hashes the method, the path and the body with its keys sorted
// (encoding/json marshals maps in key order; numbers keep their text).
func fingerprint(method, path string, raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(method + " " + path + "\n" + string(canonical)))
	return hex.EncodeToString(sum[:]), nil
}

func (s *server) postTransfer(w http.ResponseWriter, r *http.Request) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		errorAnswer(400, "missing_idempotency_key", "an Idempotency-Key header is required").write(w, false)
		return
	}
	if !keyPattern.MatchString(key) {
		errorAnswer(400, "invalid_idempotency_key", "the key must be 16 to 64 letters, digits, - or _").write(w, false)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
	var req transferRequest
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	fp, fpErr := fingerprint(r.Method, r.URL.Path, raw)
	if err != nil || fpErr != nil {
		errorAnswer(400, "invalid_body", "the body must be {\"from\":N,\"to\":N,\"amountKobo\":N}").write(w, false)
		return
	}
	if req.From <= 0 || req.To <= 0 || req.AmountKobo <= 0 || req.From == req.To {
		errorAnswer(422, "invalid_transfer", "from and to must be two accounts and amountKobo positive").write(w, false)
		return
	}

	token := rand.Text()
	ctx := r.Context()
	for attempt := 0; ; attempt++ {
		var inserted bool
		err := s.db.QueryRow(ctx, claimSQL, user, key, fp, token, s.ttlMS).Scan(&inserted)
		if err == nil {
			if !inserted {
				log.Printf("key %q of user %d: expired lock taken over", key, user)
			}
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			log.Printf("claim %q: %v", key, err)
			errorAnswer(503, "unavailable", "could not claim the key; retry").write(w, false)
			return
		}
		// Someone else holds the key: replay it, refuse it, or say it is busy.
		var storedFP, status string
		var stored answer
		err = s.db.QueryRow(ctx, `SELECT fingerprint, status, coalesce(response_status, 0), response_body
			FROM idempotency_keys WHERE user_id = $1 AND key = $2`, user, key).
			Scan(&storedFP, &status, &stored.status, &stored.body)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && attempt < 3:
			continue // released in between: claim again
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			log.Printf("look up %q: %v", key, err)
			errorAnswer(503, "unavailable", "could not read the key; retry").write(w, false)
		case err == nil && storedFP != fp:
			errorAnswer(422, "idempotency_key_reused", "this key was used for a different request").write(w, false)
		case err == nil && status == "completed":
			stored.write(w, true)
		default:
			errorAnswer(409, "request_in_progress", "a request with this key is in progress; retry").write(w, false)
		}
		return
	}

	ans, err := s.execute(ctx, user, key, token, req)
	switch {
	case errors.Is(err, errLost):
		log.Printf("key %q: %v; transfer rolled back", key, err)
		errorAnswer(409, "request_in_progress", "another request took this key over; retry").write(w, false)
	case err != nil:
		log.Printf("transfer %q: %v", key, err)
		s.release(user, key, token)
		errorAnswer(503, "unavailable", "the transfer failed and nothing moved; retry with the same key").write(w, false)
	default:
		ans.write(w, false)
	}
}

// execute makes the transfer (or its refusal) and stores its answer under
// the key, fenced by the token, all in one transaction.
func (s *server) execute(ctx context.Context, user int64, key, token string, req transferRequest) (answer, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return answer{}, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		tx.Rollback(rctx) // a no-op after Commit
	}()

	ans, err := transfer(ctx, tx, user, req)
	if err != nil {
		return answer{}, err
	}
	tag, err := tx.Exec(ctx, completeSQL, user, key, token, ans.status, ans.body)
	if err != nil {
		return answer{}, err
	}
	if tag.RowsAffected() != 1 {
		return answer{}, errLost
	}
	return ans, tx.Commit(ctx)
}

// transfer returns the request's real answer: 201, or a refusal to store.
func transfer(ctx context.Context, tx pgx.Tx, user int64, req transferRequest) (answer, error) {
	rows, err := tx.Query(ctx, `SELECT id, owner_id, status FROM accounts
		WHERE id = ANY($1) ORDER BY id FOR UPDATE`, []int64{req.From, req.To})
	if err != nil {
		return answer{}, err
	}
	owner, status := map[int64]int64{}, map[int64]string{}
	for rows.Next() {
		var id, o int64
		var st string
		if err := rows.Scan(&id, &o, &st); err != nil {
			return answer{}, err
		}
		owner[id], status[id] = o, st
	}
	if err := rows.Err(); err != nil {
		return answer{}, err
	}
	if o, ok := owner[req.From]; !ok || o != user {
		return errorAnswer(404, "account_not_found", "the source account does not exist or is not yours"), nil
	}
	if _, ok := owner[req.To]; !ok {
		return errorAnswer(404, "account_not_found", "the destination account does not exist"), nil
	}
	if status[req.From] != "active" || status[req.To] != "active" {
		return errorAnswer(422, "account_frozen", "both accounts must be active"), nil
	}
	tag, err := tx.Exec(ctx, `UPDATE accounts SET balance_kobo = balance_kobo - $2
		WHERE id = $1 AND balance_kobo >= $2`, req.From, req.AmountKobo)
	if err != nil {
		return answer{}, err
	}
	if tag.RowsAffected() == 0 {
		return errorAnswer(422, "insufficient_funds", "the source account cannot cover this amount"), nil
	}
	if _, err := tx.Exec(ctx, `UPDATE accounts SET balance_kobo = balance_kobo + $2 WHERE id = $1`,
		req.To, req.AmountKobo); err != nil {
		return answer{}, err
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO transfers (from_account, to_account, amount_kobo)
		VALUES ($1, $2, $3) RETURNING id`, req.From, req.To, req.AmountKobo).Scan(&id); err != nil {
		return answer{}, err
	}
	body, err := json.Marshal(map[string]int64{
		"transferId": id, "from": req.From, "to": req.To, "amountKobo": req.AmountKobo})
	return answer{201, body}, err
}

// release frees a key whose work failed, so that a retry makes the transfer.
// It deletes nothing once the key is completed, nor once another holds it.
func (s *server) release(user int64, key, token string) {
	for attempt := 0; attempt < 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := s.db.Exec(ctx, releaseSQL, user, key, token)
		cancel()
		if err == nil {
			return
		}
		log.Printf("release %q: %v", key, err)
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *server) getTransfer(w http.ResponseWriter, r *http.Request) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	key := r.URL.Query().Get("key")
	if key == "" {
		errorAnswer(400, "missing_key", "the key query parameter is required").write(w, false)
		return
	}
	var status string
	var respStatus *int
	var respBody []byte
	err := s.db.QueryRow(r.Context(), `SELECT status, response_status, response_body
		FROM idempotency_keys WHERE user_id = $1 AND key = $2`, user, key).Scan(&status, &respStatus, &respBody)
	if errors.Is(err, pgx.ErrNoRows) {
		errorAnswer(404, "key_not_found", "you never sent this key").write(w, false)
		return
	}
	if err != nil {
		log.Printf("get %q: %v", key, err)
		errorAnswer(503, "unavailable", "could not read the key; retry").write(w, false)
		return
	}
	out := map[string]any{"key": key, "status": status}
	if status == "completed" {
		out["responseStatus"], out["responseBody"] = respStatus, json.RawMessage(respBody)
	}
	body, _ := json.Marshal(out)
	answer{200, body}.write(w, false)
}

// migrate creates the key table; the advisory lock keeps two instances
// starting at once from racing on CREATE TABLE IF NOT EXISTS.
func migrate(ctx context.Context, db *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7426351)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
}

func main() {
	ttl, err := strconv.ParseInt(os.Getenv("LOCK_TTL_MS"), 10, 64)
	if err != nil || ttl <= 0 {
		ttl = 2000
	}
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatalf("DATABASE_URL: %v", err)
	}
	cfg.MaxConns = 16
	// A cancelled request cancels its statement in PostgreSQL too.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
	}
	start, cancelStart := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancelStart()
	db, err := pgxpool.NewWithConfig(start, cfg)
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	defer db.Close()
	if err := migrate(start, db); err != nil {
		log.Fatalf("create key table: %v", err)
	}

	s := &server{db: db, ttlMS: ttl}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /transfers", s.postTransfer)
	mux.HandleFunc("GET /transfers", s.getTransfer)

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", os.Getenv("PORT")))
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	base, abort := context.WithCancel(context.Background())
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return base }}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("serve: %v", err)
		}
	}()
	log.Printf("listening on %s (lock TTL %d ms)", ln.Addr(), ttl)

	stop, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	<-stop.Done()
	// Give requests in flight a second, then cancel the rest: their
	// transactions roll back and they release their keys.
	time.AfterFunc(time.Second, abort)
	wait, cancelWait := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancelWait()
	srv.Shutdown(wait)
}
