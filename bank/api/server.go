package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
)

// MaxBody is the largest request body the server reads.
const MaxBody = 16 << 10

// Tokens are the demo bearer tokens: they stand in for a session lookup.
var Tokens = map[string]int64{"token-ada": 1, "token-bola": 2, "token-chidi": 3}

// Handler answers one delivery of a transfer request. Transfers is the
// correct one; the lab's mistakes provide broken ones on purpose.
type Handler interface {
	Handle(ctx context.Context, c Call) (idem.Response, error)
}

// Server is the transfer API over HTTP.
type Server struct {
	Transfers Handler
	DB        bank.DB
	Keys      idem.DB // where GET /transfers?key= looks
	Tokens    map[string]int64
	Now       func() time.Time // the clock
	Log       io.Writer        // one line per request; nil for none

	// Faults for demos and tests: lose responses after the handler has
	// committed, by closing the connection instead of answering.
	LoseFirst int64      // lose the first N transfer responses
	LoseRate  float64    // then lose each with this probability
	Rand      *rand.Rand // for LoseRate; seeded by the caller

	// RateLimit is how many transfer requests per second each user may
	// send (bursts up to the same number); 0 means no limit. A limited
	// request gets 429 with Retry-After and is never stored under its key.
	RateLimit float64

	lost    atomic.Int64
	randMu  sync.Mutex
	buckets sync.Map // user id -> *bucket
	Metrics Metrics
}

// bucket is one user's token bucket.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// allow takes a token from the user's bucket, refilled at RateLimit per
// second on the server's clock.
func (s *Server) allow(user int64) bool {
	if s.RateLimit <= 0 {
		return true
	}
	v, _ := s.buckets.LoadOrStore(user, &bucket{tokens: s.RateLimit, last: s.Now()})
	b := v.(*bucket)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := s.Now()
	b.tokens = min(s.RateLimit, b.tokens+now.Sub(b.last).Seconds()*s.RateLimit)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Metrics are the server's counters, served at /metrics.
type Metrics struct {
	Requests, Replays, Conflicts, Unprocessable, Takeovers, Lost, Fenced, Limited atomic.Int64
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	note := s.route(sw, r)
	s.Metrics.Requests.Add(1)
	if s.Log != nil {
		if key := r.Header.Get("Idempotency-Key"); key != "" {
			if len(key) > 8 {
				key = key[:8] + "…"
			}
			note += " key=" + logSafe(key)
		}
		status := strconv.Itoa(sw.status)
		if sw.status == 0 {
			status = "lost" // the connection was closed instead of answered
		}
		// The path as it came, still escaped: a decoded %0a would forge a
		// log line, and escape codes would reach the terminal.
		fmt.Fprintf(s.Log, "%s %s %s%s %s\n", r.Method, logSafe(r.URL.EscapedPath()), status, note, time.Since(start).Round(time.Microsecond))
	}
}

// route answers one request; the string it returns is added to the log.
func (s *Server) route(w http.ResponseWriter, r *http.Request) string {
	path := r.URL.Path
	switch {
	case path == "/healthz":
		if !allow(w, r, "GET") {
			return ""
		}
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	case path == "/metrics":
		if !allow(w, r, "GET") {
			return ""
		}
		s.writeMetrics(w)
	case path == "/transfers":
		if r.Method == "GET" {
			s.lookup(w, r)
			return ""
		}
		if !allow(w, r, "GET", "POST") {
			return ""
		}
		return s.transfer(w, r)
	case strings.HasPrefix(path, "/accounts/"):
		if !allow(w, r, "GET") {
			return ""
		}
		s.account(w, r, strings.TrimPrefix(path, "/accounts/"))
	default:
		problem(w, http.StatusNotFound, "not_found", "no such endpoint: try POST /transfers, GET /transfers?key=, GET /accounts/{id}, GET /healthz or GET /metrics")
	}
	return ""
}

func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	problem(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; use "+strings.Join(methods, " or "))
	return false
}

func (s *Server) user(w http.ResponseWriter, r *http.Request) (int64, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	id, known := s.Tokens[token]
	if !ok || !known {
		w.Header().Set("WWW-Authenticate", "Bearer")
		problem(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer token-ada (or token-bola, token-chidi)")
		return 0, false
	}
	return id, true
}

func (s *Server) transfer(w http.ResponseWriter, r *http.Request) string {
	user, ok := s.user(w, r)
	if !ok {
		return ""
	}
	if r.ContentLength > MaxBody {
		// Refused on the declared length, before reading: a client that
		// sent "Expect: 100-continue" is told now, not after it was asked
		// for the body and then cut off.
		problem(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body must be at most %d bytes", MaxBody))
		return ""
	}
	if !s.allow(user) {
		s.Metrics.Limited.Add(1)
		w.Header().Set("Retry-After", RetryAfter(http.StatusTooManyRequests))
		problem(w, http.StatusTooManyRequests, "rate_limited", "too many requests; retry after the Retry-After delay with the same Idempotency-Key")
		return " limited"
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		problem(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body must be at most %d bytes", MaxBody))
		return ""
	}
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid_json", "the body could not be read")
		return ""
	}
	if msg := checkShape(body); msg != "" {
		problem(w, http.StatusBadRequest, "invalid_json", msg)
		return ""
	}
	// Once started, a transfer runs to its own end (commit, or rollback
	// when its lock was taken over) rather than being cut off halfway by a
	// client that hung up; the timeout bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 15*time.Second)
	defer cancel()
	resp, err := s.Transfers.Handle(ctx, Call{UserID: user, Key: r.Header.Get("Idempotency-Key"), Body: body, Now: s.Now()})
	if err != nil {
		if errors.Is(err, idem.ErrLockLost) {
			s.Metrics.Fenced.Add(1)
		}
		problem(w, http.StatusInternalServerError, "internal_error", "the transfer did not happen; retry with the same Idempotency-Key")
		return " error=" + strconv.Quote(err.Error())
	}
	note := s.count(resp)
	if s.lose() {
		s.Metrics.Lost.Add(1)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return note
		}
	}
	if resp.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if v := RetryAfter(resp.Status); v != "" {
		w.Header().Set("Retry-After", v)
	}
	writeJSON(w, resp.Status, resp.Body)
	return note
}

// RetryAfter is the Retry-After header the API sends with a status.
func RetryAfter(status int) string {
	if status == http.StatusConflict || status == http.StatusTooManyRequests {
		return "1"
	}
	return ""
}

func (s *Server) count(resp idem.Response) string {
	note := ""
	if resp.Replayed {
		s.Metrics.Replays.Add(1)
		note += " replayed"
	}
	if resp.TookOver {
		s.Metrics.Takeovers.Add(1)
		note += " takeover"
	}
	switch resp.Status {
	case http.StatusConflict:
		s.Metrics.Conflicts.Add(1)
	case http.StatusUnprocessableEntity:
		s.Metrics.Unprocessable.Add(1)
	}
	return note
}

func (s *Server) lose() bool {
	if s.lost.Add(1) <= s.LoseFirst {
		return true
	}
	if s.LoseRate <= 0 || s.Rand == nil {
		return false
	}
	s.randMu.Lock()
	defer s.randMu.Unlock()
	return s.Rand.Float64() < s.LoseRate
}

// checkShape refuses what is not one JSON object of the transfer's known
// fields. The fields' values are the bank's to judge.
func checkShape(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return `the body must be a JSON object such as {"from":1,"to":2,"amountKobo":1000000}`
	}
	if _, err := dec.Token(); err != io.EOF {
		return "the body has data after its JSON object"
	}
	for name := range fields {
		switch name {
		case "from", "to", "amountKobo":
		default:
			return fmt.Sprintf("unknown field %q: a transfer has from, to and amountKobo", name)
		}
	}
	return ""
}

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
		problem(w, http.StatusInternalServerError, "internal_error", "the key could not be looked up; try again")
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

func (s *Server) account(w http.ResponseWriter, r *http.Request, rawID string) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	notFound := func() { problem(w, http.StatusNotFound, "account_not_found", "account "+rawID+" was not found") }
	id, err := strconv.ParseInt(rawID, 10, 64)
	if err != nil {
		notFound()
		return
	}
	var a struct {
		ID          int64  `json:"id"`
		Holder      string `json:"holder"`
		Status      string `json:"status"`
		BalanceKobo int64  `json:"balanceKobo"`
	}
	var owner int64
	err = s.DB.QueryRow(r.Context(), "SELECT id, owner_id, holder, status, balance_kobo FROM accounts WHERE id = $1::bigint", id).
		Scan(&a.ID, &owner, &a.Holder, &a.Status, &a.BalanceKobo)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && owner != user {
		notFound()
		return
	}
	if err != nil {
		problem(w, http.StatusInternalServerError, "internal_error", "the account could not be read; try again")
		return
	}
	b, _ := json.Marshal(a)
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) writeMetrics(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	if h, ok := s.Transfers.(interface{ Holding() int64 }); ok {
		fmt.Fprintf(w, "# HELP bank_holding_keys Requests holding a claimed key right now.\n# TYPE bank_holding_keys gauge\nbank_holding_keys %d\n", h.Holding())
	}
	for _, m := range []struct {
		name, help string
		v          *atomic.Int64
	}{
		{"bank_requests_total", "Requests served.", &s.Metrics.Requests},
		{"bank_replays_total", "Transfer responses replayed from the key store.", &s.Metrics.Replays},
		{"bank_conflicts_total", "409 answers: a copy arrived while the first was in progress.", &s.Metrics.Conflicts},
		{"bank_unprocessable_total", "422 answers: business refusals and reused keys.", &s.Metrics.Unprocessable},
		{"bank_takeovers_total", "Expired locks taken over by a retry.", &s.Metrics.Takeovers},
		{"bank_lost_responses_total", "Responses lost on purpose (--lose-responses, --lose-rate).", &s.Metrics.Lost},
		{"bank_fenced_total", "Completions refused by the fencing token: a holder that lost its lock.", &s.Metrics.Fenced},
		{"bank_rate_limited_total", "429 answers: a user over --rate-limit.", &s.Metrics.Limited},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", m.name, m.help, m.name, m.name, m.v.Load())
	}
}

func problem(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, idem.Problem(status, code, message).Body)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body) // no newline: a replay is the stored body, byte for byte
}

var _ http.Handler = (*Server)(nil)

// logSafe quotes what a client sent when it holds anything but printable
// ASCII, so that no request can write a line or an escape code of its own
// into the log.
func logSafe(s string) string {
	for _, r := range s {
		if r < 0x20 || r >= 0x7f {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
