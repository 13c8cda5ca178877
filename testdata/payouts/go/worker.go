package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

type worker struct {
	pool    *pgxpool.Pool
	rail    *railClient
	mistake string
	log     *log.Logger

	// asideOf holds rows this run will not send again (refused by the
	// rail with 422, or answered about inconsistently), with the reason.
	asideOf map[int64]string
	// wait is the pause before the next rail request; it grows after an
	// unknown outcome (up to maxWait) and is cleared by a clear answer.
	wait time.Duration
}

type outboxRow struct {
	ID         int64
	AccountID  int64
	AmountKobo int64
	Reference  string // "" while NULL
	Status     string
	Phase      string // worker_phase, "" while NULL
}

var errRowChanged = errors.New("row changed under us")

// migrate adds the worker's own phase column, once, even with two workers
// starting together.
func (w *worker) migrate(ctx context.Context) error {
	var have bool
	err := w.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'payout_outbox'
		  AND column_name = 'worker_phase')`).Scan(&have)
	if err != nil || have {
		return err
	}
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, migrateLock); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE payout_outbox ADD COLUMN IF NOT EXISTS worker_phase text
		CHECK (worker_phase IN ('sending', 'done'))`); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// resumeSending is the start-up phase: it resolves every row an earlier run
// left 'sending' (a reference committed, the row not done) before any other
// work, asking the rail about each. Rows another live worker holds are left
// to it. It goes round again while rows keep getting resolved; rows the rail
// still cannot tell about after a round without progress are left to the
// drain loop, which asks about them first all the same.
func (w *worker) resumeSending(ctx context.Context) {
	last := -1
	for ctx.Err() == nil {
		ids, err := w.ids(ctx, `SELECT id FROM payout_outbox
			WHERE status = 'pending' AND (worker_phase = 'sending' OR reference IS NOT NULL)
			  AND id <> ALL ($1) ORDER BY id`)
		if err != nil {
			w.log.Printf("start-up: reading rows left 'sending': %v", err)
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		if last == -1 {
			w.log.Printf("start-up: %d row(s) left 'sending' by an earlier run; asking the rail about each", len(ids))
		} else if len(ids) >= last {
			w.log.Printf("start-up: %d row(s) still 'sending'; the drain loop will keep asking about them", len(ids))
			return
		}
		last = len(ids)
		worked := 0
		for _, id := range ids {
			if ctx.Err() != nil {
				return
			}
			ran, err := w.withRow(ctx, id, w.resume)
			if err != nil && ctx.Err() == nil {
				w.log.Printf("row=%d start-up: %v", id, err)
			}
			if ran {
				worked++
			}
		}
		if worked == 0 {
			return // none left, or all held by another worker
		}
	}
}

// resume works one row left 'sending': a reference from an earlier run is
// asked about before it is sent again (payRow does that for any row that
// already has a reference).
func (w *worker) resume(ctx context.Context, conn *pgxpool.Conn, row *outboxRow) error {
	if w.mistake == mistakeResend {
		// MISTAKE resend-without-asking: "the rail pays a reference once,
		// so just send it again; a 409 means it already has it".
		a, ok := w.call(ctx, func() answer { return w.rail.post(row) })
		if !ok {
			return ctx.Err()
		}
		if a.outcome == paid || a.code == http.StatusConflict {
			return w.markDone(row)
		}
	}
	return w.payRow(ctx, conn, row)
}

// drainOnce works every pending row it can claim, once. It reports how many
// rows it worked.
func (w *worker) drainOnce(ctx context.Context) (int, error) {
	ids, err := w.ids(ctx, `SELECT id FROM payout_outbox
		WHERE status = 'pending' AND id <> ALL ($1) ORDER BY id LIMIT 500`)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		worked, err := w.withRow(ctx, id, w.payRow)
		if err != nil && ctx.Err() == nil {
			w.log.Printf("row=%d: %v", id, err)
		}
		if worked {
			n++
		}
	}
	return n, nil
}

// ids lists row ids; query's $1 is the ids set aside by this run.
func (w *worker) ids(ctx context.Context, query string) ([]int64, error) {
	aside := make([]int64, 0, len(w.asideOf))
	for id := range w.asideOf {
		aside = append(aside, id)
	}
	rows, err := w.pool.Query(ctx, query, aside)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// withRow claims row id with a session advisory lock on one pooled
// connection, re-reads it, and, if it is still pending, runs fn while the
// lock is held. It reports whether fn ran. A row another worker holds is
// skipped.
func (w *worker) withRow(ctx context.Context, id int64,
	fn func(context.Context, *pgxpool.Conn, *outboxRow) error) (bool, error) {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()

	got, err := w.claim(ctx, conn, id)
	if err != nil || !got {
		return false, err
	}
	defer w.unclaim(conn, id)

	row := &outboxRow{}
	err = conn.QueryRow(ctx, `SELECT id, account_id, amount_kobo, coalesce(reference, ''), status,
			coalesce(worker_phase, '')
		FROM payout_outbox WHERE id = $1`, id).
		Scan(&row.ID, &row.AccountID, &row.AmountKobo, &row.Reference, &row.Status, &row.Phase)
	if err != nil {
		return false, err
	}
	if row.Status != "pending" {
		return false, nil // done by another worker since we listed it
	}
	return true, fn(ctx, conn, row)
}

// claim takes the row's advisory lock for this session, without waiting.
func (w *worker) claim(ctx context.Context, conn *pgxpool.Conn, id int64) (bool, error) {
	if w.mistake == mistakeNoClaim {
		return true, nil // MISTAKE no-claim: every worker works every pending row it lists
	}
	var got bool
	err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, id).Scan(&got)
	return got, err
}

// unclaim releases the row's lock; if it cannot, it closes the connection
// so that the session, and its lock, end rather than go back to the pool.
func (w *worker) unclaim(conn *pgxpool.Conn, id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, lockClass, id); err != nil {
		w.log.Printf("row=%d: unlocking: %v; dropping the connection", id, err)
		conn.Conn().Close(ctx)
	}
}

// payRow pays one claimed pending row. A row that already has a reference
// (from an earlier run, or an earlier visit) is asked about before it is
// sent again; so is every reference after an unknown outcome. After
// triesPerVisit requests without a clear answer the row is left 'sending'
// for the next pass.
func (w *worker) payRow(ctx context.Context, conn *pgxpool.Conn, row *outboxRow) error {
	ask := row.Reference != ""
	for try := 0; try < triesPerVisit; try++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if row.Reference == "" || w.mistake == mistakeNewRef { // MISTAKE new-reference-per-attempt: a fresh one every try
			if err := w.setReference(ctx, conn, row, newReference(row.ID)); err != nil {
				return err
			}
		}
		if ask {
			a, ok := w.call(ctx, func() answer { return w.rail.status(row) })
			if !ok {
				return ctx.Err()
			}
			switch a.outcome {
			case paid:
				return w.markDone(row)
			case conflict:
				w.setAside(row, "the rail reports reference "+row.Reference+" paid with other details ("+a.detail+")")
				return nil
			case notFound:
				// never received: safe to send
			default:
				continue // still unknown: ask again, later
			}
		}
		a, ok := w.call(ctx, func() answer { return w.rail.post(row) })
		if !ok {
			return ctx.Err()
		}
		switch a.outcome {
		case paid:
			return w.markDone(row)
		case refused:
			w.setAside(row, "refused by the rail ("+a.detail+")")
			return nil
		default:
			ask = true // 409, 5xx, no answer: it may have been paid
		}
	}
	return nil
}

// call makes one rail request, first waiting out the current back-off. It
// returns false, without a request, if the worker is stopping.
func (w *worker) call(ctx context.Context, req func() answer) (answer, bool) {
	if w.wait > 0 && w.mistake != mistakeNoWait && !sleep(ctx, w.wait) { // MISTAKE no-backoff: straight on
		return answer{}, false
	}
	if ctx.Err() != nil {
		return answer{}, false
	}
	a := req()
	if a.outcome == unknown {
		w.wait = min(max(2*w.wait, firstWait), maxWait)
	} else {
		w.wait = 0
	}
	return a, true
}

// setReference stores ref as the row's reference and moves it to
// 'sending', committed before the first POST of ref. It only replaces the
// reference it read, so a row that changed under us is not overwritten.
func (w *worker) setReference(ctx context.Context, conn *pgxpool.Conn, row *outboxRow, ref string) error {
	var old *string
	if row.Reference != "" {
		old = &row.Reference
	}
	tag, err := conn.Exec(ctx, `UPDATE payout_outbox SET reference = $1, worker_phase = 'sending'
		WHERE id = $2 AND status = 'pending' AND reference IS NOT DISTINCT FROM $3`, ref, row.ID, old)
	if err != nil {
		return fmt.Errorf("storing reference: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return errRowChanged
	}
	row.Reference, row.Phase = ref, "sending"
	w.log.Printf("row=%d ref=%s stored, phase 'sending'", row.ID, ref)
	return nil
}

// markDone records that the rail said the row's reference is paid, in a
// transaction of its own. It does so even while the worker is stopping, and
// retries a while if the database does not answer; if it still cannot,
// the row stays 'sending' and is asked about on the next look.
func (w *worker) markDone(row *outboxRow) error {
	var err error
	for i := 0; i < 5; i++ {
		if i > 0 {
			time.Sleep(time.Duration(i) * 200 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		tag, e := w.pool.Exec(ctx, `UPDATE payout_outbox SET status = 'done', worker_phase = 'done'
			WHERE id = $1 AND reference = $2 AND status = 'pending'`, row.ID, row.Reference)
		cancel()
		if err = e; err == nil {
			if tag.RowsAffected() == 1 {
				w.log.Printf("row=%d ref=%s done", row.ID, row.Reference)
			} else {
				w.log.Printf("row=%d ref=%s paid, but the row was already done or has another reference", row.ID, row.Reference)
			}
			return nil
		}
	}
	return fmt.Errorf("marking done (ref %s, paid at the rail): %w", row.Reference, err)
}

// setAside keeps the row pending and out of this run.
func (w *worker) setAside(row *outboxRow, why string) {
	w.asideOf[row.ID] = why
	w.log.Printf("row=%d ref=%s %s: left pending, not sent again by this run", row.ID, row.Reference, why)
}

// newReference is a fresh reference for the rail: 8 to 64 letters, digits,
// - or _. The random part keeps it unique even across databases that share
// one rail.
func newReference(id int64) string {
	b := make([]byte, 8)
	rand.Read(b)
	return fmt.Sprintf("po-%d-%s", id, hex.EncodeToString(b))
}
