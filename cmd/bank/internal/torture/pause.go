package torture

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// fencedPause makes the pause fault certain instead of lucky. A replica
// paused at a random moment holds a key only sometimes; here PostgreSQL
// itself tells the run when to act, so every run shows the takeover and
// the fencing rejection it promises:
//
//  1. the run locks the sender's account row in a transaction of its own;
//  2. it sends an intent of its own to the victim replica, which claims
//     the key (a commit of its own) and then blocks on that row;
//  3. once pg_blocking_pids shows the victim's session waiting on the
//     run, the victim is paused (SIGSTOP) and the row released: the
//     victim's transaction now holds the row, frozen;
//  4. once the key's lock has expired, the same request goes to the other
//     replica, which takes the key over (a new lock id in the key's row)
//     and then waits for the frozen row;
//  5. once the key's row shows the takeover, the victim resumes: its late
//     work must be refused by the fencing token (with the lesson's
//     store), and the other replica's transfer commits. (A store that
//     keeps no key in the database goes straight to the transfer: there,
//     pg_blocking_pids shows the copy waiting on the victim.)
//
// With a broken store (--break) the same steps move the money twice,
// every time, which is what the checker must then catch.
func (r *run) fencedPause(ctx context.Context, rnd *mrand.Rand) error {
	reps := r.cfg.Replicas
	if len(reps) < 2 {
		return errors.New("a fenced pause needs two replicas")
	}
	v := rnd.IntN(len(reps))
	victim, other := reps[v], reps[(v+1)%len(reps)]
	// Between Ada's and Bola's own accounts, which no seeded intent
	// touches (those use the extra accounts): the only session of the
	// victim that can wait on the run's row lock is this request's.
	in := r.newIntent(rnd, "pause", 1, 2)

	conn, err := r.cfg.DB.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", in.from); err != nil {
		return err
	}
	var us int
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&us); err != nil {
		return err
	}

	var sends sync.WaitGroup
	send := func(replica int, kind string) {
		sends.Add(1)
		go func() {
			defer sends.Done()
			r.keep(in, r.send(ctx, replica, in.key, in.body, kind))
		}()
	}
	send(v, "send")
	if err := r.await(ctx, "the victim blocked on the run's row lock",
		`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND $2::int = ANY (pg_blocking_pids(pid)))`,
		victim.Name(), us); err != nil {
		return err
	}
	// The victim's claim, if its store keeps keys in the database: the
	// lock id a takeover must replace.
	var claimedLock *string
	if err := r.cfg.DB.QueryRow(ctx, "SELECT lock_id FROM idempotency_keys WHERE key = $1", in.key).Scan(&claimedLock); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if err := victim.Pause(); err != nil {
		return err
	}
	resumed := false
	defer func() {
		if !resumed {
			victim.Resume()
		}
	}()
	if err := tx.Rollback(ctx); err != nil {
		return err
	}
	if err := r.await(ctx, "the key's lock to expire",
		`SELECT NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE key = $1 AND status = 'in_progress' AND locked_until > now() - interval '100 milliseconds')`,
		in.key); err != nil {
		return err
	}
	send((v+1)%len(reps), "duplicate")
	if claimedLock != nil {
		// The takeover itself, seen in the key's row: precise, whatever
		// else the frozen victim holds up.
		if err := r.await(ctx, "the other replica to take the key over",
			`SELECT EXISTS (SELECT 1 FROM idempotency_keys WHERE key = $1 AND lock_id IS DISTINCT FROM $2)`,
			in.key, *claimedLock); err != nil {
			return err
		}
	} else if err := r.await(ctx, "the other replica blocked on the frozen victim",
		// No key in the database (the broken stores): the copy goes
		// straight to the transfer and waits for the victim's rows.
		`SELECT EXISTS (SELECT 1 FROM pg_stat_activity a, pg_stat_activity b
		   WHERE a.application_name = $1 AND b.application_name = $2 AND b.pid = ANY (pg_blocking_pids(a.pid)))`,
		other.Name(), victim.Name()); err != nil {
		return err
	}
	resumed = true
	if err := victim.Resume(); err != nil {
		return err
	}
	sends.Wait()
	return nil
}

// await polls a yes-or-no query every few milliseconds, for ten seconds
// at most.
func (r *run) await(ctx context.Context, what, query string, args ...any) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var yes bool
		if err := r.cfg.DB.QueryRow(ctx, query, args...).Scan(&yes); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if yes {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited 10 s for %s", what)
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// newIntent makes an intent beyond the seeded ones, for a fault that
// needs a request of its own; it is resolved and checked like the rest.
func (r *run) newIntent(rnd *mrand.Rand, label string, from, to int) *intent {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.cfg.Intents + len(r.extra)
	amount := int64(100 + n)
	in := &intent{
		key: fmt.Sprintf("torture-%d-%s-%06d-%s", r.cfg.Seed, label, n, randomHex(4)), from: from, to: to, amount: amount,
		body: fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":%d}`, from, to, amount),
	}
	r.extra = append(r.extra, in)
	return in
}
