package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// The API beside the standards (issue #26): the draft's quoted key,
// problem details, honest outages and a Location for every transfer.

const okBody = `{"from":1,"to":2,"amountKobo":1000000}`

// call sends one request to srv. lines are the Idempotency-Key field
// lines, each sent as it is.
func call(srv http.Handler, method, path, token, body string, lines ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, l := range lines {
		req.Header.Add("Idempotency-Key", l)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	return w
}

// TestQuotedKeyAndItsBareTwin: the draft's key, "…", makes the transfer;
// the same key sent bare, as the lesson sends it, is the same key, and
// gets the stored answer; money moves once.
func TestQuotedKeyAndItsBareTwin(t *testing.T) {
	srv := testServer(t, nil)
	const key = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	first := call(srv, "POST", "/transfers", "token-ada", okBody, `"`+key+`"`)
	if first.Code != 201 || first.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the quoted key: %d %v %s", first.Code, first.Header(), first.Body)
	}
	twin := call(srv, "POST", "/transfers", "token-ada", okBody, key)
	if twin.Code != 201 || twin.Header().Get("Idempotent-Replayed") != "true" || twin.Body.String() != first.Body.String() {
		t.Fatalf("the bare twin: %d %v %s, want the replay of %s", twin.Code, twin.Header(), twin.Body, first.Body)
	}
	withParam := call(srv, "POST", "/transfers", "token-ada", okBody, `"`+key+`";v=1`)
	if withParam.Code != 201 || withParam.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf(`"key";v=1 is the same key, its parameter ignored: %d %s`, withParam.Code, withParam.Body)
	}
	if got := balanceOf(t, srv, "token-ada", 1); got != 4_000_000 {
		t.Fatalf("Ada has %d kobo: money moved more than once", got)
	}
	// The stored record is the inner key, as GET /transfers?key= finds it.
	if w := call(srv, "GET", "/transfers?key="+key, "token-ada", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `"completed"`) {
		t.Fatalf("lookup of the inner key: %d %s", w.Code, w.Body)
	}
}

// TestMalformedKeyFields: two key lines, or a value that is not one Item,
// are 400 idempotency_key_invalid, apart from a missing key's
// idempotency_key_required; nothing is stored and no money moves.
func TestMalformedKeyFields(t *testing.T) {
	srv := testServer(t, nil)
	for _, c := range []struct {
		lines []string
		code  string
	}{
		{[]string{"two-lines-key-000001", "two-lines-key-000001"}, "idempotency_key_invalid"},
		{[]string{`"two-lines-key-000002"`, "two-lines-key-000003"}, "idempotency_key_invalid"},
		{[]string{`"a-list-key-0000001", "a-list-key-0000002"`}, "idempotency_key_invalid"},
		{[]string{`"unterminated-key-00001`}, "idempotency_key_invalid"},
		{[]string{"key with spaces!"}, "idempotency_key_invalid"},
		{[]string{"12345.678"}, "idempotency_key_invalid"},
		{nil, "idempotency_key_required"},
		{[]string{"short"}, "idempotency_key_required"},
		{[]string{`"short"`}, "idempotency_key_required"},
		{[]string{`"has spaces, 16 chars or more"`}, "idempotency_key_required"},
	} {
		w := call(srv, "POST", "/transfers", "token-ada", okBody, c.lines...)
		if w.Code != 400 || lessonCode(t, w) != c.code {
			t.Errorf("%q: %d %s, want 400 %s", c.lines, w.Code, w.Body, c.code)
		}
	}
	if got := balanceOf(t, srv, "token-ada", 1); got != 5_000_000 {
		t.Fatalf("Ada has %d kobo: a refused request moved money", got)
	}
	var keys int
	srv.Keys.QueryRow(context.Background(), "SELECT count(*) FROM idempotency_keys").Scan(&keys)
	if keys != 0 {
		t.Fatalf("%d keys stored by refused requests", keys)
	}
}

// problemOf reads a 4xx or 5xx answer as RFC 9457 problem details and
// checks its members: the media type, a type that names the error, a
// title, the status of the answer, a detail, and the lesson's error and
// message kept as extension members.
func problemOf(t *testing.T, w *httptest.ResponseRecorder) idem.ProblemBody {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%d: Content-Type %q, want application/problem+json", w.Code, ct)
	}
	var raw map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatalf("%d: the body is not JSON: %s", w.Code, w.Body)
	}
	for _, m := range []string{"type", "title", "detail", "error", "message"} {
		if s, ok := raw[m].(string); !ok || s == "" {
			t.Errorf("%d %s: no %s", w.Code, w.Body, m)
		}
	}
	var p idem.ProblemBody
	json.Unmarshal(w.Body.Bytes(), &p)
	if p.Status != w.Code {
		t.Errorf("%s: status member %d, sent with %d", w.Body, p.Status, w.Code)
	}
	if p.Type != idem.ProblemTypes+p.Code || p.Detail != p.Message {
		t.Errorf("%s: type %q and detail should be the code's and the message", w.Body, p.Type)
	}
	return p
}

func lessonCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	return problemOf(t, w).Code
}

func balanceOf(t *testing.T, srv http.Handler, token string, account int) int64 {
	t.Helper()
	w := call(srv, "GET", "/accounts/"+strconv.Itoa(account), token, "")
	var a struct{ BalanceKobo int64 }
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &a) != nil {
		t.Fatalf("GET /accounts/%d: %d %s", account, w.Code, w.Body)
	}
	return a.BalanceKobo
}

// TestEveryErrorIsProblemDetails: every 4xx and 5xx the API sends, its
// own, idem's and the bank's, first answers and replays, parses as
// problem details and still carries the lesson's error; each type
// resolves, on the server, to the documentation of its code.
func TestEveryErrorIsProblemDetails(t *testing.T) {
	srv := testServer(t, nil)
	srv.RateLimit = 1000
	seen := map[string]bool{}
	check := func(name string, w *httptest.ResponseRecorder, status int, code string) {
		t.Helper()
		if w.Code != status {
			t.Errorf("%s: %d %s, want %d", name, w.Code, w.Body, status)
			return
		}
		if got := problemOf(t, w).Code; got != code {
			t.Errorf("%s: error %q, want %q", name, got, code)
		}
		seen[code] = true
	}
	post := func(token, body string, lines ...string) *httptest.ResponseRecorder {
		return call(srv, "POST", "/transfers", token, body, lines...)
	}
	check("no token", post("", okBody, "problem-key-0000001"), 401, "unauthorized")
	check("malformed JSON", post("token-ada", `{"from":`, "problem-key-0000001"), 400, "invalid_json")
	check("no key", post("token-ada", okBody), 400, "idempotency_key_required")
	check("two keys", post("token-ada", okBody, "problem-key-0000001", "problem-key-0000002"), 400, "idempotency_key_invalid")
	check("too long a key", post("token-ada", okBody, strings.Repeat("k", 65)), 400, "idempotency_key_too_long")
	check("too long a key, a digit first", post("token-ada", okBody, strings.Repeat("8e03978e-", 8)), 400, "idempotency_key_too_long")
	check("too long a key, quoted", post("token-ada", okBody, `"`+strings.Repeat("k", 65)+`"`), 400, "idempotency_key_too_long")
	check("string amount", post("token-ada", `{"from":1,"to":2,"amountKobo":"5"}`, "problem-key-0000003"), 400, "invalid_amount")
	check("string account", post("token-ada", `{"from":"1","to":2,"amountKobo":5}`, "problem-key-0000004"), 400, "invalid_account")
	check("not the user's", post("token-bola", okBody, "problem-key-0000005"), 404, "account_not_found")
	check("same account", post("token-ada", `{"from":1,"to":1,"amountKobo":5}`, "problem-key-0000006"), 422, "same_account")
	check("frozen sender", post("token-chidi", `{"from":3,"to":1,"amountKobo":5}`, "problem-key-0000007"), 422, "account_not_active")
	check("frozen recipient", post("token-ada", `{"from":1,"to":3,"amountKobo":5}`, "problem-key-0000008"), 422, "recipient_unavailable")
	check("too much", post("token-ada", `{"from":1,"to":2,"amountKobo":9000000}`, "problem-key-0000009"), 422, "insufficient_funds")
	replayed := post("token-ada", `{"from":1,"to":2,"amountKobo":9000000}`, "problem-key-0000009")
	check("a stored refusal, replayed", replayed, 422, "insufficient_funds")
	if replayed.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("the refusal was not replayed: %v", replayed.Header())
	}
	if w := post("token-ada", okBody, "problem-key-0000010"); w.Code != 201 {
		t.Fatalf("a transfer: %d %s", w.Code, w.Body)
	}
	check("reused key", post("token-ada", `{"from":1,"to":2,"amountKobo":5}`, "problem-key-0000010"), 422, "idempotency_key_reused")
	check("huge body", post("token-ada", `{"from":1`+strings.Repeat(" ", 17<<10)+`}`, "problem-key-0000011"), 413, "body_too_large")
	gz := httptest.NewRequest("POST", "/transfers", strings.NewReader("\x1f\x8b"))
	gz.Header.Set("Authorization", "Bearer token-ada")
	gz.Header.Set("Idempotency-Key", "problem-key-0000012")
	gz.Header.Set("Content-Encoding", "gzip")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, gz)
	check("a gzip body", w, 415, "unsupported_media_type")
	check("wrong method", call(srv, "PUT", "/transfers", "token-ada", okBody), 405, "method_not_allowed")
	check("no such path", call(srv, "GET", "/nope", "", ""), 404, "not_found")
	check("someone else's balance", call(srv, "GET", "/accounts/1", "token-bola", ""), 404, "account_not_found")
	check("lookup without a key", call(srv, "GET", "/transfers", "token-ada", ""), 400, "key_required")
	check("lookup of an impossible key", call(srv, "GET", "/transfers?key=%00", "token-ada", ""), 400, "invalid_key")
	check("lookup of a key never sent", call(srv, "GET", "/transfers?key=never-sent-00000001", "token-ada", ""), 404, "key_not_found")
	check("no such transfer", call(srv, "GET", "/transfers/99", "token-ada", ""), 404, "transfer_not_found")

	// The 429, in a server of its own with a tight limit.
	limited := testServer(t, nil)
	limited.RateLimit = 1
	call(limited, "POST", "/transfers", "token-ada", okBody, "problem-key-0000013")
	check("over the limit", call(limited, "POST", "/transfers", "token-ada", okBody, "problem-key-0000014"), 429, "rate_limited")

	// The 409, with a request held inside its work.
	held := make(chan struct{})
	release := make(chan struct{})
	pool := srv.Keys.(*pgxpool.Pool)
	inProgress := &api.Server{
		Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{}, Hooks: api.Hooks{AfterClaim: func(context.Context) {
			close(held)
			<-release
		}}},
		DB: pool, Keys: pool, Tokens: api.Tokens, Now: time.Now,
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		done <- call(inProgress, "POST", "/transfers", "token-ada", `{"from":1,"to":2,"amountKobo":7}`, "problem-key-0000015")
	}()
	<-held
	check("a copy in progress", call(srv, "POST", "/transfers", "token-ada", `{"from":1,"to":2,"amountKobo":7}`, "problem-key-0000015"), 409, "request_in_progress")
	close(release)
	<-done

	// The 500 and the 503: a handler that fails, and a dead database.
	failing := &api.Server{DB: pool, Keys: pool, Tokens: api.Tokens, Now: time.Now,
		Transfers: api.HandlerFunc(func(context.Context, api.Call) (idem.Response, error) { return idem.Response{}, io.ErrShortWrite })}
	check("a failure", call(failing, "POST", "/transfers", "token-ada", okBody, "problem-key-0000016"), 500, "internal_error")
	dead := deadServer(t)
	check("a dead database", call(dead, "POST", "/transfers", "token-ada", okBody, "problem-key-0000017"), 503, "service_unavailable")
	check("health with a dead database", call(dead, "GET", "/healthz", "", ""), 503, "service_unavailable")

	// Every code the source can answer with was seen, and every type
	// resolves to its documentation, on the server that sent it.
	for _, code := range sourceCodes(t) {
		if !seen[code] {
			t.Errorf("no request above was answered %s", code)
		}
	}
	for code := range seen {
		page := call(srv, "GET", idem.ProblemTypes+code, "", "")
		if page.Code != 200 || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/plain") || !strings.Contains(page.Body.String(), idem.Title(code)) {
			t.Errorf("%s%s: %d %q", idem.ProblemTypes, code, page.Code, page.Body)
		}
	}
	if index := call(srv, "GET", "/problems", "", ""); index.Code != 200 || strings.Count(index.Body.String(), idem.ProblemTypes) != len(api.ProblemDocs) {
		t.Errorf("GET /problems: %d %s", index.Code, index.Body)
	}
}

// sourceCodes are the error codes the API's source answers with: its
// handlers' and idem's (as bank help's test finds them), and the bank's
// refusals (its Code constants).
func sourceCodes(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`(?:problem\(w, |Problem\(|refuse\()http\.Status\w+, "([a-z_]+)"|\w+ +Code = "([a-z_]+)"`)
	var codes []string
	for _, pattern := range []string{"*.go", "../../idem/*.go", "../*.go"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				if c := m[1] + m[2]; !slices.Contains(codes, c) {
					codes = append(codes, c)
				}
			}
		}
	}
	for _, d := range api.ProblemDocs {
		if !slices.Contains(codes, d.Code) {
			t.Errorf("api.ProblemDocs documents %s, which the source never answers", d.Code)
		}
	}
	for _, c := range codes {
		if _, ok := api.LookupProblem(c); !ok {
			t.Errorf("%s has no entry in api.ProblemDocs", c)
		}
	}
	if len(codes) < 20 {
		t.Fatalf("found only %d codes (%v): has the source moved?", len(codes), codes)
	}
	return codes
}

// deadServer is a server whose database cannot be reached: nothing
// listens where its pool points.
func deadServer(t *testing.T) *api.Server {
	t.Helper()
	cfg, err := pgxpool.ParseConfig("postgres://postgres@127.0.0.1:1/bank?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &api.Server{
		Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{}},
		DB:        pool, Keys: pool, Tokens: api.Tokens, Now: time.Now,
	}
}

// TestDatabaseDownIs503: with the database out of reach, a transfer and
// the health check answer 503 with Retry-After (the process itself is
// live); nothing is stored under the key, so once the database is back
// the same key makes the transfer, not a replay.
func TestDatabaseDownIs503(t *testing.T) {
	dead := deadServer(t)
	for _, w := range []*httptest.ResponseRecorder{
		call(dead, "POST", "/transfers", "token-ada", okBody, "outage-key-00000001"),
		call(dead, "POST", "/transfers", "token-ada", okBody, `"outage-key-00000001"`),
		call(dead, "GET", "/healthz", "", ""),
		call(dead, "GET", "/accounts/1", "token-ada", ""),
		call(dead, "GET", "/transfers?key=outage-key-00000001", "token-ada", ""),
		call(dead, "GET", "/transfers/1", "token-ada", ""),
	} {
		if w.Code != 503 || w.Header().Get("Retry-After") == "" || lessonCode(t, w) != "service_unavailable" {
			t.Errorf("%d %v %s, want 503 with Retry-After", w.Code, w.Header(), w.Body)
		}
	}
	if w := call(dead, "GET", "/livez", "", ""); w.Code != 200 {
		t.Errorf("/livez with the database down: %d; the process is alive", w.Code)
	}
	if dead.Metrics.Unavailable.Load() != 6 {
		t.Errorf("bank_unavailable_total %d, want 6", dead.Metrics.Unavailable.Load())
	}
	up := testServer(t, nil)
	if w := call(up, "GET", "/healthz", "", ""); w.Code != 200 {
		t.Fatalf("/healthz with the database up: %d %s", w.Code, w.Body)
	}
	again := call(up, "POST", "/transfers", "token-ada", okBody, "outage-key-00000001")
	if again.Code != 201 || again.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same key once the database is back: %d %v %s", again.Code, again.Header(), again.Body)
	}
}

// TestConnectionLostAfterTheClaimIs503AndReleased: the database goes away
// under a request that has claimed its key (its session is terminated
// inside the work): 503, the key is given back, not stored, and the retry
// makes the transfer once.
func TestConnectionLostAfterTheClaimIs503AndReleased(t *testing.T) {
	up := testServer(t, nil)
	pool := up.Keys.(*pgxpool.Pool)
	ctx := context.Background()
	kill := true
	srv := &api.Server{DB: pool, Keys: pool, Tokens: api.Tokens, Now: time.Now,
		Transfers: api.HandlerFunc(func(ctx context.Context, c api.Call) (idem.Response, error) {
			req := idem.Request{UserID: c.UserID, Key: c.Key, Method: "POST", Path: "/transfers", Body: c.Body, Now: c.Now}
			return (&idem.Store{}).Do(ctx, pool, req, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
				if kill {
					kill = false
					var pid int
					tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
					pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
				}
				return api.Transfer(ctx, tx, c.UserID, c.Body)
			})
		})}
	w := call(srv, "POST", "/transfers", "token-ada", okBody, "lost-conn-key-000001")
	if w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("the session terminated under the request: %d %v %s, want 503", w.Code, w.Header(), w.Body)
	}
	if _, found, err := idem.Lookup(ctx, pool, 1, "lost-conn-key-000001"); err != nil || found {
		t.Fatalf("the key after a 503: found %v, %v; want it released", found, err)
	}
	if w := call(srv, "POST", "/transfers", "token-ada", okBody, "lost-conn-key-000001"); w.Code != 201 || w.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if line, _ := bank.Balances(ctx, pool); !strings.Contains(line, "transfers 1") {
		t.Fatalf("after the retry: %s", line)
	}
}

// TestLocationResolvesForItsOwner: a 201 (and its replay) carries
// Location: /transfers/{id}; that address answers the transfer to the
// user who sent it, and 404 to another user, as for no such id.
func TestLocationResolvesForItsOwner(t *testing.T) {
	srv := testServer(t, nil)
	first := call(srv, "POST", "/transfers", "token-ada", okBody, "location-key-0000001")
	loc := first.Header().Get("Location")
	if first.Code != 201 || loc != "/transfers/1" {
		t.Fatalf("201 with Location %q: %d %s", loc, first.Code, first.Body)
	}
	if replay := call(srv, "POST", "/transfers", "token-ada", okBody, "location-key-0000001"); replay.Header().Get("Location") != loc {
		t.Fatalf("the replay's Location %q, want %q", replay.Header().Get("Location"), loc)
	}
	got := call(srv, "GET", loc, "token-ada", "")
	var tr map[string]any
	if got.Code != 200 || got.Header().Get("Content-Type") != "application/json" || json.Unmarshal(got.Body.Bytes(), &tr) != nil {
		t.Fatalf("GET %s as its owner: %d %s", loc, got.Code, got.Body)
	}
	if tr["transferId"] != 1.0 || tr["from"] != 1.0 || tr["to"] != 2.0 || tr["amountKobo"] != 1e6 {
		t.Fatalf("GET %s: %s", loc, got.Body)
	}
	for _, c := range []struct{ token, path string }{
		{"token-bola", loc}, // the recipient does not own it
		{"token-chidi", loc},
		{"token-ada", "/transfers/2"},
		{"token-ada", "/transfers/x"},
		{"token-ada", "/transfers/99999999999999999999"},
	} {
		if w := call(srv, "GET", c.path, c.token, ""); w.Code != 404 || lessonCode(t, w) != "transfer_not_found" {
			t.Errorf("GET %s as %s: %d %s, want 404 transfer_not_found", c.path, c.token, w.Code, w.Body)
		}
	}
	if w := call(srv, "GET", loc, "", ""); w.Code != 401 {
		t.Errorf("GET %s with no token: %d", loc, w.Code)
	}
	if w := call(srv, "DELETE", loc, "token-ada", ""); w.Code != 405 || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE %s: %d, Allow %q", loc, w.Code, w.Header().Get("Allow"))
	}
	// The 405's detail names every method Allow lists, HEAD too.
	for path, want := range map[string]string{loc: "use GET or HEAD", "/transfers": "use GET, HEAD or POST", "/healthz": "use GET or HEAD"} {
		w := call(srv, "PUT", path, "token-ada", "")
		if p := problemOf(t, w); w.Code != 405 || !strings.HasSuffix(p.Detail, want) {
			t.Errorf("PUT %s: %d, detail %q, want it to end %q", path, w.Code, p.Detail, want)
		}
	}
}
