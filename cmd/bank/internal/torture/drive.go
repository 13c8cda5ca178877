package torture

import (
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/bank/client"
)

// send makes one attempt at replica i (modulo the replicas) and returns
// it, not yet noted: the caller decides whether the client drops it.
func (r *run) send(ctx context.Context, in *intent, i int, body, kind string) attempt {
	return r.sendWith(ctx, r.http, in, i, body, kind)
}

// sendWith is send through a given HTTP client.
func (r *run) sendWith(ctx context.Context, hc *http.Client, in *intent, i int, body, kind string) attempt {
	i = i % len(r.cfg.Replicas)
	rp := r.cfg.Replicas[i]
	c := &client.Client{BaseURL: rp.URL(), Token: "token-ada", HTTP: hc, QuotedKey: r.cfg.QuotedKeys}
	a := attempt{Intent: in.n, Key: in.key, Replica: i, Life: int(r.lives[i].Load()), Kind: kind, sent: time.Since(r.start)}
	start := time.Now()
	res, err := c.Once(ctx, in.key, []byte(body))
	r.mu.Lock()
	r.lat = append(r.lat, time.Since(start))
	r.mu.Unlock()
	if err != nil {
		a.Network = "no answer"
	} else {
		a.Status, a.Replayed, a.Body = res.Status, res.Replayed, keptBody(res.Body)
		if res.Status == 0 {
			a.Network = "no answer"
		}
	}
	a.done = time.Since(r.start)
	return a
}

// definitive: an answer the client may show (not a network error, not
// "in progress", not a server error).
func definitive(a attempt) bool {
	return a.Status != 0 && a.Status != 409 && a.Status != 429 && a.Status < 500
}

// keep notes an attempt: in the history, in the intent's evidence, and,
// if it is definitive, among the intent's replies (an answer the client
// dropped included: the server did send it, and a replay must equal it).
func (r *run) keep(in *intent, a attempt) {
	r.record(a)
	r.mu.Lock()
	defer r.mu.Unlock()
	in.attempts = append(in.attempts, a)
	if definitive(a) && (a.Kind != "lookup" || a.State == "completed") {
		in.replies = append(in.replies, a)
	}
}

// drive sends one intent the way a good client does, with the faults its
// plan (planFor) gives it: the client may drop answers (a lost response:
// the server committed and answered, the client never heard), crash after
// its first attempt and resume from its journal, then resend the settled
// request (in sequence, two at once, to the same or the other replica),
// or reuse the key with a changed body. Retries the timing causes (no
// answer, 409, 5xx) are counted apart, in Report.Timed.
func (r *run) drive(ctx context.Context, in *intent) {
	p := in.plan
	replicas := len(r.cfg.Replicas)
	replica, drops, kind := p.First, p.Drops, "send"
	failed := 0 // attempts without a definitive answer
	for k := 1; ctx.Err() == nil; k++ {
		if k > 1 {
			sleep(ctx, backoff(r.cfg.Seed, in.n, k))
		}
		a := r.send(ctx, in, replica, in.body, kind)
		last := replica
		switch {
		case k == 1 && p.Crash:
			// The client dies before it reads the answer; its journal has
			// the key, and it resumes, through the load balancer, at the
			// other replica.
			a.Dropped = "client-crash"
			r.keep(in, a)
			r.count("client-crash")
			replica, kind = last+1, "resume"
			if replicas > 1 {
				r.count("other-replica")
			}
			continue
		case definitive(a) && drops > 0:
			// Lost: the answer came, the client never heard it. The retry
			// goes to the other replica, as a load balancer's would.
			a.Dropped = "lost-response"
			r.keep(in, a)
			drops--
			r.count("lost-response")
			replica, kind = last+1, "retry"
			if replicas > 1 {
				r.count("other-replica")
			}
			continue
		}
		r.keep(in, a)
		if definitive(a) {
			break
		}
		if failed++; failed == 12 {
			// Left to the settle phase; the answers it was to lose were
			// never heard, so those faults are not thrown (on a machine
			// too busy to answer in time, a seed's run falls short of its
			// plan, and the report says by how much).
			r.unthrow("lost-response", drops)
			if replicas > 1 {
				r.unthrow("other-replica", drops)
			}
			break
		}
		r.timed(retriesTimed)
		replica, kind = retryReplica(r.cfg.Seed, in.n, k, last, replicas, a.Status != 0), "retry"
	}
	if ctx.Err() != nil {
		return
	}
	r.copies(ctx, in)
}

// copies sends what follows an intent's answer, as its plan says.
func (r *run) copies(ctx context.Context, in *intent) {
	p := in.plan
	to := p.First
	if !p.Same {
		to++
	}
	switch p.Copy {
	case "duplicate":
		r.count("duplicate")
		r.keep(in, r.send(ctx, in, to, in.body, "duplicate"))
	case "concurrent-duplicate":
		r.count("concurrent-duplicate")
		var wg sync.WaitGroup
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.keep(in, r.send(ctx, in, p.First+k, in.body, "concurrent"))
			}()
		}
		wg.Wait()
	case "changed-body":
		r.mu.Lock()
		answered := len(in.replies) > 0
		r.mu.Unlock()
		if !answered {
			// Only once the server has the key: before that a changed
			// body is simply another request, which it must serve.
			r.unthrow("changed-body", 1)
			return
		}
		r.count("changed-body")
		changed := strings.Replace(in.body, fmt.Sprintf(`"amountKobo":%d`, in.amount), fmt.Sprintf(`"amountKobo":%d`, in.amount+1_000_000), 1)
		a := r.send(ctx, in, p.First, changed, "changed-body")
		r.record(a)
		r.mu.Lock()
		in.attempts = append(in.attempts, a)
		r.mu.Unlock()
	}
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// inject throws the server-side faults, each at a point of the load the
// seed chose (a share of the intents handed out, or of --duration gone),
// one after another. A fault is thrown once its point is reached,
// whatever happens meanwhile, so every run of a seed throws the same
// ones; which requests happen to be in flight at that moment is the
// machine's timing.
func (r *run) inject(ctx context.Context, rnd *mrand.Rand) {
	reps := r.cfg.Replicas
	// Drawn up front, in one order, whatever is wanted.
	killAt, killed := 0.10+rnd.Float64()*0.05, rnd.IntN(len(reps))
	crashAt := 0.20 + rnd.Float64()*0.05
	pauseAt, paused := 0.35+rnd.Float64()*0.05, rnd.IntN(len(reps))
	sessionAt, session := 0.50+rnd.Float64()*0.05, rnd.IntN(len(reps))

	n := int64(r.cfg.Intents)
	progress := func() float64 {
		p := float64(r.dispatched.Load()) / float64(max(n, 1))
		if d := r.cfg.Duration; d > 0 {
			p = max(p, float64(time.Since(r.start))/float64(d))
		}
		return p
	}
	// The load ends early only with --duration, whose share of time then
	// says the point was reached, or when the run is interrupted.
	at := func(share float64) bool {
		for progress() < share && ctx.Err() == nil {
			sleep(ctx, 10*time.Millisecond)
		}
		return ctx.Err() == nil
	}
	wanted := func(f string) bool { return slices.Contains(r.cfg.Faults, f) }
	// A fault that could not be thrown is noted, unless the run is ending
	// anyway (interrupted, or its history could not be written).
	failed := func(what string, err error) {
		if err != nil && ctx.Err() == nil {
			r.note(what + ": " + err.Error())
		}
	}
	if wanted("replica-kill") && at(killAt) {
		var err error
		if r.cfg.Opaque || len(reps) < 2 {
			err = r.plainKill(killed)
		} else {
			err = r.killHolding(ctx, killed)
		}
		failed("kill", err)
	}
	// The database crash comes before the pause: a crash while a replica
	// sleeps would roll back the very work the pause is there to expose.
	if wanted("database-crash") && r.cfg.CrashDB != nil && at(crashAt) {
		r.event(fault{Fault: "database-crash"})
		if err := r.cfg.CrashDB(); err == nil {
			r.cfg.DB.Reset() // its connections died with the server
			r.count("database-crash")
			r.note("stopped PostgreSQL immediately and restarted it")
		} else {
			failed("database crash", err)
		}
	}
	if wanted("replica-pause") && at(pauseAt) {
		// Paused inside its transaction past the lock TTL, while a retry
		// takes its key over: when it wakes, the fencing token must
		// refuse its work. Choreographed through PostgreSQL, not timed.
		if err := r.fencedPause(ctx, paused); err != nil {
			failed("pause", err)
		} else {
			r.count("replica-pause")
			r.note("paused a replica inside its transfer, let a retry take its key over, then resumed it")
		}
	}
	if wanted("session-kill") && !r.cfg.Opaque && at(sessionAt) {
		failed("session kill", r.sessionKill(ctx, session))
	}
}

func (r *run) note(s string) {
	if r.cfg.Progress != nil {
		// The progress line, if any, is cleared first: a note is a line
		// of its own, and the progress line comes back at its next tick.
		r.liveMu.Lock()
		defer r.liveMu.Unlock()
		clear := ""
		if r.cfg.Live != nil {
			clear = "\r\033[K"
		}
		fmt.Fprintf(r.cfg.Progress, "%storture: %s: %s\n", clear, time.Since(r.start).Round(100*time.Millisecond), s)
	}
}

// resolve settles an intent after the faults, as a real client would:
// ask what happened, and send it again (under its key, which is safe)
// when the server never got it, or when it is still in progress after a
// lock could have expired: a lock left by a killed server is taken over
// only by a new request with the key, never by waiting. (An opaque server
// is not asked: the intent is sent again until it is answered.) It asks
// the replica the intent first went to, then the next, and so on.
func (r *run) resolve(ctx context.Context, in *intent, faultsOver, deadline time.Time) {
	if r.cfg.Opaque {
		r.resend(ctx, in, deadline)
		return
	}
	for i := 0; i == 0 || time.Now().Before(deadline); i++ { // one try at least, even after the deadline
		if ctx.Err() != nil {
			return
		}
		a := r.lookup(ctx, in, in.plan.First+i)
		r.keep(in, a)
		switch {
		case a.Network != "":
			r.settleNote(in, a)
			sleep(ctx, 100*time.Millisecond)
		case a.State == "in_progress" && time.Since(faultsOver) < r.cfg.LockTTL:
			r.settleNote(in, a)
			sleep(ctx, 100*time.Millisecond)
		case a.State == "completed":
			if a.Status >= 500 {
				// A failure kept as the key's answer: every retry would get
				// it back. Settled, but wrongly, and the checker says so.
				r.mu.Lock()
				r.late5xx = append(r.late5xx, in.key)
				r.mu.Unlock()
			}
			in.resolved = true
			return
		default: // never received, released, or in progress past any lock: send it again
			if r.sendAgain(ctx, in.plan.First+i, in) {
				return
			}
			sleep(ctx, 100*time.Millisecond)
		}
	}
	// unresolved: the checker reports it, with what the settling saw
}

// lookup asks replica i what became of an intent (GET /transfers?key=).
// A completed key's attempt carries the stored status and body.
func (r *run) lookup(ctx context.Context, in *intent, i int) attempt {
	i = i % len(r.cfg.Replicas)
	rp := r.cfg.Replicas[i]
	c := &client.Client{BaseURL: rp.URL(), Token: "token-ada", HTTP: r.http}
	a := attempt{Intent: in.n, Key: in.key, Replica: i, Life: int(r.lives[i].Load()), Kind: "lookup", sent: time.Since(r.start)}
	state, body, err := c.Lookup(ctx, in.key)
	a.done = time.Since(r.start)
	switch {
	case err != nil:
		a.Network = "no answer"
	case state == "completed":
		var rec struct {
			ResponseStatus int             `json:"responseStatus"`
			ResponseBody   json.RawMessage `json:"responseBody"`
		}
		json.Unmarshal(body, &rec)
		a.State, a.Status, a.Body = state, rec.ResponseStatus, keptBody(rec.ResponseBody)
	case state == "in_progress":
		a.State, a.Status = state, 200
	default: // unknown: the server never received it
		a.State, a.Status = state, 404
	}
	return a
}

// resend settles an intent by sending it again until it is answered.
func (r *run) resend(ctx context.Context, in *intent, deadline time.Time) {
	for i := 0; i == 0 || time.Now().Before(deadline); i++ { // one try at least, even after the deadline
		if ctx.Err() != nil || r.sendAgain(ctx, in.plan.First+i, in) {
			return
		}
		sleep(ctx, 100*time.Millisecond)
	}
	// unresolved: the checker reports it, with what the settling saw
}

// sendAgain sends an intent once more, to replica i, and reports whether
// the answer settled it.
func (r *run) sendAgain(ctx context.Context, i int, in *intent) bool {
	a := r.send(ctx, in, i, in.body, "settle")
	r.keep(in, a)
	r.settleNote(in, a)
	if a.Status >= 500 {
		r.mu.Lock()
		r.late5xx = append(r.late5xx, in.key)
		r.mu.Unlock()
	}
	if definitive(a) {
		in.resolved = true
	}
	return in.resolved
}

// settleNote keeps what the settle phase saw of an intent: how many
// tries, and the last few answers, for the report of one that never
// resolved.
func (r *run) settleNote(in *intent, a attempt) {
	in.settleTries++
	in.settleLast = append(in.settleLast, a)
	if len(in.settleLast) > 4 {
		in.settleLast = in.settleLast[1:]
	}
}

// maxKept is as much of an answer's body as the run keeps (the lesson's
// are a few hundred bytes): thousands of attempts at a server that sends
// megabytes must not take the run's memory with them.
const maxKept = 8 << 10

func keptBody(b []byte) string {
	if len(b) > maxKept {
		return string(b[:maxKept]) + "…(cut)"
	}
	return string(b)
}
