// A transfer server for the lesson "Idempotency and safe retries" (Go, net/http, pgx/v5).
// Design (MISTAKE empty): keys in PostgreSQL, idempotency_keys (user_id, key) with a
// SHA-256 fingerprint of the method, path and body with its keys sorted. The claim is
// its own committed INSERT … ON CONFLICT DO NOTHING with a random lock id and
// locked_until = now() + LOCK_TTL_MS; a copy gets 409 + Retry-After: 1 while the lock
// holds, a retry takes an expired lock over. The transfer and its stored answer commit
// in ONE transaction whose UPDATE of the key is fenced on the lock id. Refusals are
// stored and replayed (Idempotent-Replayed: true); a 5xx deletes the claim instead.
// MISTAKE=… makes exactly one deliberate mistake:
//   - unscoped-lookup: GET /transfers?key= ignores the user (Bola sees Ada's key).
//   - partial-replay: a 201 is stored as {"transferId":N}; replays lack from/to/amountKobo.
//   - ignore-ttl: the lock lasts a fixed 30 s, whatever LOCK_TTL_MS says.
//   - redis-after-commit: keys in Redis (SET NX PX, Lua fence); the answer is written to
//     Redis only AFTER the PostgreSQL commit: a crash between leaves a transfer with no
//     answer, and the retry transfers again. (Also adds transfers.created_at at start-up.)
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
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
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

var (
	mistake = os.Getenv("MISTAKE")
	lockTTL = 30 * time.Second
	users   = map[string]int64{"token-ada": 1, "token-bola": 2, "token-chidi": 3}
	keyRe   = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)
)

const (
	mistakeUnscopedLookup = "unscoped-lookup"
	mistakePartialReplay  = "partial-replay"
	mistakeIgnoreTTL      = "ignore-ttl"
	mistakeRedis          = "redis-after-commit"
)

// answer is what a request gets: a status and a JSON body.
type answer struct {
	status   int
	body     []byte
	replayed bool
}

func errAnswer(status int, code, message string) answer {
	b, _ := json.Marshal(map[string]string{"error": code, "message": message})
	return answer{status: status, body: b}
}

// claim is the outcome of beginning a key: proceed with lockID, or answer now.
type claim struct {
	proceed bool
	lockID  string
	answer  answer
}

// keyRecord is what GET /transfers?key= reports.
type keyRecord struct {
	status         string
	responseStatus int
	responseBody   []byte
}

// keyStore keeps idempotency keys. PostgreSQL (the lesson's) or Redis (a mistake).
type keyStore interface {
	begin(ctx context.Context, user int64, key, hash string) (claim, error)
	// complete runs inside the transfer's transaction, before COMMIT.
	complete(ctx context.Context, tx pgx.Tx, user int64, key, lockID string, a answer) (held bool, err error)
	// afterCommit runs once the transfer's transaction has committed.
	afterCommit(ctx context.Context, user int64, key, lockID string, a answer) error
	release(ctx context.Context, user int64, key, lockID string) error
	lookup(ctx context.Context, user int64, key string) (*keyRecord, error)
}

var (
	inProgress = errAnswer(http.StatusConflict, "request_in_progress", "This request is still being processed; retry shortly")
	keyReused  = errAnswer(http.StatusUnprocessableEntity, "idempotency_key_reused", "This Idempotency-Key was sent with a different request")
)

func lockMillis() int64 {
	if mistake == mistakeIgnoreTTL {
		return 30_000 // MISTAKE ignore-ttl: the lesson's constant, not LOCK_TTL_MS
	}
	return lockTTL.Milliseconds()
}

// ---------- PostgreSQL key store (the lesson's design) ----------

type pgStore struct{ db *pgxpool.Pool }

func (s pgStore) begin(ctx context.Context, user int64, key, hash string) (claim, error) {
	for range 5 {
		lockID := rand.Text()
		tag, err := s.db.Exec(ctx, `
			INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
			VALUES ($1, $2, $3, 'in_progress', $4, now() + $5 * interval '1 millisecond', now())
			ON CONFLICT (user_id, key) DO NOTHING`, user, key, hash, lockID, lockMillis())
		if err != nil {
			return claim{}, err
		}
		if tag.RowsAffected() == 1 {
			return claim{proceed: true, lockID: lockID}, nil
		}
		var storedHash, status string
		var respStatus *int32
		var respBody []byte
		err = s.db.QueryRow(ctx, `SELECT request_hash, status, response_status, response_body
			FROM idempotency_keys WHERE user_id = $1 AND key = $2`, user, key).
			Scan(&storedHash, &status, &respStatus, &respBody)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released by a failed attempt in between: claim again
		}
		if err != nil {
			return claim{}, err
		}
		if storedHash != hash {
			return claim{answer: keyReused}, nil
		}
		if status == "completed" {
			return claim{answer: answer{status: int(*respStatus), body: respBody, replayed: true}}, nil
		}
		tag, err = s.db.Exec(ctx, `
			UPDATE idempotency_keys SET lock_id = $3, locked_until = now() + $4 * interval '1 millisecond'
			WHERE user_id = $1 AND key = $2 AND status = 'in_progress' AND locked_until < now()`,
			user, key, lockID, lockMillis())
		if err != nil {
			return claim{}, err
		}
		if tag.RowsAffected() == 1 {
			log.Printf("key %d/%s: lock expired, taken over", user, key)
			return claim{proceed: true, lockID: lockID}, nil
		}
		return claim{answer: inProgress}, nil
	}
	return claim{answer: inProgress}, nil
}

func (s pgStore) complete(ctx context.Context, tx pgx.Tx, user int64, key, lockID string, a answer) (bool, error) {
	stored := a.body
	if mistake == mistakePartialReplay && a.status == http.StatusCreated {
		// MISTAKE partial-replay: only the transfer id is kept for replays.
		var full struct {
			TransferID int64 `json:"transferId"`
		}
		_ = json.Unmarshal(a.body, &full)
		stored, _ = json.Marshal(map[string]int64{"transferId": full.TransferID})
	}
	tag, err := tx.Exec(ctx, `
		UPDATE idempotency_keys
		SET status = 'completed', response_status = $4, response_body = $5::jsonb, lock_id = NULL, locked_until = NULL
		WHERE user_id = $1 AND key = $2 AND lock_id = $3`, user, key, lockID, a.status, string(stored))
	return err == nil && tag.RowsAffected() == 1, err
}

func (pgStore) afterCommit(context.Context, int64, string, string, answer) error { return nil }

func (s pgStore) release(ctx context.Context, user int64, key, lockID string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND lock_id = $3`, user, key, lockID)
	return err
}

func (s pgStore) lookup(ctx context.Context, user int64, key string) (*keyRecord, error) {
	query := `SELECT status, response_status, response_body FROM idempotency_keys WHERE user_id = $1 AND key = $2`
	args := []any{user, key}
	if mistake == mistakeUnscopedLookup {
		// MISTAKE unscoped-lookup: the key alone, whoever asks.
		query = `SELECT status, response_status, response_body FROM idempotency_keys WHERE key = $1 ORDER BY created_at LIMIT 1`
		args = []any{key}
	}
	var rec keyRecord
	var respStatus *int32
	err := s.db.QueryRow(ctx, query, args...).Scan(&rec.status, &respStatus, &rec.responseBody)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if respStatus != nil {
		rec.responseStatus = int(*respStatus)
	}
	return &rec, err
}

// ---------- Redis key store (MISTAKE=redis-after-commit) ----------

type redisStore struct {
	rdb *redis.Client
	ns  string // the PostgreSQL database's name: each bank has its own keys
}

type redisRecord struct {
	Hash           string `json:"hash"`
	Status         string `json:"status"`
	LockID         string `json:"lockId,omitempty"`
	ResponseStatus int    `json:"responseStatus,omitempty"`
	ResponseBody   string `json:"responseBody,omitempty"` // the answer's JSON text
}

var (
	// Is the lock still ours? (read-only; a check outside PostgreSQL cannot fence the commit)
	luaHeld = redis.NewScript(`
		local v = redis.call('GET', KEYS[1])
		if not v then return 0 end
		local r = cjson.decode(v)
		if r.status == 'in_progress' and r.lockId == ARGV[1] then return 1 end
		return 0`)
	// Compare-and-set: store the answer only if the lock is still ours.
	luaComplete = redis.NewScript(`
		local v = redis.call('GET', KEYS[1])
		if not v then return 0 end
		local r = cjson.decode(v)
		if r.status ~= 'in_progress' or r.lockId ~= ARGV[1] then return 0 end
		r.status = 'completed'
		r.lockId = nil
		r.responseStatus = tonumber(ARGV[2])
		r.responseBody = ARGV[3]
		redis.call('SET', KEYS[1], cjson.encode(r), 'EX', 86400)
		return 1`)
	// Compare-and-delete: give the key up after a 5xx.
	luaRelease = redis.NewScript(`
		local v = redis.call('GET', KEYS[1])
		if not v then return 0 end
		local r = cjson.decode(v)
		if r.status == 'in_progress' and r.lockId == ARGV[1] then return redis.call('DEL', KEYS[1]) end
		return 0`)
)

func (s redisStore) name(user int64, key string) string {
	return fmt.Sprintf("idem:%s:%d:%s", s.ns, user, key)
}

func (s redisStore) begin(ctx context.Context, user int64, key, hash string) (claim, error) {
	for range 5 {
		lockID := rand.Text()
		rec, _ := json.Marshal(redisRecord{Hash: hash, Status: "in_progress", LockID: lockID})
		// SET NX PX: claimed atomically, and the claim vanishes after LOCK_TTL_MS.
		ok, err := s.rdb.SetNX(ctx, s.name(user, key), rec, time.Duration(lockMillis())*time.Millisecond).Result()
		if err != nil {
			return claim{}, err
		}
		if ok {
			return claim{proceed: true, lockID: lockID}, nil
		}
		v, err := s.rdb.Get(ctx, s.name(user, key)).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired or released in between: claim again
		}
		if err != nil {
			return claim{}, err
		}
		var got redisRecord
		if err := json.Unmarshal(v, &got); err != nil {
			return claim{}, err
		}
		if got.Hash != hash {
			return claim{answer: keyReused}, nil
		}
		if got.Status == "completed" {
			return claim{answer: answer{status: got.ResponseStatus, body: []byte(got.ResponseBody), replayed: true}}, nil
		}
		return claim{answer: inProgress}, nil
	}
	return claim{answer: inProgress}, nil
}

func (s redisStore) complete(ctx context.Context, _ pgx.Tx, user int64, key, lockID string, _ answer) (bool, error) {
	held, err := luaHeld.RunRO(ctx, s.rdb, []string{s.name(user, key)}, lockID).Int()
	return held == 1, err
}

func (s redisStore) afterCommit(ctx context.Context, user int64, key, lockID string, a answer) error {
	// MISTAKE redis-after-commit: the transfer has committed already; this is a
	// second write to a second store. A crash before it loses the answer.
	ok, err := luaComplete.Run(ctx, s.rdb, []string{s.name(user, key)}, lockID, a.status, string(a.body)).Int()
	if err == nil && ok != 1 {
		err = errors.New("lost the lock after the commit: the answer was not stored")
	}
	return err
}

func (s redisStore) release(ctx context.Context, user int64, key, lockID string) error {
	return luaRelease.Run(ctx, s.rdb, []string{s.name(user, key)}, lockID).Err()
}

func (s redisStore) lookup(ctx context.Context, user int64, key string) (*keyRecord, error) {
	v, err := s.rdb.Get(ctx, s.name(user, key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec redisRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, err
	}
	return &keyRecord{status: rec.Status, responseStatus: rec.ResponseStatus, responseBody: []byte(rec.ResponseBody)}, nil
}

// ---------- the transfer (the lesson's transfer.js) ----------

func intField(body map[string]any, name string) (int64, bool) {
	n, ok := body[name].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	return v, err == nil
}

func jsonAnswer(status int, v any) answer {
	b, _ := json.Marshal(v)
	return answer{status: status, body: b}
}

// transfer returns the request's real answer (a 201 or a refusal), or an
// error when something broke (then nothing may be stored).
func transfer(ctx context.Context, tx pgx.Tx, user int64, body map[string]any) (answer, error) {
	from, okFrom := intField(body, "from")
	to, okTo := intField(body, "to")
	if !okFrom || !okTo {
		return errAnswer(400, "invalid_account", "from and to must be account numbers"), nil
	}
	amount, ok := intField(body, "amountKobo")
	if !ok || amount <= 0 {
		return errAnswer(400, "invalid_amount", "amountKobo must be a whole number of kobo above 0"), nil
	}
	if from == to {
		return errAnswer(422, "same_account", "You cannot transfer to the same account"), nil
	}
	var owner int64
	var status string
	err := tx.QueryRow(ctx, `SELECT owner_id, status FROM accounts WHERE id = $1 FOR UPDATE`, from).Scan(&owner, &status)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && owner != user) {
		return errAnswer(404, "account_not_found", fmt.Sprintf("Account %d was not found", from)), nil
	}
	if err != nil {
		return answer{}, err
	}
	if status != "active" {
		return errAnswer(422, "account_not_active", fmt.Sprintf("Account %d is %s", from, status)), nil
	}
	err = tx.QueryRow(ctx, `SELECT status FROM accounts WHERE id = $1`, to).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && status != "active") {
		return errAnswer(422, "recipient_unavailable", fmt.Sprintf("Account %d cannot receive transfers", to)), nil
	}
	if err != nil {
		return answer{}, err
	}
	var balance int64
	err = tx.QueryRow(ctx, `UPDATE accounts SET balance_kobo = balance_kobo - $1
		WHERE id = $2 AND balance_kobo >= $1 RETURNING balance_kobo`, amount, from).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return errAnswer(422, "insufficient_funds", "The balance is too low for this transfer"), nil
	}
	if err != nil {
		return answer{}, err
	}
	if _, err := tx.Exec(ctx, `UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2`, amount, to); err != nil {
		return answer{}, err
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO transfers (from_account, to_account, amount_kobo)
		VALUES ($1, $2, $3) RETURNING id`, from, to, amount).Scan(&id); err != nil {
		return answer{}, err
	}
	return jsonAnswer(201, map[string]int64{"transferId": id, "from": from, "to": to, "amountKobo": amount, "balanceKobo": balance}), nil
}

// ---------- HTTP ----------

type server struct {
	db    *pgxpool.Pool
	store keyStore
}

func write(w http.ResponseWriter, a answer) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if a.replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	if a.status == http.StatusConflict || a.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// broke is the answer to an unexpected failure: a 5xx, never stored.
func broke(err error) answer {
	log.Printf("error: %v", err)
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return errAnswer(503, "database_unavailable", "The database cannot be reached; retry shortly")
	}
	return errAnswer(500, "internal_error", "Something went wrong; retry with the same Idempotency-Key")
}

func userOf(r *http.Request) (int64, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	user, known := users[token]
	return user, ok && known
}

// parseKey takes the key bare (the lesson's form) or as an RFC 8941 String
// (the IETF draft's); both are the same key.
func parseKey(v string) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v, keyRe.MatchString(v)
}

func (s *server) postTransfer(w http.ResponseWriter, r *http.Request) {
	user, ok := userOf(r)
	if !ok {
		write(w, errAnswer(401, "unauthorized", "Send Authorization: Bearer <token>"))
		return
	}
	values := r.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		write(w, errAnswer(400, "idempotency_key_required", "Send an Idempotency-Key header of 16 to 64 letters, digits, - or _"))
		return
	}
	key, ok := parseKey(values[0])
	if len(values) > 1 || !ok {
		write(w, errAnswer(400, "idempotency_key_invalid", "Send one Idempotency-Key of 16 to 64 letters, digits, - or _"))
		return
	}
	var body map[string]any
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || body == nil {
		write(w, errAnswer(400, "invalid_json", "The body must be a JSON object"))
		return
	}
	canonical, _ := json.Marshal(body) // encoding/json sorts map keys
	sum := sha256.Sum256([]byte("POST /transfers " + string(canonical)))
	hash := hex.EncodeToString(sum[:])

	// The work goes on if the client hangs up: its retry will want the answer.
	ctx := context.WithoutCancel(r.Context())
	c, err := s.store.begin(ctx, user, key, hash)
	if err != nil {
		write(w, broke(err))
		return
	}
	if !c.proceed {
		write(w, c.answer)
		return
	}
	a, err := s.run(ctx, user, key, c.lockID, body)
	if err != nil {
		if rerr := s.store.release(ctx, user, key, c.lockID); rerr != nil {
			log.Printf("release %d/%s: %v", user, key, rerr)
		}
		write(w, broke(err))
		return
	}
	if a.status == http.StatusCreated {
		var t struct {
			TransferID int64 `json:"transferId"`
		}
		if json.Unmarshal(a.body, &t) == nil {
			w.Header().Set("Location", fmt.Sprintf("/transfers/%d", t.TransferID))
		}
	}
	write(w, a)
}

var errLostLock = errors.New("lost the idempotency lock")

// run makes the transfer and stores its answer in one transaction.
func (s *server) run(ctx context.Context, user int64, key, lockID string, body map[string]any) (answer, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return answer{}, err
	}
	defer tx.Rollback(context.Background())
	a, err := transfer(ctx, tx, user, body)
	if err != nil {
		return answer{}, err
	}
	held, err := s.store.complete(ctx, tx, user, key, lockID, a)
	if err != nil {
		return answer{}, err
	}
	if !held {
		// Fenced off: a retry took the key over after our lock expired.
		log.Printf("key %d/%s: %v; rolling back", user, key, errLostLock)
		tx.Rollback(ctx)
		return inProgress, nil
	}
	if err := tx.Commit(ctx); err != nil {
		return answer{}, err
	}
	if err := s.store.afterCommit(ctx, user, key, lockID, a); err != nil {
		log.Printf("key %d/%s: answer not stored after commit: %v", user, key, err)
	}
	return a, nil
}

func (s *server) getByKey(w http.ResponseWriter, r *http.Request) {
	user, ok := userOf(r)
	if !ok {
		write(w, errAnswer(401, "unauthorized", "Send Authorization: Bearer <token>"))
		return
	}
	key, ok := parseKey(r.URL.Query().Get("key"))
	if !ok {
		write(w, errAnswer(400, "idempotency_key_invalid", "Send ?key= with an Idempotency-Key you used"))
		return
	}
	rec, err := s.store.lookup(r.Context(), user, key)
	if err != nil {
		write(w, broke(err))
		return
	}
	if rec == nil {
		write(w, errAnswer(404, "key_not_found", "You never sent this Idempotency-Key"))
		return
	}
	out := map[string]any{"key": key, "status": rec.status}
	if rec.status == "completed" {
		out["responseStatus"] = rec.responseStatus
		out["responseBody"] = json.RawMessage(rec.responseBody)
	}
	write(w, jsonAnswer(200, out))
}

func (s *server) getTransfer(w http.ResponseWriter, r *http.Request) {
	user, ok := userOf(r)
	if !ok {
		write(w, errAnswer(401, "unauthorized", "Send Authorization: Bearer <token>"))
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	var from, to, amount int64
	if err == nil {
		err = s.db.QueryRow(r.Context(), `SELECT t.from_account, t.to_account, t.amount_kobo
			FROM transfers t JOIN accounts a ON a.id = t.from_account
			WHERE t.id = $1 AND a.owner_id = $2`, id, user).Scan(&from, &to, &amount)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			write(w, broke(err))
			return
		}
	}
	if err != nil { // not a number, no such transfer, or not the user's
		write(w, errAnswer(404, "transfer_not_found", "Transfer not found"))
		return
	}
	write(w, jsonAnswer(200, map[string]int64{"transferId": id, "from": from, "to": to, "amountKobo": amount}))
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		write(w, errAnswer(503, "database_unavailable", "The database cannot be reached"))
		return
	}
	write(w, jsonAnswer(200, map[string]string{"status": "ok"}))
}

// migrate creates our tables; the advisory lock makes two instances starting
// at once on one database take turns.
func migrate(ctx context.Context, db *pgxpool.Pool) error {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(72010001)`); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(72010001)`)
	ddl := `CREATE TABLE IF NOT EXISTS idempotency_keys (
		user_id integer NOT NULL,
		key text NOT NULL,
		request_hash text NOT NULL,
		status text NOT NULL CHECK (status IN ('in_progress', 'completed')),
		lock_id text,
		locked_until timestamptz,
		response_status integer,
		response_body jsonb,
		created_at timestamptz NOT NULL,
		PRIMARY KEY (user_id, key))`
	if mistake == mistakeRedis {
		ddl = `ALTER TABLE transfers ADD COLUMN IF NOT EXISTS created_at timestamptz DEFAULT now()`
	}
	_, err = conn.Exec(ctx, ddl)
	return err
}

func main() {
	switch mistake {
	case "", mistakeUnscopedLookup, mistakePartialReplay, mistakeIgnoreTTL, mistakeRedis:
	default:
		log.Fatalf("unknown MISTAKE %q", mistake)
	}
	if ms, err := strconv.Atoi(os.Getenv("LOCK_TTL_MS")); err == nil && ms > 0 {
		lockTTL = time.Duration(ms) * time.Millisecond
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cfg.MaxConns = 20
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	s := &server{db: db, store: pgStore{db}}
	if mistake == mistakeRedis {
		opts, err := redis.ParseURL(os.Getenv("REDIS_URL"))
		if err != nil {
			log.Fatalf("REDIS_URL: %v", err)
		}
		var dbName string
		if err := db.QueryRow(ctx, `SELECT current_database()`).Scan(&dbName); err != nil {
			log.Fatal(err)
		}
		s.store = redisStore{rdb: redis.NewClient(opts), ns: dbName}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /transfers", s.postTransfer)
	mux.HandleFunc("GET /transfers", s.getByKey)
	mux.HandleFunc("GET /transfers/{id}", s.getTransfer)
	mux.HandleFunc("GET /healthz", s.healthz)
	srv := &http.Server{Addr: "127.0.0.1:" + os.Getenv("PORT"), Handler: mux}

	drained := make(chan struct{})
	go func() { // SIGTERM: finish the requests under way (3 s at most), then exit
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
		<-stop
		shutdown, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		close(drained)
	}()
	log.Printf("listening on %s (MISTAKE=%q, lock %d ms)", srv.Addr, mistake, lockMillis())
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-drained
}
