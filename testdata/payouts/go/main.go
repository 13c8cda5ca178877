// Command worker drains the bank's payout outbox, paying each row once
// through the payment rail (see README.md).
//
// A row goes through three phases, kept in a column of the worker's own,
// payout_outbox.worker_phase:
//
//	NULL      pending, never sent
//	'sending' a reference is chosen and committed; the rail may have it
//	'done'    the rail said paid; status = 'done' in the same UPDATE
//
// While a worker works a row it holds pg_try_advisory_lock(lockClass, id)
// on a pooled connection (a session lock), so a second worker skips the
// row. On start-up the worker first resolves every row left 'sending' by
// an earlier run, asking the rail (GET /payouts/REFERENCE) before any new
// POST of that reference.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	pollEvery     = 200 * time.Millisecond // contract: look again at least every 500 ms
	firstWait     = 100 * time.Millisecond // first wait after an unknown outcome
	maxWait       = time.Second            // contract: a second at most between tries
	triesPerVisit = 10                     // then leave the row for the next pass (it is asked about first)
	defaultTimout = 1000 * time.Millisecond

	// lockClass is the first key of the two-key advisory locks this worker
	// takes ("PAYO"); the second key is the payout_outbox row id.
	lockClass = 0x5041594f
	// migrateLock serialises the start-up ALTER TABLE of two workers.
	migrateLock = lockClass + 1
)

// The mistakes WORKER_MISTAKE can switch on (one at a time).
const (
	mistakeNoClaim = "no-claim"
	mistakeResend  = "resend-without-asking"
	mistakeNewRef  = "new-reference-per-attempt"
	mistakeNoWait  = "no-backoff"
)

func main() {
	lg := log.New(os.Stderr, fmt.Sprintf("worker[%d] ", os.Getpid()), log.Ltime|log.Lmicroseconds)

	dbURL := os.Getenv("DATABASE_URL")
	railURL := os.Getenv("RAIL_URL")
	if dbURL == "" || railURL == "" {
		lg.Fatal("DATABASE_URL and RAIL_URL must be set")
	}
	timeout := defaultTimout
	if s := os.Getenv("RAIL_TIMEOUT_MS"); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms <= 0 {
			lg.Fatalf("RAIL_TIMEOUT_MS=%q: want a positive number of milliseconds", s)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	mistake := os.Getenv("WORKER_MISTAKE")
	switch mistake {
	case "", mistakeNoClaim, mistakeResend, mistakeNewRef, mistakeNoWait:
	default:
		lg.Fatalf("WORKER_MISTAKE=%q: not a known mistake", mistake)
	}
	if mistake != "" {
		lg.Printf("WORKER_MISTAKE=%s is switched on", mistake)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	pool, err := connect(ctx, dbURL, lg)
	if err != nil {
		lg.Fatalf("database: %v", err)
	}
	defer pool.Close()

	w := &worker{
		pool:    pool,
		rail:    newRailClient(railURL, timeout, lg),
		mistake: mistake,
		log:     lg,
		asideOf: map[int64]string{},
	}
	if err := w.migrate(ctx); err != nil {
		lg.Fatalf("start-up: adding worker_phase to payout_outbox: %v", err)
	}
	lg.Printf("started: rail %s, timeout %v", railURL, timeout)

	w.resumeSending(ctx)
	for ctx.Err() == nil {
		worked, err := w.drainOnce(ctx)
		if err != nil && ctx.Err() == nil {
			lg.Printf("drain: %v", err)
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		if worked == 0 {
			sleep(ctx, pollEvery)
		}
	}
	lg.Printf("stopped (signal)")
}

// connect opens the pool, waiting a little for the database if need be.
func connect(ctx context.Context, dbURL string, lg *log.Logger) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 4 // one holds the row lock, another may mark a row done
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = pool.Ping(c)
		cancel()
		if err == nil {
			return pool, nil
		}
		if i == 20 || ctx.Err() != nil {
			pool.Close()
			return nil, err
		}
		lg.Printf("database not ready: %v", err)
		sleep(ctx, 500*time.Millisecond)
	}
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
