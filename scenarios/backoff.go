package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// A thousand phones that lost signal together come back together. If they
// all retry at once, and again at once, a server that was only slow is
// flattened: every slot gets more requests than it can answer, so every
// request times out and is retried into the next slot. Backing off spreads
// the retries: the lesson waits 50, 100, 200 ms ... plus up to 50 ms of
// jitter; the lab's client (bank send) waits a random time between zero
// and a ceiling that doubles (50, 100, 200 ms ...), "full jitter", which
// spreads them further. Here 50 phones and a server that answers up to
// 10 requests in each 10 ms; past that it wastes work on requests whose
// clients have given up, so it answers 2 × 10 − n of n, and none once 20
// arrive together. All on the lab's clock; each request that is answered
// is a real transfer with its key.
var Backoff = &lab.Scenario{
	Name:    "backoff",
	Summary: "50 phones retry together: without backoff a slow server stays down; growing waits with jitter let it recover",
	Section: "Over HTTP, with a retrying client",
	Fix:     "the backoff parts above: waits that grow, with jitter",
	Blind:   map[lab.Check]string{lab.TotalKept: "transfers that never happen move no money", lab.LedgerAgrees: "nothing moved, so the books agree"},
	Explain: map[string]string{
		"broken: no backoff, every phone retries at once":                                  "Every phone retries 10 ms after each timeout: every 10 ms gets all 50.",
		"exponential backoff: 50, 100, 200 ms ... plus up to 50 ms of jitter":              "Each wait doubles, plus a random 0 to 50 ms: the phones that failed together spread out over the next tries.",
		"full jitter, the lab's own client's way: a random wait up to 50, 100, 200 ms ...": "Each wait is random, between 0 and a ceiling that doubles: no two phones keep the same rhythm, and the later tries spread over ever wider windows.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		handler := &api.Transfers{DB: lab.DB, Keys: &idem.Store{}}
		runs := map[string]outcome{}
		app := &client.Client{Rand: lab.Rand}
		schedules := []struct {
			part, prefix string
			amount       int64 // kobo: each schedule's transfers are told apart by amount
			wait         func(n int) time.Duration
		}{
			{"broken: no backoff, every phone retries at once", "no", 100, func(int) time.Duration { return slot }},
			{"exponential backoff: 50, 100, 200 ms ... plus up to 50 ms of jitter", "exponential", 200, func(n int) time.Duration {
				return time.Duration(50<<(n-1))*time.Millisecond + time.Duration(lab.Rand.Int64N(int64(50*time.Millisecond)+1))
			}},
			{"full jitter, the lab's own client's way: a random wait up to 50, 100, 200 ms ...", "full-jitter", 300, func(n int) time.Duration { return app.Backoff(n, 0) }},
		}
		lab.Say("the server is slow: it answers up to %d requests in each 10 ms; when more arrive, n of them, it wastes work on requests whose phones have already timed out, and answers only 2 × %d − n (%d of %d, none of %d or more).",
			capacity, capacity, 2*capacity-12, 12, 2*capacity)
		lab.Say("%d phones lost signal together and come back together; each sends Ada's transfer to Bola with a key of its own, and retries after a timeout, up to %d tries. Backing off is waiting longer after each failed try; jitter is a random part of each wait, so that phones that failed together do not retry together.", phones, maxTries)
		lab.Say("each part's phones send their own amount (₦1, ₦2, ₦3), so that each part's transfers can be counted apart.")
		for _, s := range schedules {
			in := lab.Intent(fmt.Sprintf("the %d phones' ₦%d transfers, %s backoff", phones, s.amount/100, s.prefix), 1, 2, s.amount, phones)
			if s.prefix == "no" {
				in.ShownBroken()
			}
			lab.Part(s.part)
			served, busiest, tries, done, err := storming(ctx, handler, s.prefix, s.amount, s.wait)
			lab.Must(err)
			runs[s.prefix] = outcome{busiest, tries, done}
			when := ""
			if served == phones {
				when = " (the last at " + millis(done) + ")"
			}
			lab.Burst("server", fmt.Sprintf("%d phones × up to %d tries of ₦%d", phones, maxTries, s.amount/100), fmt.Sprintf("served %d of %d", served, phones))
			lab.Say("served %d of %d%s; tries in all: %d; retries in the busiest 10 ms: %d; %d phones gave up after %d tries",
				served, phones, when, tries, busiest, phones-served, maxTries)
		}
		// Full jitter's waits look random, but their ceilings double.
		lab.Say("full jitter's first waits for one phone: %s", jitterWaits(app))
		exp, full := runs["exponential"], runs["full-jitter"]
		lab.Say("(full jitter is the lab's own client's way, the one bank send, the lab's command that sends one transfer, uses: each wait is random up to a ceiling that doubles, so one phone's waits look as if they do not grow. Here, against exponential backoff, it needed %d tries in all against %d and served the last phone at %s against %s; its busiest 10 ms held %d retries against %d: %s. A random wait may be short, so some phones come back early; and no wait is a fixed step, so no two phones keep in step.)",
			full.tries, exp.tries, millis(full.last), millis(exp.last), full.busiest, exp.busiest, jitterVerdict(exp, full))
		var moved []string
		var sum int64
		for _, s := range schedules {
			if n := lab.Count(ctx, "SELECT count(*) FROM transfers WHERE amount_kobo = $1", s.amount); n > 0 {
				moved = append(moved, fmt.Sprintf("%d × %s", n, bank.Naira(s.amount)))
				sum += n * s.amount
			}
		}
		lab.Say("moved from Ada to Bola: %s = %s", strings.Join(moved, " + "), bank.Naira(sum))
		lab.Balances(ctx, "")
		return nil
	},
}

const (
	phones   = 50
	capacity = 10 // requests the server answers in one slot
	maxTries = 8
	slot     = 10 * time.Millisecond
)

// storming plays phones retrying on the lab's clock: in each slot, if no
// more than capacity requests arrive, each is a real transfer through
// handler; otherwise every one of them times out and waits for its next
// try. It returns how many were served, the busiest slot, and when the
// last one was served.
func storming(ctx context.Context, handler *api.Transfers, prefix string, amount int64, wait func(n int) time.Duration) (served, busiest, all int, last time.Duration, err error) {
	next := make([]time.Duration, phones) // when each phone tries next; -1 once done
	tries := make([]int, phones)
	body := []byte(fmt.Sprintf(`{"from": 1, "to": 2, "amountKobo": %d}`, amount))
	for t := time.Duration(0); ; t += slot {
		var arriving []int
		pending := false
		for p := range phones {
			if next[p] >= 0 && tries[p] < maxTries {
				pending = true
				if next[p] < t+slot {
					arriving = append(arriving, p)
				}
			}
		}
		if !pending {
			return served, busiest, all, last, nil
		}
		sort.Ints(arriving)
		if t > 0 { // the first try is the herd itself
			busiest = max(busiest, len(arriving))
		}
		answered := min(len(arriving), max(0, 2*capacity-len(arriving)))
		for i, p := range arriving {
			tries[p]++
			all++
			if i >= answered {
				next[p] = t + wait(tries[p]) // timed out: back off
				continue
			}
			key := fmt.Sprintf("phone-%03d-amount-%06d", p, amount)
			if _, err := handler.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.LessonStart.Add(t)}); err != nil {
				return served, busiest, all, last, err
			}
			next[p], served, last = -1, served+1, t+slot
		}
	}
}

// jitterWaits shows full jitter's first four waits with their ceilings.
func jitterWaits(app *client.Client) string {
	s := ""
	for n := 1; n <= 4; n++ {
		if n > 1 {
			s += ", "
		}
		s += fmt.Sprintf("%s (up to %s)", millis(app.Backoff(n, 0)), millis(time.Duration(50<<(n-1))*time.Millisecond))
	}
	return s
}

// outcome is what one backoff part measured.
type outcome struct {
	busiest, tries int
	last           time.Duration
}

// millis says a duration in whole milliseconds, as the story's other
// times are said: "230 ms".
func millis(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

// jitterVerdict says what the two jittered runs' figures show, from the
// figures themselves: full jitter's peak, tries and finish against
// exponential backoff's.
func jitterVerdict(exp, full outcome) string {
	than := func(a, b int64, more, fewer, same string) string {
		switch {
		case a > b:
			return more
		case a < b:
			return fewer
		}
		return same
	}
	return strings.Join([]string{
		than(int64(full.busiest), int64(exp.busiest), "a busier peak", "a calmer peak", "as busy a peak"),
		than(int64(full.tries), int64(exp.tries), "more tries", "fewer tries", "as many tries"),
		than(int64(full.last), int64(exp.last), "a later finish", "an earlier finish", "the same finish"),
	}, ", ")
}
