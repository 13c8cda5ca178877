package lab

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// Choreography for the lessons about concurrency: a request held at an
// exact point of its work (a hook), so that what happens meanwhile is the
// same on every run. Nothing here sleeps to wait for anything.

// Go runs f on a goroutine of the story's own. The story may wait for
// it (on the channel returned, closed when f returns); whether it does or
// not, the lab waits for it when the story ends, after cancelling the
// story's context, so that nothing a story started outlives it: not a
// request held at a hook, not a transaction waiting for a row lock, when
// the story is cut short by Ctrl-C or by a step that failed. f must
// return once the story's context is done.
func (l *Lab) Go(f func()) <-chan struct{} {
	done := make(chan struct{})
	l.running.Add(1)
	go func() {
		defer l.running.Done()
		defer close(done)
		f()
	}()
	return done
}

// Held is a request stopped at a hook, running in the background.
type Held struct {
	release func()
	done    <-chan struct{}
	resp    idem.Response
	err     error
}

// Hold starts send in the background and returns once it has reached the
// hook; until Finish, or until the story's context is done, it waits
// there. The hook stops only the first request that reaches it: copies
// that come later pass through.
func (l *Lab) Hold(hook *func(context.Context), send func() (idem.Response, error)) *Held {
	release := make(chan struct{})
	h := &Held{release: sync.OnceFunc(func() { close(release) })}
	reached := make(chan struct{})
	var once sync.Once
	*hook = func(ctx context.Context) {
		once.Do(func() {
			close(reached)
			select {
			case <-release:
			case <-ctx.Done(): // the story was cut short: its request ends too
			}
		})
	}
	h.done = l.Go(func() { h.resp, h.err = send() })
	select {
	case <-reached:
	case <-h.done: // it ended without reaching the hook: finish says how
	}
	return h
}

// Finish lets the held request go on and waits for its answer.
func (h *Held) Finish() (idem.Response, error) {
	h.release()
	<-h.done
	return h.resp, h.err
}

// OneAtATime serves one request at a time through h, as the lesson's
// database (PGlite) does: it runs one query at a time and holds every
// other back while a transaction is open.
func (l *Lab) OneAtATime(h api.Handler) *Serial {
	return &Serial{h: h, arrived: make(chan struct{}, 1024), next: make(chan struct{}, 1024)}
}

// Serial is a handler that lets one request in at a time: the first as
// soon as it comes, each later one when it has its turn and the story has
// said Next (so that what the one before drew, its answer included, is
// drawn before anything of the next: the same diagram on every run).
type Serial struct {
	mu      sync.Mutex
	h       api.Handler
	arrived chan struct{}
	next    chan struct{}
	served  int
}

// Next lets the next request in once the one before it is done.
func (o *Serial) Next() { o.next <- struct{}{} }

// Arrived gives one token for each request that has come in, before it
// waits for its turn: a story waits on it to know a copy is queued.
func (o *Serial) Arrived() <-chan struct{} { return o.arrived }

func (o *Serial) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	select {
	case o.arrived <- struct{}{}:
	default: // nobody counts this many: the request is not held up
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.served++; o.served > 1 {
		select {
		case <-o.next:
		case <-ctx.Done():
			return idem.Response{}, ctx.Err()
		}
	}
	return o.h.Handle(ctx, c)
}

// Storm sends copies of one call through h at once. The copy that wins
// the key is held just before it stores its answer until every other copy
// has its own, so the counts do not depend on timing. It returns the
// answers counted, in a fixed order: "201 ok x1, 409 request_in_progress x49".
func (l *Lab) Storm(ctx context.Context, h *api.Transfers, call api.Call, copies int) (string, error) {
	answered := make(chan struct{}, copies)
	h.Hooks.BeforeStore = func(ctx context.Context) {
		timeout := time.After(30 * time.Second)
		for i := 0; i < copies-1; i++ {
			select {
			case <-answered:
			case <-timeout:
				return // a copy is missing: the checks will say so
			case <-ctx.Done():
				return // the story was cut short
			}
		}
	}
	defer func() { h.Hooks.BeforeStore = nil }()
	answers := make(chan string, copies)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for i := 0; i < copies; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.Handle(ctx, call)
			if err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
			answers <- fmt.Sprintf("%d %s", r.Status, ErrorOrOK(r.Body))
			answered <- struct{}{}
		}()
	}
	wg.Wait()
	close(answers)
	return l.Tally(answers), errors.Join(failures...)
}

// Tally counts answers, in a fixed order.
func (l *Lab) Tally(answers <-chan string) string {
	counts := map[string]int{}
	for a := range answers {
		counts[a]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// WaitBlocked returns once session's backend is waiting for a lock that
// holder's backend holds, as PostgreSQL itself reports it
// (pg_blocking_pids): a signal, not a sleep.
func (l *Lab) WaitBlocked(ctx context.Context, session, holder *pgx.Conn) {
	waiter, blocker := session.PgConn().PID(), holder.PgConn().PID()
	for i := 0; i < 3000; i++ {
		var blocked bool
		l.Query(ctx, "SELECT $2::int = ANY (pg_blocking_pids($1))", []any{waiter, blocker}, &blocked)
		if blocked {
			return
		}
		time.Sleep(time.Millisecond)
	}
	l.Must(fmt.Errorf("backend %d never waited for backend %d", waiter, blocker))
}

// HoldRow has a maintenance job of its own lock an account's row, as an
// outage would, until the returned release is called.
func (l *Lab) HoldRow(ctx context.Context, account int64) (release func()) {
	tx, err := l.Session(ctx).Begin(ctx)
	l.Must(err)
	_, err = tx.Exec(ctx, "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", account)
	l.Must(err)
	return func() { l.Must(tx.Rollback(ctx)) }
}
