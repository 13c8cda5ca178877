// Command selffence is a transfer server for one test of the grader (its
// TestSlowFirstRequestFencedByItself): the first request under a key
// named grade-plain-… is slower than its lock, so it rolls its own work
// back and answers 409, as a server that fences itself does on a slow
// machine; every other request is served, and a copy gets the stored
// answer. It keeps its keys in memory: only the plain check is run on it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

var users = map[string]int64{"Bearer token-ada": 1, "Bearer token-bola": 2, "Bearer token-chidi": 3}

func main() {
	ttl, _ := strconv.Atoi(os.Getenv("LOCK_TTL_MS"))
	pool, err := pgxpool.New(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	seen, stored := map[string]bool{}, map[string][]byte{}
	http.HandleFunc("/transfers", func(w http.ResponseWriter, r *http.Request) {
		user, key := users[r.Header.Get("Authorization")], strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
		var in struct{ From, To, AmountKobo int64 }
		if user == 0 || key == "" || json.NewDecoder(r.Body).Decode(&in) != nil {
			http.Error(w, `{"error":"bad_request"}`, 400)
			return
		}
		id := fmt.Sprint(user, "/", key)
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		answer, done := stored[id]
		first := !seen[id]
		seen[id] = true
		mu.Unlock()
		switch {
		case done:
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(201)
			w.Write(answer)
			return
		case first && strings.HasPrefix(key, "grade-plain-"):
			// Slower than the lock: its work rolled back, it says so.
			time.Sleep(time.Duration(ttl)*time.Millisecond + 300*time.Millisecond)
			w.WriteHeader(409)
			w.Write([]byte(`{"error":"in_progress"}`))
			return
		}
		var transfer int64
		err := func() error {
			tx, err := pool.Begin(r.Context())
			if err != nil {
				return err
			}
			defer tx.Rollback(context.Background())
			tag, err := tx.Exec(r.Context(), "UPDATE accounts SET balance_kobo = balance_kobo - $1 WHERE id = $2 AND owner_id = $3 AND status = 'active' AND balance_kobo >= $1", in.AmountKobo, in.From, user)
			if err != nil || tag.RowsAffected() != 1 {
				return fmt.Errorf("refused")
			}
			if _, err := tx.Exec(r.Context(), "UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2", in.AmountKobo, in.To); err != nil {
				return err
			}
			if err := tx.QueryRow(r.Context(), "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3) RETURNING id", in.From, in.To, in.AmountKobo).Scan(&transfer); err != nil {
				return err
			}
			return tx.Commit(r.Context())
		}()
		if err != nil {
			w.WriteHeader(422)
			w.Write([]byte(`{"error":"refused"}`))
			return
		}
		answer, _ = json.Marshal(map[string]int64{"transferId": transfer, "from": in.From, "to": in.To, "amountKobo": in.AmountKobo})
		mu.Lock()
		stored[id] = answer
		mu.Unlock()
		w.WriteHeader(201)
		w.Write(answer)
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
