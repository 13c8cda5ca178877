package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
)

// MaxBody is the largest request body the server reads.
const MaxBody = 16 << 10

// Tokens are the demo bearer tokens: they stand in for a session lookup.
var Tokens = map[string]int64{"token-ada": 1, "token-bola": 2, "token-chidi": 3}

// HandlerFunc makes a function a Handler, for a server that is a few
// lines of its own.
type HandlerFunc func(ctx context.Context, c Call) (idem.Response, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, c Call) (idem.Response, error) { return f(ctx, c) }

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

	// LoseAnswer is a fault the lab injects (nil in production): asked
	// once for each transfer that ran, when it says true the answer is
	// lost, the connection closed instead of answered.
	LoseAnswer func() bool

	// RateLimit is how many transfer requests per second each user may
	// send (bursts up to the same number); 0 means no limit. A limited
	// request gets 429 with Retry-After and is never stored under its key.
	RateLimit float64

	buckets sync.Map // user id -> *bucket
	Metrics Metrics

	muxOnce sync.Once
	mux     *http.ServeMux
}

type statusWriter struct {
	http.ResponseWriter
	status int
	note   string // for the log line
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

// ServeHTTP answers one request and logs it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.muxOnce.Do(s.routes)
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	s.mux.ServeHTTP(sw, r)
	s.Metrics.Requests.Add(1)
	if s.Log != nil {
		note := sw.note
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

// routes are the API's endpoints. Each path also has a catch-all for the
// methods it does not take, so that they get the API's problem details
// 405 (with Allow) rather than the mux's plain text; anything else is a
// problem details 404. A GET route answers HEAD too (net/http's mux),
// so Allow names it.
func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", s.health)
	m.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	})
	m.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) { s.writeMetrics(w) })
	m.HandleFunc("POST /transfers", s.transfer)
	m.HandleFunc("GET /transfers", s.lookup)
	m.HandleFunc("GET /transfers/{id}", s.transferByID)
	m.HandleFunc("GET /accounts/{id}", s.account)
	m.HandleFunc("GET /problems", problemIndex)
	m.HandleFunc("GET /problems/{code}", problemPage)
	for path, allowed := range map[string]string{
		"/healthz": "GET, HEAD", "/livez": "GET, HEAD", "/metrics": "GET, HEAD",
		"/transfers": "GET, HEAD, POST", "/transfers/{id}": "GET, HEAD", "/accounts/{id}": "GET, HEAD",
		"/problems": "GET, HEAD", "/problems/{code}": "GET, HEAD",
	} {
		m.HandleFunc(path, methodNotAllowed(allowed))
	}
	m.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		problem(w, http.StatusNotFound, "not_found", "no such endpoint: try POST /transfers, GET /transfers/{id}, GET /transfers?key=, GET /accounts/{id}, GET /healthz, GET /livez or GET /metrics")
	})
	s.mux = m
}

// health is GET /healthz, the readiness check: 200 when the database
// answers, else 503 with Retry-After, so that a load balancer sends no
// transfers to a server that cannot make them. (GET /livez only says the
// process answers HTTP.)
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var one int
	if err := s.DB.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		s.unavailable(w, "the database cannot be reached; this server cannot make transfers until it can")
		noteLog(w, " error="+strconv.Quote(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

func methodNotAllowed(allowed string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allowed)
		problem(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; use "+orList(allowed))
	}
}

// orList says a list such as "GET, HEAD, POST" as "GET, HEAD or POST".
func orList(list string) string {
	if i := strings.LastIndex(list, ", "); i >= 0 {
		return list[:i] + " or " + list[i+2:]
	}
	return list
}

// noteLog adds a few words to the request's log line.
func noteLog(w http.ResponseWriter, note string) {
	if sw, ok := w.(*statusWriter); ok {
		sw.note += note
	}
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

// transfer is POST /transfers: the user, the key, the body, the handler,
// and the answer (or, on a fault the lab injects, no answer). It is long
// because each refusal the lesson names has its own status and words here.
func (s *Server) transfer(w http.ResponseWriter, r *http.Request) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	if r.ContentLength > MaxBody {
		// Refused on the declared length, before reading: a client that
		// sent "Expect: 100-continue" is told now, not after it was asked
		// for the body and then cut off.
		problem(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body must be at most %d bytes", MaxBody))
		return
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// RFC 9110 §15.5.16: say which codings would do (none).
		w.Header().Set("Accept-Encoding", "identity")
		problem(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "the body has Content-Encoding "+strconv.Quote(ce)+"; send it as plain JSON")
		return
	}
	key, ok := idem.KeyFromHeader(r.Header.Values("Idempotency-Key"))
	if !ok {
		writeProblem(w, idem.KeyInvalid())
		return
	}
	if !s.admit(user) {
		s.Metrics.Limited.Add(1)
		w.Header().Set("Retry-After", RetryAfter(http.StatusTooManyRequests))
		msg := "too many requests; retry after the Retry-After delay"
		if key != "" {
			msg += " with the same Idempotency-Key"
		}
		problem(w, http.StatusTooManyRequests, "rate_limited", msg)
		noteLog(w, " limited")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		problem(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body must be at most %d bytes", MaxBody))
		return
	}
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid_json", "the body could not be read")
		return
	}
	if msg := checkShape(body); msg != "" {
		problem(w, http.StatusBadRequest, "invalid_json", msg)
		return
	}
	// Once started, a transfer runs to its own end (commit, or rollback
	// when its lock was taken over) rather than being cut off halfway by a
	// client that hung up; the timeout bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 15*time.Second)
	defer cancel()
	resp, err := s.Transfers.Handle(ctx, Call{UserID: user, Key: key, Body: body, Now: s.Now()})
	if err != nil {
		if errors.Is(err, idem.ErrLockLost) {
			s.Metrics.Fenced.Add(1)
		}
		if bank.Unavailable(err) {
			// The store gave the key back, or never claimed it: no answer
			// is kept under it. (A claim whose release could not reach the
			// database either waits out its lock.)
			s.unavailable(w, "the database cannot be reached right now; retry after the Retry-After delay with the same Idempotency-Key, which makes the transfer at most once")
		} else {
			problem(w, http.StatusInternalServerError, "internal_error", "the transfer did not happen; retry with the same Idempotency-Key")
		}
		noteLog(w, " error="+strconv.Quote(err.Error()))
		return
	}
	noteLog(w, s.count(resp))
	if s.LoseAnswer != nil && s.LoseAnswer() {
		s.Metrics.Lost.Add(1)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	if resp.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if v := RetryAfter(resp.Status); v != "" {
		w.Header().Set("Retry-After", v)
	}
	if resp.Status == http.StatusCreated {
		if id := transferID(resp.Body); id != 0 {
			w.Header().Set("Location", fmt.Sprintf("/transfers/%d", id))
		}
	}
	writeAnswer(w, resp.Status, resp.Body)
}

// transferID is the transferId of a receipt, or 0.
func transferID(body []byte) int64 {
	var r struct {
		TransferID int64 `json:"transferId"`
	}
	if json.Unmarshal(body, &r) != nil {
		return 0
	}
	return r.TransferID
}

// unavailable answers 503 with Retry-After: the database could not be
// reached. Never stored under a key: a retry may succeed.
func (s *Server) unavailable(w http.ResponseWriter, message string) {
	s.Metrics.Unavailable.Add(1)
	w.Header().Set("Retry-After", RetryAfter(http.StatusServiceUnavailable))
	problem(w, http.StatusServiceUnavailable, "service_unavailable", message)
}

// failed answers a request whose database work failed: 503 when the
// database could not be reached, else 500 internal_error with message.
func (s *Server) failed(w http.ResponseWriter, err error, message string) {
	if bank.Unavailable(err) {
		s.unavailable(w, "the database cannot be reached right now; retry after the Retry-After delay")
	} else {
		problem(w, http.StatusInternalServerError, "internal_error", message)
	}
	noteLog(w, " error="+strconv.Quote(err.Error()))
}

// RetryAfter is the Retry-After header the API sends with a status: a
// second for 409 (in progress), 429 (over the rate limit) and 503 (the
// database unreachable), nothing otherwise.
func RetryAfter(status int) string {
	if status == http.StatusConflict || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
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

func problem(w http.ResponseWriter, status int, code, message string) {
	writeProblem(w, idem.Problem(status, code, message))
}

func writeProblem(w http.ResponseWriter, p idem.Response) {
	writeAnswer(w, p.Status, p.Body)
}

// writeAnswer sends a status and its body: a 4xx or 5xx is a problem
// details object (application/problem+json), anything else JSON.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	if status >= 400 {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		w.Write(body) // a replay is the stored body, byte for byte
		return
	}
	writeJSON(w, status, body)
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
		if !unicode.IsGraphic(r) || r == '"' || r == '\\' {
			// A control byte (or what could pass for one) could forge a
			// line: quoted, with printable text kept as it is.
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}
