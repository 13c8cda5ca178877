package torture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// plainKill kills replica v (kill -9) and restarts it on its port: for
// servers the run cannot watch through PostgreSQL (bank grade's), and
// for a run of one replica. Which requests it catches is the timing's.
func (r *run) plainKill(v int) error {
	victim := r.cfg.Replicas[v]
	if err := victim.Kill(); err != nil {
		return err
	}
	r.count("replica-kill")
	r.event(fault{Fault: "replica-kill", Replica: &v, What: "kill -9, at whatever it was doing"})
	r.note("killed a replica (kill -9)")
	sleep(context.Background(), 200*time.Millisecond)
	return r.restart(v)
}

// restart starts replica v again and counts its new life.
func (r *run) restart(v int) error {
	if err := r.cfg.Replicas[v].Restart(); err != nil {
		return fmt.Errorf("restarting a replica: %w", err)
	}
	life := int(r.lives[v].Add(1))
	r.event(fault{Fault: "restart", Replica: &v, Life: life})
	return nil
}

// killHolding kills replica v at the moment the lesson's rule 4 is about:
// its transfer done, the key's answer not yet stored. PostgreSQL says
// when, so the kill is certain, not lucky:
//
//  1. the run locks the sender's row (account Accounts+4, which no
//     seeded intent touches) and sends an intent of its own to v;
//  2. once v's session waits on that row, the run also locks the key's
//     row, if v's store put one in the database when it claimed the key;
//  3. it lets the transfer go: v makes it, and then waits on the key's
//     row to store its answer (inside the transfer's transaction with
//     the lesson's store; after its commit with a second transaction);
//  4. then v is killed (kill -9) and its waiting session ended with it,
//     as though v had died just before its write reached PostgreSQL, and
//     v is restarted on its port;
//  5. the intent is sent again, as its client would after no answer,
//     until answered: a retry takes the key over once its lock expires.
//
// With the lesson's store the transfer rolls back with the session and
// the retry makes it once. A store that keeps its answer in a second
// transaction has committed the transfer by then, and the retry makes it
// again. A store with no key in the database is killed in the middle of
// the transfer (step 2 is left out).
func (r *run) killHolding(ctx context.Context, v int) error {
	victim := r.cfg.Replicas[v]
	in, s, hold, waiting, done, err := r.midTransfer(ctx, v, "kill", "kill")
	defer done()
	if err != nil {
		return err
	}
	what := "in the middle of its transfer (its store keeps no key in the database)"
	var claimed bool
	if err := r.cfg.DB.QueryRow(ctx, "SELECT true FROM idempotency_keys WHERE key = $1", in.key).Scan(&claimed); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	key := held{release: func() {}}
	if claimed {
		if key, err = r.lockRow(ctx, "SELECT 1 FROM idempotency_keys WHERE key = $1 FOR UPDATE NOWAIT", in.key); err != nil {
			// Its transaction holds the key's row already: kill it there.
			key = held{release: func() {}}
			what = "in the middle of its transfer (its transaction had locked the key's row before the transfer)"
		} else {
			defer key.release()
			hold.release()
			if waiting, err = r.waiter(ctx, s, victim.Name(), key.pid); err != nil {
				return err
			}
			what = "with its transfer made and its answer not yet stored (waiting to write the key's row)"
		}
	}
	if err := victim.Kill(); err != nil {
		return err
	}
	r.count("replica-kill")
	r.event(fault{Fault: "replica-kill", Replica: &v, Intent: &in.n, What: what})
	if _, err := r.cfg.DB.Exec(ctx, "SELECT pg_terminate_backend($1)", waiting); err != nil {
		return fmt.Errorf("ending the killed replica's session: %w", err)
	}
	if err := r.await(ctx, "the killed replica's session to end", "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", waiting); err != nil {
		return err
	}
	r.note("killed a replica (kill -9) " + what)
	key.release()
	hold.release()
	s.wait() // the request it caught ends with no answer
	if err := r.restart(v); err != nil {
		return err
	}
	r.follow(ctx, in, v+1)
	return nil
}

// sessionKill ends replica v's database session in the middle of its
// transfer (pg_terminate_backend, as a failover or a pooler would): the
// replica lives on, its transaction fails, and it must answer so that a
// retry can succeed (the lesson's store gives the key back and answers
// 503); a store that keeps the failure as the key's answer replays it to
// every retry. Choreographed like killHolding's first step.
func (r *run) sessionKill(ctx context.Context, v int) error {
	in, s, hold, waiting, done, err := r.midTransfer(ctx, v, "session", "session-kill")
	defer done()
	if err != nil {
		return err
	}
	if _, err := r.cfg.DB.Exec(ctx, "SELECT pg_terminate_backend($1)", waiting); err != nil {
		return fmt.Errorf("ending the replica's session: %w", err)
	}
	r.count("session-kill")
	r.event(fault{Fault: "session-kill", Replica: &v, Intent: &in.n, What: "its database session ended in the middle of its transfer"})
	hold.release()
	s.wait()
	a := s.last()
	r.note(fmt.Sprintf("ended a replica's database session in the middle of its transfer; it answered %s", a.short()))
	if !definitive(a) {
		r.follow(ctx, in, v)
	}
	return nil
}

// midTransfer sends a new intent (of kind) to replica v with its debit
// account's row locked by the run, and returns once the replica's session
// waits on that lock, in the middle of its transfer: the session's pid is
// waiting. done releases the row and waits for the send to end; call it
// whatever the error.
func (r *run) midTransfer(ctx context.Context, v int, kind, fault string) (in *intent, s *sender, hold held, waiting int, done func(), err error) {
	from, to := r.cfg.Accounts+4, r.cfg.Accounts+5
	in = r.newIntent(kind, from, to, v)
	s = r.sender(in)
	done = s.wait
	if hold, err = r.lockRow(ctx, "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", from); err != nil {
		return
	}
	done = func() { hold.release(); s.wait() }
	waiting, err = r.untilWaiting(ctx, s, v, fault, hold.pid)
	return
}

// sender sends a choreography's intent, each send in a goroutine of its
// own (a request the run holds up must not hold the run up), with no
// short client timeout (the run's clients give up after half the lock
// TTL), only a bound; every attempt is kept as it ends.
type sender struct {
	r       *run
	in      *intent
	hc      *http.Client
	wg      sync.WaitGroup
	mu      sync.Mutex
	pending int
	ended   []attempt
}

func (r *run) sender(in *intent) *sender {
	return &sender{r: r, in: in, hc: &http.Client{Timeout: 60 * time.Second}}
}

// send sends the intent to replica i; its attempt comes on the channel
// when it ends.
func (s *sender) send(ctx context.Context, i int, kind string) <-chan attempt {
	done := make(chan attempt, 1)
	s.wg.Add(1)
	s.mu.Lock()
	s.pending++
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		a := s.r.sendWith(ctx, s.hc, s.in, i, s.in.body, kind)
		s.r.keep(s.in, a)
		s.mu.Lock()
		s.pending--
		s.ended = append(s.ended, a)
		s.mu.Unlock()
		done <- a
	}()
	return done
}

// wait waits until every send has ended.
func (s *sender) wait() { s.wg.Wait() }

// busy reports whether a send is still out.
func (s *sender) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending > 0
}

// last is the attempt that ended last.
func (s *sender) last() attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ended) == 0 {
		return attempt{}
	}
	return s.ended[len(s.ended)-1]
}

// untilWaiting sends the intent to replica v, again whenever a try ends
// first (a 503 while PostgreSQL restarts, say), until a session of v's
// waits on the session us; it returns that session's pid.
func (r *run) untilWaiting(ctx context.Context, s *sender, v int, kind string, us int) (int, error) {
	name := r.cfg.Replicas[v].Name()
	if err := r.resendUntil(ctx, func() <-chan attempt { return s.send(ctx, v, kind) }, waitsOn, name, us); err != nil {
		return 0, err
	}
	var pid int
	err := r.cfg.DB.QueryRow(ctx, waiterPID, name, us).Scan(&pid)
	return pid, err
}

// waiter waits until a session of the replica named name waits on the
// session us, while a send of s is out, and returns its pid.
func (r *run) waiter(ctx context.Context, s *sender, name string, us int) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pid int
		switch err := r.cfg.DB.QueryRow(ctx, waiterPID, name, us).Scan(&pid); {
		case err == nil:
			return pid, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return 0, err
		case !s.busy():
			return 0, fmt.Errorf("the replica answered (%s) before it waited on the run's lock", s.last().short())
		case time.Now().After(deadline):
			return 0, errors.New("waited 30 s for the replica's session to wait on the run's lock")
		}
		sleep(ctx, 5*time.Millisecond)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
}

// Is a session of the replica named $1 waiting on the session $2, and
// which one.
const (
	waitsOn   = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND $2::int = ANY (pg_blocking_pids(pid)))`
	waiterPID = `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND $2::int = ANY (pg_blocking_pids(pid)) LIMIT 1`
)

// follow sends an intent again, as its client would after an answer that
// settled nothing, until answered (twelve tries at most, then the settle
// phase has it), starting at replica i.
func (r *run) follow(ctx context.Context, in *intent, i int) {
	for k := 2; k < 14 && ctx.Err() == nil; k++ {
		sleep(ctx, backoff(r.cfg.Seed, in.n, k))
		a := r.send(ctx, in, i, in.body, "retry")
		r.keep(in, a)
		if definitive(a) {
			return
		}
		i = retryReplica(r.cfg.Seed, in.n, k, i, len(r.cfg.Replicas), a.Status != 0)
	}
}

// held is a row lock the run holds in a transaction of its own.
type held struct {
	pid     int
	release func()
}

// lockRow takes a row lock with query (…FOR UPDATE) in a transaction on
// a connection of its own, and says which session holds it.
func (r *run) lockRow(ctx context.Context, query string, args ...any) (held, error) {
	conn, err := r.cfg.DB.Acquire(ctx)
	if err != nil {
		return held{}, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		conn.Release()
		return held{}, err
	}
	done := false
	release := func() {
		if !done {
			done = true
			tx.Rollback(context.WithoutCancel(ctx))
			conn.Release()
		}
	}
	var pid int
	if _, err := tx.Exec(ctx, query, args...); err != nil {
		release()
		return held{}, err
	}
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		release()
		return held{}, err
	}
	return held{pid: pid, release: release}, nil
}
