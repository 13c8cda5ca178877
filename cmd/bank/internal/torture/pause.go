package torture

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
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
//     run, the victim is paused (SIGSTOP);
//  4. once the key's lock has expired, the same request goes to the other
//     replica (again, if a try fails on the way), until the key's row
//     shows the takeover: a new lock id, still in progress;
//  5. only then does the run release the row, and the victim resumes: its
//     late work must be refused by the fencing token (with the lesson's
//     store), and the other replica's transfer commits.
//
// The run holds the row until the takeover is seen, so the victim cannot
// finish first, however late the pause lands. A store that keeps no key
// in the database (the broken ones) sends the copy straight to the
// transfer: there the run waits until the copy too is blocked. With a
// broken store the same steps move the money twice, every time, which is
// what the checker must then catch.
func (r *run) fencedPause(ctx context.Context, rnd *mrand.Rand) error {
	reps := r.cfg.Replicas
	if len(reps) < 2 {
		return errors.New("a fenced pause needs two replicas")
	}
	v := rnd.IntN(len(reps))
	victim, other := reps[v], reps[(v+1)%len(reps)]
	// Between Ada's and Bola's own accounts, which no seeded intent
	// touches (those use the extra accounts): the only sessions that can
	// wait on the run's row lock are this intent's.
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

	// The choreography's own requests must reach their servers whatever
	// the load: no short client timeout (the run's clients give up after
	// half the lock TTL), only a bound.
	hc := &http.Client{Timeout: 60 * time.Second}
	var sends sync.WaitGroup
	send := func(replica int, kind string) <-chan struct{} {
		done := make(chan struct{})
		sends.Add(1)
		go func() {
			defer sends.Done()
			defer close(done)
			r.keep(in, r.sendWith(ctx, hc, replica, in.key, in.body, kind))
		}()
		return done
	}
	send(v, "send")
	blockedBy := func(name string) (string, []any) {
		return `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND $2::int = ANY (pg_blocking_pids(pid)))`, []any{name, us}
	}
	q, args := blockedBy(victim.Name())
	if err := r.await(ctx, "the victim blocked on the run's row lock", q, args...); err != nil {
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
	if err := r.await(ctx, "the key's lock to expire",
		`SELECT NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE key = $1 AND status = 'in_progress' AND locked_until > now() - interval '100 milliseconds')`,
		in.key); err != nil {
		return err
	}
	taken, takenArgs := blockedBy(other.Name()) // no key in the database: the copy waits on the row
	if claimedLock != nil {
		taken, takenArgs = `SELECT EXISTS (SELECT 1 FROM idempotency_keys WHERE key = $1 AND status = 'in_progress' AND lock_id IS DISTINCT FROM $2)`, []any{in.key, *claimedLock}
	}
	if err := r.resendUntil(ctx, func() <-chan struct{} { return send((v+1)%len(reps), "duplicate") }, taken, takenArgs...); err != nil {
		return err
	}
	if err := tx.Rollback(ctx); err != nil {
		return err
	}
	resumed = true
	if err := victim.Resume(); err != nil {
		return err
	}
	sends.Wait()
	return nil
}

// resendUntil sends (with send) until query says yes; a try that ends
// before that (an error on the way, such as a connection the database
// crash broke) is followed by another. Thirty seconds at most.
func (r *run) resendUntil(ctx context.Context, send func() <-chan struct{}, query string, args ...any) error {
	deadline := time.Now().Add(30 * time.Second)
	done := send()
	for {
		var yes bool
		if err := r.cfg.DB.QueryRow(ctx, query, args...).Scan(&yes); err != nil {
			return fmt.Errorf("waiting for the other replica: %w", err)
		}
		if yes {
			return nil
		}
		select {
		case <-done:
			if time.Now().After(deadline) {
				return errors.New("waited 30 s for the other replica to take the key over")
			}
			done = send()
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// await polls a yes-or-no query every few milliseconds, for thirty
// seconds at most (a loaded machine can be slow; the bound is for a run
// that went wrong).
func (r *run) await(ctx context.Context, what, query string, args ...any) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var yes bool
		if err := r.cfg.DB.QueryRow(ctx, query, args...).Scan(&yes); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if yes {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited 30 s for %s", what)
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
