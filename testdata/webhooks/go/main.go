// Command consumer is a webhook consumer for a bank: it credits a
// customer's account when the payment provider says money arrived.
//
// The provider delivers Standard Webhooks 1.0 events at least once. Each
// delivery is verified (HMAC-SHA256 over "<id>.<timestamp>.<body>", with
// a 5-minute timestamp tolerance), then credited in one transaction that
// also records the event. The record has a unique key on the event id and
// one on the payment reference, so the database itself refuses a second
// credit for the same event or the same payment, including two copies
// that arrive at the same instant.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// answerBudget is how long a delivery may wait for its credit before
	// the consumer answers 503 instead. The provider gives up after 5 s.
	answerBudget = 4 * time.Second
	// workBudget bounds one credit's transaction. It is deliberately not
	// tied to the HTTP request: once started, a credit either commits or
	// rolls back on its own, whether or not the provider is still there.
	workBudget = 30 * time.Second
	// tolerance is how far webhook-timestamp may be from now, either way.
	tolerance = 5 * time.Minute
	// maxBody caps the size of a delivery's body.
	maxBody = 1 << 20
	// startupBudget is how long start-up may retry the database.
	startupBudget = 15 * time.Second
	// migrationLock serialises CREATE TABLE among consumers started at once.
	migrationLock = 7340512201
)

// The mistakes CONSUMER_MISTAKE can switch on (see README.md).
const (
	mistakeNoEventDedupe  = "no-event-dedupe"
	mistakeEventOutsideTx = "event-outside-transaction"
	mistakeSlowNoLock     = "slow-no-lock"
)

func main() {
	log.SetOutput(os.Stderr)
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)

	dbURL := os.Getenv("DATABASE_URL")
	port := os.Getenv("PORT")
	if dbURL == "" || port == "" || os.Getenv("WEBHOOK_SECRET") == "" {
		log.Fatal("start-up: DATABASE_URL, PORT and WEBHOOK_SECRET must all be set")
	}
	key, err := decodeSecret(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		log.Fatalf("start-up: WEBHOOK_SECRET: %v", err) // the error never quotes the secret
	}
	mistake := os.Getenv("CONSUMER_MISTAKE")
	switch mistake {
	case "", mistakeNoEventDedupe, mistakeEventOutsideTx, mistakeSlowNoLock:
	default:
		log.Fatalf("start-up: unknown CONSUMER_MISTAKE %q", mistake)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		log.Fatalf("start-up: DATABASE_URL: %v", err)
	}
	cfg.MaxConns = 8
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "webhook-consumer"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatalf("start-up: database pool: %v", err)
	}
	defer pool.Close()

	a := &app{pool: pool, key: key, mistake: mistake}
	if err := a.migrateWithRetry(ctx); err != nil {
		log.Fatalf("start-up: %v", err)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		log.Fatalf("start-up: listen: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhooks", a.handleWebhook)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("serve: %v", err)
		}
	}()
	if mistake != "" {
		log.Printf("start-up: CONSUMER_MISTAKE=%s is switched on", mistake)
	}
	log.Printf("start-up: listening on %s, POST /webhooks", ln.Addr())

	<-ctx.Done()
	log.Printf("shutdown: signal received, finishing deliveries in flight")
	sctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	_ = srv.Shutdown(sctx)
	done := make(chan struct{})
	go func() { a.work.Wait(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
	}
	log.Printf("shutdown: done")
}

// decodeSecret turns "whsec_<base64>" into the HMAC key.
func decodeSecret(s string) ([]byte, error) {
	s = strings.TrimPrefix(s, "whsec_")
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not whsec_ followed by standard base64")
	}
	if len(key) == 0 {
		return nil, errors.New("the key is empty")
	}
	return key, nil
}

type app struct {
	pool    *pgxpool.Pool
	key     []byte
	mistake string
	work    sync.WaitGroup // credits still running
}

// eventsTable is the consumer's own record of the events it has applied.
func (a *app) eventsTable() string {
	keys := `,
	CONSTRAINT webhook_events_event_id_key PRIMARY KEY (event_id),
	CONSTRAINT webhook_events_payment_ref_key UNIQUE (payment_ref)`
	if a.mistake == mistakeSlowNoLock {
		keys = "" // duplicates are kept out by the look-up before the transaction
	}
	return `CREATE TABLE IF NOT EXISTS webhook_events (
	event_id    text        NOT NULL,
	payment_ref text        NOT NULL,
	event_type  text        NOT NULL,
	account_id  integer     NOT NULL,
	amount_kobo bigint      NOT NULL,
	event_time  timestamptz,
	received_at timestamptz NOT NULL DEFAULT now()` + keys + `
)`
}

func (a *app) migrateWithRetry(ctx context.Context) error {
	deadline := time.Now().Add(startupBudget)
	for {
		err := a.migrate(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("create tables: %w", err)
		}
		log.Printf("start-up: database not ready (%v), retrying", err)
		time.Sleep(500 * time.Millisecond)
	}
}

func (a *app) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, a.eventsTable()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// ---------------------------------------------------------------------------
// Deliveries

// event is a verified delivery of a payment.received event.
type event struct {
	ID        string     // webhook-id
	Type      string     // body.type
	Time      *time.Time // body.timestamp, when it is RFC 3339
	Payment   string     // data.payment: the provider's payment reference
	Account   int32      // data.account
	Amount    int64      // data.amountKobo
	SignedAt  int64      // webhook-timestamp
	timeRaw   string
	isPayment bool
}

func (e *event) String() string {
	if !e.isPayment {
		return fmt.Sprintf("id=%q type=%q", e.ID, e.Type)
	}
	return fmt.Sprintf("id=%q type=%q time=%q payment=%q account=%d amount_kobo=%d",
		e.ID, e.Type, e.timeRaw, e.Payment, e.Account, e.Amount)
}

// outcome is what the consumer did with a delivery and what it answers.
type outcome struct {
	status int
	what   string
}

func (a *app) handleWebhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.Header.Get("webhook-id")
	came := fmt.Sprintf("id=%q webhook-timestamp=%q", id, r.Header.Get("webhook-timestamp"))
	answer := func(o outcome) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(o.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"result": o.what})
		log.Printf("delivery %s: %s -> answered %d in %s", came, o.what, o.status, time.Since(start).Round(time.Millisecond))
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			answer(outcome{http.StatusBadRequest, "refused: body larger than 1 MiB, cannot be verified, nothing written"})
			return
		}
		answer(outcome{http.StatusBadRequest, "refused: could not read the body, nothing written"})
		return
	}

	if o, ok := a.verify(r.Header, body, time.Now()); !ok {
		answer(o)
		return
	}
	ev, err := parseEvent(body)
	if err != nil {
		answer(outcome{http.StatusBadRequest, "refused: signed, but not an event (" + err.Error() + "), nothing written"})
		return
	}
	ev.ID = id
	ev.SignedAt, _ = strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	came = ev.String()
	if !ev.isPayment {
		answer(outcome{http.StatusOK, "ignored: not a payment.received event, nothing written"})
		return
	}

	// The credit runs on its own context: it commits or rolls back as a
	// whole even if the provider hangs up. The answer waits for it up to
	// answerBudget; past that the provider gets 503 and delivers again,
	// and the unique keys make that redelivery safe whatever the first
	// attempt's transaction turns out to do.
	result := make(chan outcome, 1)
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		ctx, cancel := context.WithTimeout(context.Background(), workBudget)
		defer cancel()
		result <- a.credit(ctx, ev)
	}()
	timer := time.NewTimer(answerBudget - time.Since(start))
	defer timer.Stop()
	select {
	case o := <-result:
		answer(o)
	case <-timer.C:
		answer(outcome{http.StatusServiceUnavailable, "credit still running after " + answerBudget.String() +
			" (it will commit or roll back on its own; a redelivery is safe)"})
		go func() {
			o := <-result
			log.Printf("delivery %s: late result of the attempt answered 503: %s (would have answered %d)", came, o.what, o.status)
		}()
	}
}

// verify checks the Standard Webhooks headers: the timestamp within the
// tolerance and one v1 signature matching, compared in constant time.
func (a *app) verify(h http.Header, body []byte, now time.Time) (outcome, bool) {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return outcome{http.StatusBadRequest, "refused: missing webhook-id, webhook-timestamp or webhook-signature, nothing written"}, false
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return outcome{http.StatusBadRequest, "refused: webhook-timestamp is not Unix seconds, nothing written"}, false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return outcome{http.StatusUnauthorized, fmt.Sprintf("refused: webhook-timestamp is %s from now (over 5m), nothing written", d.Round(time.Second))}, false
	}
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return outcome{}, true
		}
	}
	return outcome{http.StatusUnauthorized, "refused: no v1 signature matches, nothing written"}, false
}

// parseEvent reads the body. A payment.received event must carry a
// payment reference, an account id and a positive whole amount in kobo.
func parseEvent(body []byte) (*event, error) {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return nil, errors.New("body is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	typ, _ := raw["type"].(string)
	if typ == "" {
		return nil, errors.New("no type")
	}
	ev := &event{Type: typ}
	if typ != "payment.received" {
		return ev, nil
	}
	ev.isPayment = true
	if s, ok := raw["timestamp"].(string); ok {
		ev.timeRaw = s
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			ev.Time = &t
		}
	}
	data, ok := raw["data"].(map[string]any)
	if !ok {
		return nil, errors.New("no data object")
	}
	if ev.Payment, _ = data["payment"].(string); ev.Payment == "" {
		return nil, errors.New("data.payment is not a non-empty string")
	}
	acc, ok := data["account"].(json.Number)
	if !ok {
		return nil, errors.New("data.account is not a number")
	}
	n, err := strconv.ParseInt(acc.String(), 10, 32)
	if err != nil || n <= 0 {
		return nil, errors.New("data.account is not a positive integer")
	}
	ev.Account = int32(n)
	amt, ok := data["amountKobo"].(json.Number)
	if !ok {
		return nil, errors.New("data.amountKobo is not a number")
	}
	if ev.Amount, err = strconv.ParseInt(amt.String(), 10, 64); err != nil || ev.Amount <= 0 {
		return nil, errors.New("data.amountKobo is not a positive whole number of kobo")
	}
	return ev, nil
}

// ---------------------------------------------------------------------------
// The credit

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// recordEvent inserts the event's record. If a unique key refuses it, it
// returns the name of that key and no error.
func (a *app) recordEvent(ctx context.Context, db execer, ev *event) (string, error) {
	sql := `INSERT INTO webhook_events (event_id, payment_ref, event_type, account_id, amount_kobo, event_time)
		VALUES ($1, $2, $3, $4, $5, $6)`
	if a.mistake == mistakeNoEventDedupe {
		sql += ` ON CONFLICT DO NOTHING`
	}
	_, err := db.Exec(ctx, sql, ev.ID, ev.Payment, ev.Type, ev.Account, ev.Amount, ev.Time)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return pgErr.ConstraintName, nil
	}
	return "", err
}

// credit records the event and credits the payment in one transaction.
func (a *app) credit(ctx context.Context, ev *event) outcome {
	o, err := a.creditTx(ctx, ev)
	if err != nil {
		return outcome{http.StatusInternalServerError, "failed, rolled back, nothing written: " + err.Error()}
	}
	return o
}

func (a *app) creditTx(ctx context.Context, ev *event) (outcome, error) {
	if a.mistake == mistakeSlowNoLock {
		var seen bool
		err := a.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_events WHERE event_id = $1 OR payment_ref = $2)`,
			ev.ID, ev.Payment).Scan(&seen)
		if err != nil {
			return outcome{}, err
		}
		if seen {
			return outcome{http.StatusOK, "duplicate: event or payment already recorded, credited nothing"}, nil
		}
	}
	if a.mistake == mistakeEventOutsideTx {
		conflict, err := a.recordEvent(ctx, a.pool, ev)
		if err != nil {
			return outcome{}, err
		}
		if conflict != "" {
			return outcome{http.StatusOK, "duplicate (" + conflict + "): credited nothing"}, nil
		}
	}

	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer tx.Rollback(context.Background()) // no-op once committed

	if a.mistake != mistakeEventOutsideTx {
		if _, err := tx.Exec(ctx, `SAVEPOINT event_record`); err != nil {
			return outcome{}, err
		}
		conflict, err := a.recordEvent(ctx, tx, ev)
		if err != nil {
			return outcome{}, err
		}
		if conflict != "" {
			if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT event_record`); err != nil {
				return outcome{}, err
			}
			what := duplicateNote(ctx, tx, ev, conflict)
			if err := tx.Commit(ctx); err != nil {
				return outcome{}, err
			}
			return outcome{http.StatusOK, what}, nil
		}
	}

	var balance int64
	err = tx.QueryRow(ctx, `UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2 RETURNING balance_kobo`,
		ev.Amount, ev.Account).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return outcome{http.StatusUnprocessableEntity, fmt.Sprintf("refused: no account %d, rolled back, nothing written", ev.Account)}, nil
	}
	if err != nil {
		return outcome{}, err
	}
	if a.mistake == mistakeSlowNoLock {
		time.Sleep(6 * time.Second) // tell the ledger service (slow downstream call)
	}
	var depositID int64
	err = tx.QueryRow(ctx, `INSERT INTO deposits (account_id, amount_kobo, source) VALUES ($1, $2, $3) RETURNING id`,
		ev.Account, ev.Amount, ev.Payment).Scan(&depositID)
	if err != nil {
		return outcome{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return outcome{}, err
	}
	return outcome{http.StatusOK, fmt.Sprintf("credited: deposit %d, account %d balance now %d kobo, committed", depositID, ev.Account, balance)}, nil
}

// duplicateNote says, for the log, why a delivery credits nothing.
func duplicateNote(ctx context.Context, tx pgx.Tx, ev *event, conflict string) string {
	var byEvent string
	var account int32
	var amount int64
	err := tx.QueryRow(ctx, `SELECT event_id, account_id, amount_kobo FROM webhook_events
		WHERE event_id = $1 OR payment_ref = $2 ORDER BY event_id = $1 DESC LIMIT 1`,
		ev.ID, ev.Payment).Scan(&byEvent, &account, &amount)
	if err != nil {
		return "duplicate (" + conflict + "): credited nothing"
	}
	what := "duplicate: event already processed, credited nothing"
	if byEvent != ev.ID {
		what = fmt.Sprintf("duplicate: payment %q already credited by event %q, credited nothing", ev.Payment, byEvent)
	}
	if account != ev.Account || amount != ev.Amount {
		what += fmt.Sprintf(" (WARNING: recorded account %d amount %d kobo differ from this delivery's)", account, amount)
	}
	return what
}
