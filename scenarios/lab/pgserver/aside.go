package pgserver

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// aside is the work a cluster on the lab's own server does while the
// scenarios run: dropping databases behind them and cloning one ahead. A
// single goroutine does it in order, on a session of its own, so that the
// admin session stays free for the scenario's own statements.
type aside struct {
	c *Clones

	mu      sync.Mutex
	queue   []job
	limit   time.Duration // the most one job may take: jobLimit
	closed  bool
	wake    chan struct{} // a job was queued, or the queue closed
	stopped chan struct{} // closed when the worker has finished

	ready   string      // a spare made by an earlier run, not yet taken
	cloning bool        // a spare is being cloned: cloned will say which
	cloned  chan string // its name, or "" if the clone failed
}

// job is work set aside; a drop may be left undone at the end, when it
// would only delay the stop: the next run finds the database among its
// leftovers and drops it behind its own scenario.
type job struct {
	run      func(context.Context, *pgx.Conn)
	leftOver bool // may be left to the next run
}

func newAside(c *Clones) *aside {
	a := &aside{c: c, limit: jobLimit, wake: make(chan struct{}, 1), stopped: make(chan struct{}), cloned: make(chan string, 1)}
	go a.work()
	return a
}

// do queues a job; false if the worker has already closed.
func (a *aside) do(j job) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.queue = append(a.queue, j)
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return true
}

func (a *aside) work() {
	defer close(a.stopped)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for {
		a.mu.Lock()
		jobs, closed := a.queue, a.closed
		a.queue = nil
		a.mu.Unlock()
		for _, j := range jobs {
			a.mu.Lock()
			closing := a.closed
			a.mu.Unlock()
			if closing && j.leftOver {
				continue
			}
			a.run(j, &conn)
		}
		if closed && len(jobs) == 0 {
			return
		}
		if len(jobs) == 0 {
			<-a.wake
		}
	}
}

// jobLimit is the most one job may take (a test shortens it). It was
// the most the worker could live: in a bank lab left open for a class,
// or a test that ran long, every clone and drop after the first minute
// failed, and each run left its database behind (in /dev/shm, megabytes
// each: a test run of five minutes left 1,848 of them, 21 GB).
var jobLimit = time.Minute

// run does one job on the worker's session, connecting it if need be.
func (a *aside) run(j job, conn **pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), a.limit)
	defer cancel()
	if *conn == nil || (*conn).IsClosed() {
		*conn, _ = connect(ctx, a.c.admin) // on failure each job fails in turn, and says so
	}
	j.run(ctx, *conn)
}

// take returns a spare to rename, waiting for the one being cloned, or ""
// when there is none (then the caller clones as usual). If ctx ends
// first (Ctrl-C), the clone on its way is kept as the next spare.
func (a *aside) take(ctx context.Context) string {
	a.mu.Lock()
	if a.ready != "" {
		spare := a.ready
		a.ready = ""
		a.mu.Unlock()
		return spare
	}
	cloning := a.cloning
	a.cloning = false
	a.mu.Unlock()
	if !cloning {
		return ""
	}
	select {
	case spare := <-a.cloned:
		return spare
	case <-ctx.Done():
		go func() { a.keep(<-a.cloned) }()
		return ""
	}
}

// keep makes spare, a clone nobody waited for, the next one to take; one
// more than that is dropped behind.
func (a *aside) keep(spare string) {
	if spare == "" {
		return
	}
	a.mu.Lock()
	if a.ready == "" && !a.closed {
		a.ready = spare
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.do(job{leftOver: true, run: func(ctx context.Context, conn *pgx.Conn) {
		if conn != nil {
			drop(ctx, conn, spare)
		}
	}})
}

// cloneAhead starts cloning the next spare, unless one is ready or on its
// way (one is enough: two callers at once clone the second themselves).
func (a *aside) cloneAhead() {
	a.mu.Lock()
	if a.ready != "" || a.cloning || a.closed {
		a.mu.Unlock()
		return
	}
	a.cloning = true
	a.mu.Unlock()
	ok := a.do(job{run: func(ctx context.Context, conn *pgx.Conn) {
		name := a.c.spareName(randomHex(4))
		if conn == nil {
			name = ""
		} else if _, err := conn.Exec(ctx, a.c.cloneSQL(name)); err != nil {
			name = ""
		}
		a.cloned <- name
	}})
	if !ok {
		a.mu.Lock()
		a.cloning = false
		a.mu.Unlock()
	}
}

// close lets the worker finish what is queued, and waits for it.
func (a *aside) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	a.mu.Unlock()
	<-a.stopped
}
