package torture

import (
	"context"
	"errors"
	"fmt"
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
func (r *run) fencedPause(ctx context.Context, v int) error {
	reps := r.cfg.Replicas
	if len(reps) < 2 {
		return errors.New("a fenced pause needs two replicas")
	}
	victim, other := reps[v], reps[(v+1)%len(reps)]
	// Between Ada's and Bola's own accounts, which no seeded intent
	// touches (those use the extra accounts): the only sessions that can
	// wait on the run's row lock are this intent's.
	in := r.newIntent("pause", 1, 2, v)

	s := r.sender(in)
	defer s.wait()
	hold, err := r.lockRow(ctx, "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", in.from)
	if err != nil {
		return err
	}
	defer hold.release()
	if _, err := r.untilWaiting(ctx, s, v, "pause", hold.pid); err != nil {
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
	r.event(fault{Fault: "replica-pause", Replica: &v, Intent: &in.n, What: "paused (SIGSTOP) while its transfer waited on a row lock of the run's"})
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
	taken, takenArgs := waitsOn, []any{other.Name(), hold.pid} // no key in the database: the copy waits on the row
	if claimedLock != nil {
		taken, takenArgs = `SELECT EXISTS (SELECT 1 FROM idempotency_keys WHERE key = $1 AND status = 'in_progress' AND lock_id IS DISTINCT FROM $2)`, []any{in.key, *claimedLock}
	}
	if err := r.resendUntil(ctx, func() <-chan attempt { return s.send(ctx, (v+1)%len(reps), "pause") }, taken, takenArgs...); err != nil {
		return err
	}
	hold.release()
	resumed = true
	if err := victim.Resume(); err != nil {
		return err
	}
	s.wait()
	return nil
}

// resendUntil sends (with send) until query says yes; a try that ends
// before that (an error on the way, such as a connection the database
// crash broke) is followed by another. Thirty seconds at most, and a lock
// TTL at most of answers that say the key is still in progress (the key's
// lock has expired by then: a server that keeps refusing never takes a
// key over, and waiting longer shows nothing more).
func (r *run) resendUntil(ctx context.Context, send func() <-chan attempt, query string, args ...any) error {
	deadline := time.Now().Add(30 * time.Second)
	var refused time.Time // since when every answer has been 409
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
		case a := <-done:
			switch {
			case a.Status != 409:
				refused = time.Time{}
			case refused.IsZero():
				refused = time.Now()
			case time.Since(refused) > r.cfg.LockTTL:
				return fmt.Errorf("the other replica kept answering 409 (in progress) for %s after the key's lock had expired: it never took the key over", time.Since(refused).Round(100*time.Millisecond))
			}
			if time.Now().After(deadline) {
				return errors.New("waited 30 s for the other replica to take the key over")
			}
			sleep(ctx, 50*time.Millisecond)
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
// needs a request of its own; it is resolved and checked like the rest,
// starting at replica first. Its number, key and amount follow the seeded
// intents', in the order the faults come.
func (r *run) newIntent(label string, from, to, first int) *intent {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.cfg.Intents + len(r.extra)
	amount := int64(100 + n)
	in := &intent{n: n, plan: plan{First: first},
		key: fmt.Sprintf("torture-%d-%s-%06d", r.cfg.Seed, label, n), from: from, to: to, amount: amount,
		body: fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":%d}`, from, to, amount),
	}
	r.extra = append(r.extra, in)
	return in
}
