// A payment provider's webhook consumer, as a starter: it credits the
// account of every "payment received" delivery, and has no protection yet:
// no signature check, no record of the events, so every delivery of an
// event credits again. bank grade webhook passes "out-of-order" and fails
// the rest; the lines marked YOUR WORK are where the lesson goes.
//
// Run it the way bank grade webhook does:  go build -o consumer . && bank grade webhook -- ./consumer
package main

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var pool *pgxpool.Pool

// webhookSecret is whsec_ and the base64 of the key the provider signs
// with.
var webhookSecret = os.Getenv("WEBHOOK_SECRET")

type event struct {
	Type string `json:"type"`
	Data struct {
		Payment    string `json:"payment"`
		Account    int64  `json:"account"`
		AmountKobo int64  `json:"amountKobo"`
	} `json:"data"`
}

func createTables(ctx context.Context) error {
	// YOUR WORK: create the table your consumer records the events it has
	// processed in (CREATE TABLE IF NOT EXISTS), with a unique key on the
	// event's id and one on its payment reference.
	return nil
}

// credit is the effect: the account credited, and its deposits row.
func credit(ctx context.Context, tx pgx.Tx, payment string, account, amountKobo int64) error {
	if _, err := tx.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2", amountKobo, account); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "INSERT INTO deposits (account_id, amount_kobo, source) VALUES ($1, $2, $3)", account, amountKobo, payment)
	return err
}

func answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func deliver(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		answer(w, http.StatusBadRequest, map[string]string{"error": "not_an_event"})
		return
	}
	// YOUR WORK: verify the delivery first (webhook-id, webhook-timestamp
	// and webhook-signature, against webhookSecret), and refuse it with a
	// 4xx when it does not hold.
	var e event
	if err := json.Unmarshal(raw, &e); err != nil || e.Data.Payment == "" {
		answer(w, http.StatusBadRequest, map[string]string{"error": "not_an_event"})
		return
	}
	err = pgx.BeginFunc(r.Context(), pool, func(tx pgx.Tx) error {
		// YOUR WORK: record the event here, in this same transaction, and
		// credit nothing when it (or its payment) is recorded already.
		return credit(r.Context(), tx, e.Data.Payment, e.Data.Account, e.Data.AmountKobo)
	})
	if err != nil {
		log.Printf("delivery failed: %v", err)
		answer(w, http.StatusInternalServerError, map[string]string{"error": "internal_error"})
		return
	}
	answer(w, http.StatusOK, map[string]string{"credited": e.Data.Payment})
}

func main() {
	ctx := context.Background()
	var err error
	if pool, err = pgxpool.New(ctx, os.Getenv("DATABASE_URL")); err != nil {
		log.Fatal(err)
	}
	if err := createTables(ctx); err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /webhooks", deliver)
	addr := "127.0.0.1:" + os.Getenv("PORT")
	log.Printf("consumer listening on %s", addr)
	log.Fatal(http.ListenAndServe(addr, nil))
}
