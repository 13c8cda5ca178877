package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// The key store alone: idem's tests need no bank.
func TestMain(m *testing.M) {
	pgtest.Main(m, pgserver.Template{Prefix: "idem", Schema: idem.Schema, Setup: func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, idem.Schema)
		return err
	}})
}

var t0 = time.Date(2026, 9, 24, 10, 0, 0, 0, time.UTC)

// counter is work that counts its runs in a table, so a test can tell
// how many times the effect really happened.
func counter(status int) idem.Work {
	return func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		var n int
		if err := tx.QueryRow(ctx, "INSERT INTO effects DEFAULT VALUES RETURNING id").Scan(&n); err != nil {
			return idem.Response{}, err
		}
		body, _ := json.Marshal(map[string]int{"run": n, "zeta": 1, "a": 2})
		return idem.Response{Status: status, Body: body}, nil
	}
}

func setup(t *testing.T) *pgxpool.Pool {
	pool, _ := pgtest.DB(t)
	if _, err := pool.Exec(context.Background(), "CREATE TABLE effects (id serial PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return pool
}

func effects(t *testing.T, pool *pgxpool.Pool) int {
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM effects").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func req(user int64, key, body string, now time.Time) idem.Request {
	return idem.Request{UserID: user, Key: key, Method: "POST", Path: "/transfers", Body: []byte(body), Now: now}
}

func code(t *testing.T, r idem.Response) string {
	var p struct{ Error string }
	_ = json.Unmarshal(r.Body, &p)
	return p.Error
}

const key = "tap-2026-09-24-0001"

func TestReplayMismatchScopeAndMissingKey(t *testing.T) {
	pool := setup(t)
	ctx := context.Background()
	s := &idem.Store{}
	do := func(r idem.Request) idem.Response {
		t.Helper()
		resp, err := s.Do(ctx, pool, r, counter(201))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := do(req(1, key, `{"from":1,"to":2,"amountKobo":1000000}`, t0))
	if first.Status != 201 || first.Replayed {
		t.Fatalf("first: %+v", first)
	}
	// The stored body is jsonb's text; the first answer is the same bytes.
	if want := `{"a": 2, "run": 1, "zeta": 1}`; string(first.Body) != want {
		t.Fatalf("first body %s, want %s", first.Body, want)
	}
	again := do(req(1, key, `{ "amountKobo": 1000000, "to": 2, "from": 1 }`, t0.Add(time.Second)))
	if again.Status != 201 || !again.Replayed || string(again.Body) != string(first.Body) {
		t.Fatalf("reordered copy should replay the same bytes: %+v", again)
	}
	other := do(req(1, key, `{"from":1,"to":2,"amountKobo":5000000}`, t0))
	if other.Status != 422 || code(t, other) != "idempotency_key_reused" {
		t.Fatalf("other amount: %d %s", other.Status, other.Body)
	}
	bola := do(req(2, key, `{"from":2,"to":1,"amountKobo":100000}`, t0))
	if bola.Status != 201 || bola.Replayed {
		t.Fatalf("keys are per user: %+v", bola)
	}
	for _, k := range []string{"", "short", "has space in it 0123"} {
		r := do(req(1, k, `{}`, t0))
		if r.Status != 400 || code(t, r) != "idempotency_key_required" {
			t.Fatalf("key %q: %d %s", k, r.Status, r.Body)
		}
	}
	// A key sent but too long gets a 400 of its own, which says so.
	for _, k := range []string{strings.Repeat("k", 65), string(make([]byte, 65)), strings.Repeat("8e03978e-", 20)} {
		r := do(req(1, k, `{}`, t0))
		if r.Status != 400 || code(t, r) != "idempotency_key_too_long" || !strings.Contains(string(r.Body), fmt.Sprintf("is %d characters long", len(k))) {
			t.Fatalf("key of %d characters: %d %s", len(k), r.Status, r.Body)
		}
	}
	if n := effects(t, pool); n != 2 {
		t.Fatalf("effects ran %d times, want 2", n)
	}
}

func TestRefusalsAreStoredAndReplayed(t *testing.T) {
	pool := setup(t)
	s := &idem.Store{}
	for i := 0; i < 2; i++ {
		r, err := s.Do(context.Background(), pool, req(2, "broke-0000000000002", `{"x":1}`, t0), counter(422))
		if err != nil || r.Status != 422 || r.Replayed != (i == 1) {
			t.Fatalf("delivery %d: %+v %v", i, r, err)
		}
	}
	if n := effects(t, pool); n != 1 {
		t.Fatalf("refusal ran %d times", n)
	}
}

func TestUnexpectedErrorAnd5xxReleaseTheKey(t *testing.T) {
	pool := setup(t)
	ctx := context.Background()
	s := &idem.Store{}
	boom := errors.New("boom")
	_, err := s.Do(ctx, pool, req(1, key, `{}`, t0), func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		if _, err := tx.Exec(ctx, "INSERT INTO effects DEFAULT VALUES"); err != nil {
			return idem.Response{}, err
		}
		return idem.Response{}, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	r, err := s.Do(ctx, pool, req(1, key, `{}`, t0), counter(503))
	if err != nil || r.Status != 503 || r.Replayed {
		t.Fatalf("after error the retry runs: %+v %v", r, err)
	}
	r, err = s.Do(ctx, pool, req(1, key, `{}`, t0), counter(201))
	if err != nil || r.Status != 201 || r.Replayed {
		t.Fatalf("a 5xx is not stored: %+v %v", r, err)
	}
	if n := effects(t, pool); n != 1 {
		t.Fatalf("only the committed run counts: %d", n)
	}
}

// TestInProgressTakeoverAndFencing is the lesson's crash story: a holder
// goes silent, a retry within the lock gets 409, one after it takes over,
// and the old holder's late completion is refused and rolled back.
func TestInProgressTakeoverAndFencing(t *testing.T) {
	pool := setup(t)
	ctx := context.Background()
	s := &idem.Store{LockTTL: 30 * time.Second}
	claimed, wake := make(chan struct{}), make(chan struct{})
	var aErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, aErr = s.Do(ctx, pool, req(1, key, `{"n":1}`, t0), func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
			close(claimed)
			<-wake
			return counter(201)(ctx, tx)
		})
	}()
	<-claimed
	early, err := s.Do(ctx, pool, req(1, key, `{"n":1}`, t0.Add(10*time.Second)), counter(201))
	if err != nil || early.Status != 409 || code(t, early) != "request_in_progress" {
		t.Fatalf("within the lock: %+v %v", early, err)
	}
	late, err := s.Do(ctx, pool, req(1, key, `{"n":1}`, t0.Add(31*time.Second)), counter(201))
	if err != nil || late.Status != 201 || !late.TookOver {
		t.Fatalf("after the lock: %+v %v", late, err)
	}
	close(wake)
	wg.Wait()
	if !errors.Is(aErr, idem.ErrLockLost) {
		t.Fatalf("server A should lose the lock, got %v", aErr)
	}
	if n := effects(t, pool); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
	replay, err := s.Do(ctx, pool, req(1, key, `{"n":1}`, t0.Add(40*time.Second)), counter(201))
	if err != nil || !replay.Replayed || string(replay.Body) != string(late.Body) {
		t.Fatalf("replay after takeover: %+v %v", replay, err)
	}
}

func TestConcurrentCopiesRunOnce(t *testing.T) {
	pool := setup(t)
	s := &idem.Store{}
	var wg sync.WaitGroup
	statuses := make(chan int, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Do(context.Background(), pool, req(1, key, `{"n":1}`, t0), counter(201))
			if err != nil {
				t.Error(err)
			}
			statuses <- r.Status
		}()
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 201 && st != http.StatusConflict {
			t.Errorf("unexpected status %d", st)
		}
	}
	if n := effects(t, pool); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}
