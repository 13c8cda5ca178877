package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, pgserver.Template{Prefix: "bank", Schema: api.SchemaText(), Setup: api.Setup})
}

// FuzzTransferEndpoint: whatever the key header and the body, the API
// never answers 5xx, and nothing in the database changes unless it
// answered 201.
func FuzzTransferEndpoint(f *testing.F) {
	for _, seed := range []struct{ key, body string }{
		{"fuzz-key-000000000001", `{"from":1,"to":2,"amountKobo":100}`},
		{"", `{"from":1,"to":2,"amountKobo":100}`},
		{"short", `{}`},
		{"fuzz-key-000000000002", `{"from":1,"to":2,"amountKobo":100,"x":1}`},
		{"fuzz-key-000000000003", `{"from":1,"to":2,"amountKobo":100} trailing`},
		{"fuzz-key-000000000004", `{"from":"1","to":2,"amountKobo":100}`},
		{"fuzz-key-000000000005", `{"from":1,"to":99,"amountKobo":100}`},
		{"fuzz-key-000000000006", `{"from":3,"to":1,"amountKobo":100}`},
		{"fuzz-key-000000000007", strings.Repeat("[", 20000)},
		{"fuzz key with spaces!", `{"from":1,"to":2,"amountKobo":100}`},
		{"fuzz-key-000000000008", "\xff\xfe"},
	} {
		f.Add(seed.key, []byte(seed.body))
	}
	pool, _ := pgtest.DB(f)
	srv := &api.Server{
		Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{}},
		DB:        pool, Keys: pool, Tokens: api.Tokens,
		Now: func() time.Time { return time.Date(2026, 9, 24, 10, 0, 0, 0, time.UTC) },
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, key string, body []byte) {
		before, err := bank.Read(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		var keysBefore int
		pool.QueryRow(ctx, "SELECT count(*) FROM idempotency_keys").Scan(&keysBefore)
		req := httptest.NewRequest("POST", "/transfers", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer token-ada")
		if strings.ContainsAny(key, "\r\n\x00") {
			key = "" // not a header value an HTTP client could send
		}
		req.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%d for key %q body %q: %s", w.Code, key, body, w.Body)
		}
		after, _ := bank.Read(ctx, pool)
		if w.Code != http.StatusCreated && after.Line() != before.Line() {
			t.Fatalf("%d changed the bank: %s -> %s", w.Code, before.Line(), after.Line())
		}
		var keysAfter int
		pool.QueryRow(ctx, "SELECT count(*) FROM idempotency_keys").Scan(&keysAfter)
		if w.Code == http.StatusBadRequest && keysAfter != keysBefore && !strings.Contains(w.Body.String(), "invalid_a") {
			t.Fatalf("a malformed request stored a key: %s", w.Body)
		}
	})
}

// TestRateLimit: over the limit a user gets 429 with Retry-After, nothing
// is stored under the key, and once the bucket refills the same request
// goes through.
func TestRateLimit(t *testing.T) {
	pool, _ := pgtest.DB(t)
	now := time.Date(2026, 9, 24, 10, 0, 0, 0, time.UTC)
	srv := &api.Server{
		Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{}},
		DB:        pool, Keys: pool, Tokens: api.Tokens, RateLimit: 2,
		Now: func() time.Time { return now },
	}
	post := func(key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/transfers", strings.NewReader(`{"from":1,"to":2,"amountKobo":100}`))
		req.Header.Set("Authorization", "Bearer token-ada")
		req.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w
	}
	for i, want := range []int{201, 201, 429} {
		if w := post("rate-limit-key-00000" + string(rune('a'+i))); w.Code != want {
			t.Fatalf("request %d: %d, want %d", i, w.Code, want)
		}
	}
	if w := post("rate-limit-key-00000c"); w.Header().Get("Retry-After") != "1" {
		t.Fatalf("429 without Retry-After: %v", w.Header())
	}
	if _, found, _ := idem.Lookup(context.Background(), pool, 1, "rate-limit-key-00000c"); found {
		t.Fatal("a limited request was stored under its key")
	}
	now = now.Add(time.Second)
	if w := post("rate-limit-key-00000c"); w.Code != 201 {
		t.Fatalf("after the refill: %d %s", w.Code, w.Body)
	}
}
