// go-ledger: the lesson's transfer API (POST /transfers with an Idempotency-Key)
// in Go, net/http and GORM on PostgreSQL. Design: correct, with the ledger as
// the last line of defence. At start-up (DDL under pg_advisory_lock) it adds
// user_id and idempotency_key to the lesson's transfers table, UNIQUE together,
// and creates its own idempotency_keys table. A request claims (user, key) with
// INSERT ... ON CONFLICT DO NOTHING, committed on its own before the work, with
// the request's fingerprint, a random lock id and locked_until = now + LOCK_TTL_MS.
// One transaction then moves the money, inserts the transfers row carrying the
// key and completes the key row with the answer, fenced (WHERE lock_id = mine;
// no row means the lock was lost: roll back). A retry that takes an expired lock
// over first looks in transfers for a row carrying the key and, if there is one,
// rebuilds the 201 from it. Refusals (4xx) are stored and replayed; a 5xx
// releases the key and is never stored. A valid lock held elsewhere: 409 with
// Retry-After: 1. 201 bodies are {transferId, from, to, amountKobo} only, so a
// body rebuilt from the ledger is the same as the one first sent.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// schemaLockID names this server's DDL in pg_advisory_lock.
const schemaLockID = 4_201_775_301

var (
	tokens      = map[string]int64{"token-ada": 1, "token-bola": 2, "token-chidi": 3}
	keyPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)
	errLostLock = errors.New("lost the idempotency lock; rolling back")
	errNoFunds  = errors.New("insufficient funds")
)

type server struct {
	db    *gorm.DB
	ttlMS int64
}

// answer is one HTTP answer: what is stored under a key and replayed.
type answer struct {
	status   int
	body     json.RawMessage
	replayed bool
	retry    bool // send Retry-After: 1
}

type transferBody struct {
	TransferID int64 `json:"transferId" gorm:"column:transfer_id"`
	From       int64 `json:"from" gorm:"column:from"`
	To         int64 `json:"to" gorm:"column:to"`
	AmountKobo int64 `json:"amountKobo" gorm:"column:amount_kobo"`
}

func jsonAnswer(status int, v any) answer {
	b, _ := json.Marshal(v)
	return answer{status: status, body: b}
}

func refuse(status int, code, message string) answer {
	return jsonAnswer(status, map[string]string{"error": code, "message": message})
}

func main() {
	dsn := os.Getenv("DATABASE_URL")
	port := os.Getenv("PORT")
	ttl, err := strconv.ParseInt(os.Getenv("LOCK_TTL_MS"), 10, 64)
	if err != nil || ttl <= 0 {
		ttl = 30_000
	}
	if dsn == "" || port == "" {
		log.Fatal("DATABASE_URL and PORT are required")
	}
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		log.Fatalf("open database: %v", err)
	}
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(16)
	sqlDB.SetMaxIdleConns(16)
	if err := migrate(db); err != nil {
		log.Fatalf("create tables: %v", err)
	}
	s := &server{db: db, ttlMS: ttl}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /transfers", s.postTransfer)
	mux.HandleFunc("GET /transfers", s.lookupKey)
	mux.HandleFunc("GET /transfers/{id}", s.getTransfer)
	mux.HandleFunc("GET /healthz", s.health)
	srv := &http.Server{Addr: "127.0.0.1:" + port, Handler: mux}

	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		os.Exit(0)
	}()
	log.Printf("go-ledger listening on %s (lock TTL %d ms)", srv.Addr, ttl)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	select {} // Shutdown in progress: the signal goroutine exits
}

// migrate creates the key table and gives transfers its key columns. Two
// instances may start at once, so the DDL runs under a session advisory lock on
// one pinned connection, and the ALTERs run only when the catalog lacks them
// (an ALTER TABLE would queue behind the other instance's open transfers).
func migrate(db *gorm.DB) error {
	return db.Connection(func(c *gorm.DB) error {
		if err := c.Exec("SELECT pg_advisory_lock(?)", schemaLockID).Error; err != nil {
			return err
		}
		defer c.Exec("SELECT pg_advisory_unlock(?)", schemaLockID)
		err := c.Exec(`CREATE TABLE IF NOT EXISTS idempotency_keys (
			user_id integer NOT NULL,
			key text NOT NULL,
			request_hash text NOT NULL,
			status text NOT NULL CHECK (status IN ('in_progress', 'completed')),
			lock_id text,
			locked_until timestamptz,
			response_status integer,
			response_body jsonb,
			created_at timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (user_id, key))`).Error
		if err != nil {
			return err
		}
		var n int64
		err = c.Raw(`SELECT count(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'transfers'
			AND column_name IN ('user_id', 'idempotency_key')`).Scan(&n).Error
		if err != nil {
			return err
		}
		if n < 2 {
			err = c.Exec(`ALTER TABLE transfers ADD COLUMN IF NOT EXISTS user_id integer,
				ADD COLUMN IF NOT EXISTS idempotency_key text`).Error
			if err != nil {
				return err
			}
		}
		err = c.Raw(`SELECT count(*) FROM pg_constraint
			WHERE conrelid = 'transfers'::regclass AND conname = 'transfers_user_idempotency_key'`).Scan(&n).Error
		if err != nil {
			return err
		}
		if n == 0 {
			return c.Exec(`ALTER TABLE transfers ADD CONSTRAINT transfers_user_idempotency_key
				UNIQUE (user_id, idempotency_key)`).Error
		}
		return nil
	})
}

// ---- HTTP ----

func write(w http.ResponseWriter, a answer) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if a.replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	if a.retry {
		h.Set("Retry-After", "1")
	}
	if a.status == http.StatusCreated {
		var t transferBody
		if json.Unmarshal(a.body, &t) == nil && t.TransferID > 0 {
			h.Set("Location", fmt.Sprintf("/transfers/%d", t.TransferID))
		}
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

func userOf(r *http.Request) (int64, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return 0, false
	}
	id, ok := tokens[strings.TrimSpace(token)]
	return id, ok
}

// parseKey takes the key bare (the lesson's form) or as an RFC 8941 String
// (the IETF draft's): both name the same key.
func parseKey(values []string) (string, *answer) {
	if len(values) == 0 || (len(values) == 1 && strings.TrimSpace(values[0]) == "") {
		a := refuse(400, "idempotency_key_required", "Send an Idempotency-Key header of 16 to 64 letters, digits, - or _")
		return "", &a
	}
	bad := refuse(400, "idempotency_key_invalid", "The Idempotency-Key must be one key of 16 to 64 letters, digits, - or _")
	if len(values) > 1 {
		return "", &bad
	}
	v := strings.TrimSpace(values[0])
	if strings.HasPrefix(v, `"`) {
		if len(v) < 2 || !strings.HasSuffix(v, `"`) {
			return "", &bad
		}
		v = v[1 : len(v)-1]
	}
	if !keyPattern.MatchString(v) {
		return "", &bad
	}
	return v, nil
}

func (s *server) postTransfer(w http.ResponseWriter, r *http.Request) {
	user, ok := userOf(r)
	if !ok {
		write(w, refuse(401, "unauthorized", "Send Authorization: Bearer with a known token"))
		return
	}
	key, bad := parseKey(r.Header.Values("Idempotency-Key"))
	if bad != nil {
		write(w, *bad)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		write(w, refuse(400, "invalid_body", "The body could not be read"))
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil || body == nil || dec.More() {
		write(w, refuse(400, "invalid_json", "The body must be one JSON object"))
		return
	}
	write(w, s.handle(user, key, fingerprint("POST", "/transfers", body), body))
}

// fingerprint hashes method, path and the body with its keys sorted
// (encoding/json sorts map keys), so reordered JSON is the same request.
func fingerprint(method, path string, body map[string]any) string {
	canonical, _ := json.Marshal(body)
	sum := sha256.Sum256([]byte(method + " " + path + " " + string(canonical)))
	return hex.EncodeToString(sum[:])
}

// ---- the key store and the transfer ----

func (s *server) handle(user int64, key, hash string, body map[string]any) answer {
	ctx := context.Background()
	for attempt := 0; attempt < 3; attempt++ {
		lockID, takeover, early, err := s.claim(ctx, user, key, hash)
		if err != nil {
			return serverError("claim", err)
		}
		if early != nil {
			return *early
		}
		a, err := s.work(ctx, user, key, lockID, takeover, body)
		if err == nil {
			return a
		}
		if errors.Is(err, errLostLock) {
			log.Printf("key %d/%s: %v", user, key, err)
			continue // look again: a replay, a 409, or the key is free again
		}
		s.release(user, key, lockID)
		return serverError("transfer", err)
	}
	return answer{status: 409, retry: true, body: refuse(409, "request_in_progress", "This request is still being processed; retry shortly").body}
}

type keyRow struct {
	RequestHash    string  `gorm:"column:request_hash"`
	Status         string  `gorm:"column:status"`
	ResponseStatus *int    `gorm:"column:response_status"`
	ResponseBody   *string `gorm:"column:response_body"`
}

func (s *server) readKey(ctx context.Context, user int64, key string) (*keyRow, error) {
	var rows []keyRow
	err := s.db.WithContext(ctx).Raw(`SELECT request_hash, status, response_status, response_body::text AS response_body
		FROM idempotency_keys WHERE user_id = ? AND key = ?`, user, key).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0], nil
}

// claim takes the key (a new claim, or a takeover of an expired lock), each
// committed on its own; or says what to answer instead (replay, 422, 409).
func (s *server) claim(ctx context.Context, user int64, key, hash string) (lockID string, takeover bool, early *answer, err error) {
	lockID = newLockID()
	db := s.db.WithContext(ctx)
	for i := 0; i < 5; i++ {
		ins := db.Exec(`INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
			VALUES (?, ?, ?, 'in_progress', ?, clock_timestamp() + ?::bigint * interval '1 millisecond', clock_timestamp())
			ON CONFLICT (user_id, key) DO NOTHING`, user, key, hash, lockID, s.ttlMS)
		if ins.Error != nil {
			return "", false, nil, ins.Error
		}
		if ins.RowsAffected == 1 {
			return lockID, false, nil, nil
		}
		row, err := s.readKey(ctx, user, key)
		if err != nil {
			return "", false, nil, err
		}
		if row == nil {
			continue // released between our INSERT and SELECT: claim again
		}
		if row.RequestHash != hash {
			a := refuse(422, "idempotency_key_reused", "This Idempotency-Key was sent with a different request")
			return "", false, &a, nil
		}
		if row.Status == "completed" {
			return "", false, &answer{status: *row.ResponseStatus, body: json.RawMessage(*row.ResponseBody), replayed: true}, nil
		}
		up := db.Exec(`UPDATE idempotency_keys SET lock_id = ?, locked_until = clock_timestamp() + ?::bigint * interval '1 millisecond'
			WHERE user_id = ? AND key = ? AND status = 'in_progress' AND locked_until < clock_timestamp()`,
			lockID, s.ttlMS, user, key)
		if up.Error != nil {
			return "", false, nil, up.Error
		}
		if up.RowsAffected == 1 {
			return lockID, true, nil, nil
		}
		if i > 0 {
			break
		}
		// The UPDATE may have waited for the holder's commit: read once more.
	}
	a := refuse(409, "request_in_progress", "This request is still being processed; retry shortly")
	a.retry = true
	return "", false, &a, nil
}

// work runs the transfer and completes the key, fenced, in one transaction.
func (s *server) work(ctx context.Context, user int64, key, lockID string, takeover bool, body map[string]any) (answer, error) {
	var out answer
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var a answer
		found := false
		var err error
		if takeover {
			// The holder we took over from may have committed a transfer whose
			// key row is gone: the ledger row carrying the key says so.
			if a, found, err = fromLedger(tx, user, key); err != nil {
				return err
			}
		}
		if !found {
			if a, err = transfer(tx, user, key, body); err != nil {
				return err
			}
		}
		done := tx.Exec(`UPDATE idempotency_keys SET status = 'completed', response_status = ?, response_body = ?::jsonb,
				lock_id = NULL, locked_until = NULL
			WHERE user_id = ? AND key = ? AND lock_id = ?`, a.status, string(a.body), user, key, lockID)
		if done.Error != nil {
			return done.Error
		}
		if done.RowsAffected == 0 {
			return errLostLock
		}
		out = a
		return nil
	})
	return out, err
}

// fromLedger rebuilds the 201 of a transfer already made under this key.
func fromLedger(tx *gorm.DB, user int64, key string) (answer, bool, error) {
	var rows []transferBody
	err := tx.Raw(`SELECT id AS transfer_id, from_account AS "from", to_account AS "to", amount_kobo
		FROM transfers WHERE user_id = ? AND idempotency_key = ?`, user, key).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return answer{}, false, err
	}
	a := jsonAnswer(201, rows[0])
	a.replayed = true
	return a, true, nil
}

func intField(body map[string]any, name string) (int64, bool) {
	n, ok := body[name].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	return v, err == nil
}

// transfer is the lesson's transfer: business refusals are answers, not errors.
func transfer(tx *gorm.DB, user int64, key string, body map[string]any) (answer, error) {
	from, okFrom := intField(body, "from")
	to, okTo := intField(body, "to")
	if !okFrom || !okTo || from <= 0 || to <= 0 || from > 1<<31-1 || to > 1<<31-1 {
		return refuse(400, "invalid_account", "from and to must be account numbers"), nil
	}
	amount, ok := intField(body, "amountKobo")
	if !ok || amount <= 0 {
		return refuse(400, "invalid_amount", "amountKobo must be a whole number of kobo above 0"), nil
	}
	if from == to {
		return refuse(422, "same_account", "You cannot transfer to the same account"), nil
	}
	type account struct {
		OwnerID int64  `gorm:"column:owner_id"`
		Status  string `gorm:"column:status"`
	}
	var sender []account
	if err := tx.Raw("SELECT owner_id, status FROM accounts WHERE id = ? FOR UPDATE", from).Scan(&sender).Error; err != nil {
		return answer{}, err
	}
	if len(sender) == 0 || sender[0].OwnerID != user {
		return refuse(404, "account_not_found", fmt.Sprintf("Account %d was not found", from)), nil
	}
	if sender[0].Status != "active" {
		return refuse(422, "account_not_active", fmt.Sprintf("Account %d is %s", from, sender[0].Status)), nil
	}
	var recipient []account
	if err := tx.Raw("SELECT owner_id, status FROM accounts WHERE id = ?", to).Scan(&recipient).Error; err != nil {
		return answer{}, err
	}
	if len(recipient) == 0 || recipient[0].Status != "active" {
		return refuse(422, "recipient_unavailable", fmt.Sprintf("Account %d cannot receive transfers", to)), nil
	}

	// The money moves under a savepoint: if the ledger's unique key says the
	// transfer is already there, only the moves roll back, and the outer
	// transaction answers from the ledger row instead.
	var id int64
	err := tx.Transaction(func(sp *gorm.DB) error {
		debit := sp.Exec("UPDATE accounts SET balance_kobo = balance_kobo - ? WHERE id = ? AND balance_kobo >= ?", amount, from, amount)
		if debit.Error != nil {
			return debit.Error
		}
		if debit.RowsAffected == 0 {
			return errNoFunds
		}
		if err := sp.Exec("UPDATE accounts SET balance_kobo = balance_kobo + ? WHERE id = ?", amount, to).Error; err != nil {
			return err
		}
		return sp.Raw(`INSERT INTO transfers (from_account, to_account, amount_kobo, user_id, idempotency_key)
			VALUES (?, ?, ?, ?, ?) RETURNING id`, from, to, amount, user, key).Scan(&id).Error
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, errNoFunds):
		return refuse(422, "insufficient_funds", "The balance is too low for this transfer"), nil
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "transfers_user_idempotency_key":
		a, found, lerr := fromLedger(tx, user, key)
		if lerr != nil || !found {
			return answer{}, errors.Join(err, lerr)
		}
		return a, nil
	case err != nil:
		return answer{}, err
	}
	return jsonAnswer(201, transferBody{TransferID: id, From: from, To: to, AmountKobo: amount}), nil
}

// release gives the key up after an unexpected failure, so a retry can make
// the transfer; if it fails too, the lock simply expires.
func (s *server) release(user int64, key, lockID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.db.WithContext(ctx).Exec(`DELETE FROM idempotency_keys
		WHERE user_id = ? AND key = ? AND lock_id = ? AND status = 'in_progress'`, user, key, lockID).Error
	if err != nil {
		log.Printf("release key %d/%s: %v (its lock will expire)", user, key, err)
	}
}

// serverError is a 5xx, never stored: 503 when the database cannot be reached.
func serverError(what string, err error) answer {
	log.Printf("%s: %v", what, err)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P03" {
		a := refuse(503, "database_unavailable", "The database cannot be reached; retry shortly")
		a.retry = true
		return a
	}
	return refuse(500, "internal_error", "Something went wrong; nothing was stored, retry with the same key")
}

func newLockID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ---- reads ----

func (s *server) lookupKey(w http.ResponseWriter, r *http.Request) {
	user, ok := userOf(r)
	if !ok {
		write(w, refuse(401, "unauthorized", "Send Authorization: Bearer with a known token"))
		return
	}
	key, bad := parseKey(r.URL.Query()["key"])
	if bad != nil {
		write(w, *bad)
		return
	}
	row, err := s.readKey(r.Context(), user, key)
	if err != nil {
		write(w, serverError("lookup", err))
		return
	}
	if row == nil {
		write(w, refuse(404, "key_not_found", "You never sent this Idempotency-Key"))
		return
	}
	out := map[string]any{"key": key, "status": row.Status}
	if row.Status == "completed" {
		out["responseStatus"] = *row.ResponseStatus
		out["responseBody"] = json.RawMessage(*row.ResponseBody)
	}
	write(w, jsonAnswer(200, out))
}

func (s *server) getTransfer(w http.ResponseWriter, r *http.Request) {
	user, ok := userOf(r)
	if !ok {
		write(w, refuse(401, "unauthorized", "Send Authorization: Bearer with a known token"))
		return
	}
	notFound := refuse(404, "transfer_not_found", "No such transfer")
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		write(w, notFound)
		return
	}
	var rows []transferBody
	err = s.db.WithContext(r.Context()).Raw(`SELECT t.id AS transfer_id, t.from_account AS "from", t.to_account AS "to", t.amount_kobo
		FROM transfers t JOIN accounts a ON a.id = t.from_account WHERE t.id = ? AND a.owner_id = ?`, id, user).Scan(&rows).Error
	switch {
	case err != nil:
		write(w, serverError("get transfer", err))
	case len(rows) == 0:
		write(w, notFound)
	default:
		write(w, jsonAnswer(200, rows[0]))
	}
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	sqlDB, _ := s.db.DB()
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if err := sqlDB.PingContext(ctx); err != nil {
		a := refuse(503, "database_unavailable", "The database cannot be reached")
		a.retry = true
		write(w, a)
		return
	}
	write(w, jsonAnswer(200, map[string]string{"status": "ok"}))
}
