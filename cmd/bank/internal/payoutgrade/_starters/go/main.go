// A payout worker, as a starter: it drains the payout outbox, paying each
// row through the rail, and has no protection yet: a new reference for
// every attempt, none stored in the row, no status enquiry, no claim on
// the row. bank grade payout passes "plain" and fails the rest; the lines
// marked YOUR WORK are where the lesson goes.
//
// Run it the way bank grade payout does:  go build -o worker . && bank grade payout -- ./worker
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	railURL = os.Getenv("RAIL_URL")
	client  = &http.Client{Timeout: railTimeout()}
)

func railTimeout() time.Duration {
	ms, err := strconv.Atoi(os.Getenv("RAIL_TIMEOUT_MS"))
	if err != nil || ms <= 0 {
		ms = 1000
	}
	return time.Duration(ms) * time.Millisecond
}

// post sends one payout to the rail, and returns its status (0 for none).
func post(reference string, account, amountKobo int64) int {
	body, _ := json.Marshal(map[string]any{"reference": reference, "account": account, "amountKobo": amountKobo})
	resp, err := client.Post(railURL+"/payouts", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func newReference() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "payout-" + hex.EncodeToString(b)
}

func drain(ctx context.Context, pool *pgxpool.Pool) error {
	// YOUR WORK: claim a row for as long as you work it (an advisory lock
	// held until it is done, or a lease), so that two workers never send
	// the same one.
	rows, err := pool.Query(ctx, "SELECT id, account_id, amount_kobo FROM payout_outbox WHERE status = 'pending' ORDER BY id")
	if err != nil {
		return err
	}
	type payout struct{ id, account, amount int64 }
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (payout, error) {
		var p payout
		return p, r.Scan(&p.id, &p.account, &p.amount)
	})
	if err != nil {
		return err
	}
	for _, p := range todo {
		// YOUR WORK: one reference per row, stored in the row (and
		// committed) before the first send, and the same on every
		// attempt; after an answer that does not say whether it was paid,
		// ask GET /payouts/REFERENCE before sending it again.
		reference := newReference()
		status := post(reference, p.account, p.amount)
		log.Printf("row %d: POST %s: %d", p.id, reference, status)
		if status == http.StatusCreated {
			if _, err := pool.Exec(ctx, "UPDATE payout_outbox SET status = 'done', reference = $1 WHERE id = $2", reference, p.id); err != nil {
				return err
			}
		}
	}
	return nil
}

func main() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	for {
		if err := drain(ctx, pool); err != nil {
			log.Printf("drain failed: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
