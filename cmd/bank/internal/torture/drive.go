package torture

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/bank/client"
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// send makes one attempt at replica i and records it.
func (r *run) send(ctx context.Context, i int, key, body, kind string) attempt {
	return r.sendWith(ctx, r.http, i, key, body, kind)
}

// sendWith is send through a given HTTP client.
func (r *run) sendWith(ctx context.Context, hc *http.Client, i int, key, body, kind string) attempt {
	rp := r.cfg.Replicas[i%len(r.cfg.Replicas)]
	c := &client.Client{BaseURL: rp.URL(), Token: "token-ada", HTTP: hc, MaxAttempts: 1, QuotedKey: r.cfg.QuotedKeys}
	a := attempt{Key: key, Replica: i % len(r.cfg.Replicas), Kind: kind}
	start := time.Now()
	res, err := c.Send(ctx, key, []byte(body))
	r.mu.Lock()
	r.lat = append(r.lat, time.Since(start))
	r.mu.Unlock()
	if err != nil {
		a.Network = "no answer"
	} else {
		a.Status, a.Replayed, a.Body = res.Status, res.Replayed, string(res.Body)
		if res.Status == 0 {
			a.Network = "no answer"
		}
	}
	r.record(a)
	return a
}

// definitive: an answer the client may show (not a network error, not
// "in progress", not a server error).
func definitive(a attempt) bool {
	return a.Status != 0 && a.Status != 409 && a.Status != 429 && a.Status < 500
}

func (r *run) keep(in *intent, a attempt) {
	if definitive(a) {
		r.mu.Lock()
		in.replies = append(in.replies, a)
		r.mu.Unlock()
	}
}

// drive sends one intent the way a good client does, with the faults a
// client can cause: it may crash and resume from its journal, resend a
// settled request (in sequence, two at once, or to the other replica),
// and reuse the key with a changed body.
func (r *run) drive(ctx context.Context, rnd *mrand.Rand, in *intent) {
	replica := rnd.IntN(len(r.cfg.Replicas))
	crashAfter := -1
	if rnd.Float64() < 0.1 {
		crashAfter = 1 // the client dies after its first attempt; the journal has the key
	}
	var last attempt
	for n := 1; n <= 12 && ctx.Err() == nil; n++ {
		if n > 1 {
			// After no answer, try another replica, as a load balancer
			// would; after a 409 or 5xx, either one.
			if last.Status == 0 || rnd.Float64() < 0.5 {
				replica++
				r.count("other-replica")
			}
			time.Sleep(time.Duration(rnd.IntN(int(20*time.Millisecond) << min(n, 6))))
		}
		a := r.send(ctx, replica, in.key, in.body, "send")
		r.keep(in, a)
		last = a
		if definitive(a) {
			break
		}
		if n == crashAfter {
			r.count("client-crash") // in-memory state gone; resume from the journal below
			crashAfter = -1
			replica = rnd.IntN(len(r.cfg.Replicas))
		}
	}
	// Which copies follow is drawn from the seed and the intent's number,
	// not from the client's stream (whose draws depend on how many retries
	// the timing caused), so that a seed always makes the same mix: a
	// short run is never left without, say, a concurrent duplicate.
	switch p := mrand.New(mrand.NewPCG(r.cfg.Seed, uint64(in.n)<<8|0x6b)).Float64(); {
	case p < 0.15:
		r.count("duplicate")
		r.keep(in, r.send(ctx, replica+1, in.key, in.body, "duplicate"))
	case p < 0.25:
		r.count("concurrent-duplicate")
		var wg sync.WaitGroup
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.keep(in, r.send(ctx, replica+k, in.key, in.body, "duplicate"))
			}()
		}
		wg.Wait()
	case p < 0.30 && len(in.replies) > 0:
		// Only once the server has the key: before that a changed body is
		// simply another request, which it must serve.
		r.count("changed-body")
		changed := strings.Replace(in.body, fmt.Sprintf(`"amountKobo":%d`, in.amount), fmt.Sprintf(`"amountKobo":%d`, in.amount+1_000_000), 1)
		a := r.send(ctx, replica, in.key, changed, "changed-body")
		// Any refusal will do (the lesson's is 422), or a 409 while the
		// first is in progress; an answer that accepts it is wrong.
		if a.Status/100 == 2 || a.Status/100 == 3 {
			r.mu.Lock()
			in.replies = append(in.replies, attempt{Key: in.key, Kind: "changed-body", Status: a.Status, Body: a.Body})
			r.mu.Unlock()
		}
	}
}

// inject runs the server-side faults on a schedule drawn from the seed,
// spread over the time the clients take.
func (r *run) inject(ctx context.Context, rnd *mrand.Rand) {
	step := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
			return false
		}
	}
	// at waits until a share of the intents has been handed to clients, so
	// that every fault lands while the load is on.
	n := int64(len(r.intents))
	// Progress is the share of intents handed out, or, with a duration,
	// the share of it gone, whichever is further.
	progress := func() float64 {
		p := float64(r.dispatched.Load()) / float64(n)
		if d := r.cfg.Duration; d > 0 {
			p = max(p, float64(time.Since(r.start))/float64(d))
		}
		return p
	}
	at := func(share float64) bool {
		for progress() < share {
			if r.loadOver.Load() || !step(10*time.Millisecond) {
				return false
			}
		}
		return !r.loadOver.Load()
	}
	wanted := func(f string) bool {
		for _, w := range r.cfg.Faults {
			if w == f {
				return true
			}
		}
		return false
	}
	reps := r.cfg.Replicas
	if wanted("replica-kill") && at(0.10+rnd.Float64()*0.05) {
		victim := reps[rnd.IntN(len(reps))]
		if victim.Kill() == nil {
			r.count("replica-kill")
			r.note("killed a replica (kill -9)")
		}
		step(200 * time.Millisecond)
		if err := victim.Restart(); err != nil {
			r.note("restarting a replica: " + err.Error())
		}
	}
	// The database crash comes before the pause: a crash while a replica
	// sleeps would roll back the very work the pause is there to expose.
	if wanted("database-crash") && r.cfg.CrashDB != nil && at(0.20+rnd.Float64()*0.05) {
		if err := r.cfg.CrashDB(); err == nil {
			r.cfg.DB.Reset() // its connections died with the server
			r.count("database-crash")
			r.note("stopped PostgreSQL immediately and restarted it")
		} else {
			r.note("database crash: " + err.Error())
		}
	}
	if wanted("replica-pause") && at(0.35+rnd.Float64()*0.05) {
		// Paused inside its transaction past the lock TTL, while a retry
		// takes its key over: when it wakes, the fencing token must
		// refuse its work. Choreographed through PostgreSQL, not timed.
		if err := r.fencedPause(ctx, rnd); err != nil {
			r.note("pause: " + err.Error())
		} else {
			r.count("replica-pause")
			r.note("paused a replica inside its transfer, let a retry take its key over, then resumed it")
		}
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
// is not asked: the intent is sent again until it is answered.)
func (r *run) resolve(ctx context.Context, in *intent, faultsOver, deadline time.Time) {
	if r.cfg.Opaque {
		r.resend(ctx, in, deadline)
		return
	}
	for i := 0; i == 0 || time.Now().Before(deadline); i++ { // one try at least, even after the deadline
		if ctx.Err() != nil {
			return
		}
		rp := r.cfg.Replicas[i%len(r.cfg.Replicas)]
		c := &client.Client{BaseURL: rp.URL(), Token: "token-ada", HTTP: r.http}
		state, body, err := c.Lookup(ctx, in.key)
		switch {
		case err != nil:
			r.settleNote(in, attempt{Key: in.key, Kind: "lookup", Network: "no answer"})
			time.Sleep(100 * time.Millisecond)
		case state == "in_progress" && time.Since(faultsOver) < r.cfg.LockTTL:
			r.settleNote(in, attempt{Key: in.key, Kind: "lookup", Status: 200, Body: `{"status":"in_progress"}`})
			time.Sleep(100 * time.Millisecond)
		case state == "completed":
			var rec struct {
				ResponseStatus int             `json:"responseStatus"`
				ResponseBody   json.RawMessage `json:"responseBody"`
			}
			json.Unmarshal(body, &rec)
			a := attempt{Key: in.key, Kind: "lookup", Status: rec.ResponseStatus, Body: string(rec.ResponseBody)}
			r.record(a)
			r.keep(in, a)
			in.resolved = true
			return
		default: // never received, released, or in progress past any lock: send it again
			if r.sendAgain(ctx, i, in) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// unresolved: the checker reports it, with what the settling saw
}

// resend settles an intent by sending it again until it is answered.
func (r *run) resend(ctx context.Context, in *intent, deadline time.Time) {
	for i := 0; i == 0 || time.Now().Before(deadline); i++ { // one try at least, even after the deadline
		if ctx.Err() != nil || r.sendAgain(ctx, i, in) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	// unresolved: the checker reports it, with what the settling saw
}

// sendAgain sends an intent once more, to replica i, and reports whether
// the answer settled it.
func (r *run) sendAgain(ctx context.Context, i int, in *intent) bool {
	a := r.send(ctx, i, in.key, in.body, "settle")
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
