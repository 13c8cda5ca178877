package clientgrade

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zudojs/bank/bank/audit"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
)

// How the two timing checks decide. A wait is measured at the front: from
// the instant it answered an attempt to the instant the kernel got the
// next (on Linux; elsewhere, the instant the front read it), so it holds
// the client's own wait plus the time its process took to wake, read the
// answer and send again (a few milliseconds on a quiet machine).
const (
	// flatWithin: waits that all lie within this of the shortest, times
	// flatRatio, are flat: a fixed delay, or none.
	flatWithin = 20 * time.Millisecond
	flatRatio  = 1.3
	// backoffFailures: the backoff check answers this many attempts 503,
	// enough for a backoff's growth to show through its jitter.
	backoffFailures = 8
	// growthRatio: the longest of the last third of the waits must be this
	// many times the longest of the first third.
	growthRatio = 3
	// lockstepClients are started lockstepApart from each other in the
	// lockstep check, and the first lockstepRounds attempts of each are
	// answered 503: six, so that the two that decide come a second or
	// more after a client's start, when a runtime's start-up work (node
	// compiles on threads of its own for a second or more on a busy
	// machine) no longer blurs what the client chose.
	lockstepClients = 12
	lockstepRounds  = 6
	lockstepApart   = 150 * time.Millisecond
	// After each of the last two failures, the spread of the clients'
	// waits, the quickest and the slowest left out: within stepSlack and
	// 3 % of the median wait is lockstep (the processes' own delays,
	// measured at 3 to 13 ms on the quiet 2-core machine, spread them no
	// more); apartLeast after both and apartMost after one is jitter (the
	// lesson's, a random 0 to 50 ms, spreads the middle ten of twelve
	// clients by 22 ms or more in about 97 of 100 failures); on a busy
	// machine both stretched by its load (pace.Factor). Between the two
	// the check cannot tell: a busy machine's own delays are as wide as
	// the lesson's jitter.
	stepSlack  = 12 * time.Millisecond
	apartLeast = 22 * time.Millisecond
	apartMost  = 30 * time.Millisecond
)

// grew reports whether the waits grew as a backoff's do: the longest of
// their last third growthRatio times the longest of their first. Jitter
// may make a wait shorter than the one before (full jitter, a random wait
// up to a ceiling that doubles, as the lab's own client waits, often
// does), but not the whole run. On a busy machine, where one wait may be
// long from the machine's delays alone, two of the last third (of two at
// least) must be.
func grew(waits []time.Duration, busy bool) bool {
	k := max(1, (len(waits)+1)/3)
	early := slices.Max(waits[:k])
	if busy {
		k = max(k, 2)
	}
	late := slices.Sorted(slices.Values(waits[max(0, len(waits)-k):]))
	long := late[len(late)-1]
	if busy {
		long = late[len(late)-2]
	}
	return long >= growthRatio*early
}

// grewWitnessed reports whether the spans prove a backoff's growth: the
// longest least wait of their last third growthRatio times the longest
// most wait of their first (see grew). Every span must be witnessed.
func grewWitnessed(spans []span) bool {
	if len(spans) < 3 {
		return false
	}
	k := max(1, (len(spans)+1)/3)
	var early, late time.Duration
	for i, s := range spans {
		if !s.witnessed {
			return false
		}
		if i < k {
			early = max(early, s.hi)
		}
		if i >= len(spans)-k {
			late = max(late, s.lo)
		}
	}
	return late >= growthRatio*early
}

// scaled is d stretched by the machine's load factor.
func scaled(d time.Duration, factor float64) time.Duration {
	return time.Duration(float64(d) * max(1, factor))
}

// waitsOf are the waits between a client's attempts: from the answer to
// attempt i to the sending of attempt i+1 (the kernel's time of its
// arrival, where known: the front's own delays in reading it left out).
func waitsOf(posts []attempt) []time.Duration {
	var w []time.Duration
	for i := 1; i < len(posts); i++ {
		if posts[i-1].Answered.IsZero() {
			break
		}
		w = append(w, posts[i].Sent.Sub(posts[i-1].Answered))
	}
	return w
}

// A span is what the grader knows of how long a client chose to wait
// between two attempts. It waited at most hi: from the instant the front
// began to answer the first to the kernel's arrival of the next. Where
// the client's busy time was read (Linux, a cgroup of its own), it waited
// at least lo: from the instant the answer had been written to that
// arrival, less the time its processes ran or were ready to run but had
// no CPU in between. The rest it spent asleep or blocked of its own
// accord, however busy the machine was: its wait is a witnessed fact
// within [lo, hi], not one guessed from the machine's load.
type span struct {
	lo, hi    time.Duration
	witnessed bool // lo is known
}

// waitSpans are the spans of a client's waits, as waitsOf's.
func waitSpans(posts []attempt) []span {
	var out []span
	for i := 1; i < len(posts); i++ {
		a, b := posts[i-1], posts[i]
		if a.Answered.IsZero() {
			break
		}
		s := span{hi: b.Sent.Sub(a.Answered)}
		if a.Run == b.Run && a.OutRead && b.InRead && !a.Written.IsZero() {
			s.lo, s.witnessed = b.Sent.Sub(a.Written)-(b.BusyIn-a.BusyOut), true
		}
		out = append(out, s)
	}
	return out
}

// witnessedSpread is what the spans of many clients' waits after the same
// failure prove, the two likeliest outliers left out as in lockstep's
// spread (one client its disk or the machine held up is not jitter):
// apart, by how much the second longest least wait exceeds the second
// shortest longest one (more than nothing: two clients at least chose
// waits that far apart); together, by how much the second longest
// longest wait exceeds the second shortest least one (all but two chose
// waits within it). ok is false unless every span was witnessed.
func witnessedSpread(spans []span) (apart, together time.Duration, ok bool) {
	if len(spans) < 4 {
		return 0, 0, false
	}
	var lo, hi []time.Duration
	for _, s := range spans {
		if !s.witnessed {
			return 0, 0, false
		}
		lo, hi = append(lo, s.lo), append(hi, s.hi)
	}
	slices.Sort(lo)
	slices.Sort(hi)
	n := len(spans)
	return lo[n-2] - hi[1], hi[n-2] - lo[1], true
}

func msList(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%d", d.Milliseconds()))
	}
	return strings.Join(s, ", ") + " ms"
}

// flat reports whether the waits do not grow: all within flatRatio (and
// flatWithin) of the shortest.
func flat(waits []time.Duration) bool {
	least, most := slices.Min(waits), slices.Max(waits)
	return float64(most) <= flatRatio*float64(least)+float64(flatWithin)
}

func backoff(t *trial) {
	f := t.serve(func(n int, _ *attempt) fault {
		if n <= backoffFailures {
			return fault{kind: answer, status: 503, body: errorBody(503)}
		}
		return fault{}
	})
	o := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	t.noteAttempts(f)
	posts := f.posts()
	t.retried(posts, o, "the first attempt was answered 503")
	t.sameKeys(posts, adaPaysBola, adaFrom)
	waits := waitsOf(posts)
	if len(waits) > backoffFailures {
		waits = waits[:backoffFailures]
	}
	t.Note("the waits after each 503: %s", msList(waits))
	if len(waits) < 3 {
		t.Fail(nil, "only %d attempts for %d failures in a row: the contract's client tries up to 10 times", len(posts), backoffFailures)
	}
	if flat(waits) {
		t.Fail(&mNoBackoff, "the waits after each 503 were %s: they do not grow", msList(waits))
	}
	// What the client chose, where witnessed (see span): its longest
	// late wait at least, against its longest early one at most. One
	// such wait is enough: the machine's delays are left out of it.
	proven := false
	if spans := waitSpans(posts); len(spans) >= len(waits) {
		proven = grewWitnessed(spans[:len(waits)])
	}
	if proven {
		t.Note("the waits the client chose, its processes' run and CPU waits left out, grew %d times at least", growthRatio)
	}
	if grew(waits, false) && !grew(waits, pace.Busy()) && !proven {
		t.Unknown("the waits were %s: they grew, but only one of the last ones was %d times the first ones, and on a machine this busy one long wait may be the machine's own delay", msList(waits), growthRatio)
	}
	if !grew(waits, false) && !proven {
		t.Unknown("the waits were %s: not flat, but the last ones were not %d times the first ones: jitter can hide a backoff's growth in a few waits, and a random wait that does not grow is no backoff, so the check cannot tell them apart (a backoff that doubles grows past it within %d failures)", msList(waits), growthRatio, backoffFailures)
	}
	intents := []audit.Intent{adaIntent("Ada's tap", 1)}
	if o.Said == "unknown" {
		intents[0].Want = 0 // it gave up before the front let an attempt through
	}
	b := t.books(intents...)
	if o.Said == "made" {
		t.made(o, b, adaIntent("", 1))
	}
	t.Pass("the waits after each 503 grew: %s", msList(waits))
}

func lockstep(t *trial) {
	const kobo = 10_000 // ₦100 each: Ada can pay them all
	var fronts []*front
	var runs []*client
	for i := range lockstepClients {
		f := t.serve(func(n int, _ *attempt) fault {
			if n <= lockstepRounds {
				return fault{kind: answer, status: 503, body: errorBody(503)}
			}
			return fault{}
		})
		fronts = append(fronts, f)
		runs = append(runs, t.launch(f, transfer(adaFrom, adaTo, kobo), adaFrom, t.subfolder(fmt.Sprintf("client-%d", i+1))))
		// Apart, so that no two read their answers at once: on a busy
		// machine, clients woken together delay each other, and that
		// spread would look like jitter.
		time.Sleep(lockstepApart)
	}
	for i, c := range runs {
		o := t.finish(c)
		if o.Said != "made" {
			t.Note("client %d's attempts:", i+1)
			t.noteAttempts(fronts[i])
			t.retried(fronts[i].posts(), o, fmt.Sprintf("client %d's first attempt was answered 503", i+1))
			t.Fail(nil, "client %d reported %s, not made, after %d failures", i+1, o, lockstepRounds)
		}
	}
	var spreads, medians, aparts, togethers []time.Duration
	witnessed := true
	for round := range lockstepRounds {
		var waits []time.Duration
		var spans []span
		for _, f := range fronts {
			posts := f.posts()
			if w := waitsOf(posts); len(w) > round {
				waits = append(waits, w[round])
				spans = append(spans, waitSpans(posts)[round])
			}
		}
		if len(waits) < 2 {
			break
		}
		slices.Sort(waits)
		// The spread of all but the quickest and the slowest: one
		// client the machine held up is not jitter.
		spread := waits[len(waits)-1] - waits[0]
		if len(waits) >= 4 {
			spread = waits[len(waits)-2] - waits[1]
		}
		spreads = append(spreads, spread)
		medians = append(medians, waits[len(waits)/2])
		t.Note("after failure %d the %d clients waited %s (spread %dms, the quickest and the slowest left out)", round+1, len(waits), msList(waits), spread.Milliseconds())
		apart, together, ok := witnessedSpread(spans)
		witnessed = witnessed && ok
		if ok {
			aparts, togethers = append(aparts, apart), append(togethers, together)
			t.Note("  the waits they chose, their processes' run and CPU waits left out: %dms apart at least, within %dms at most", apart.Milliseconds(), together.Milliseconds())
		}
	}
	t.books(audit.Intent{Label: "the taps", From: adaFrom, To: adaTo, Kobo: kobo, Want: lockstepClients})
	if len(spreads) < lockstepRounds {
		t.Fail(nil, "the clients did not retry after each of %d 503s", lockstepRounds)
	}
	// The last two failures decide: their waits are the longest, so the
	// machine's own delays weigh least there.
	slack := func(r int) time.Duration { return stepSlack + medians[r]*3/100 }
	lastTwo := func(ok func(r int) bool) bool { return ok(lockstepRounds-2) && ok(lockstepRounds-1) }
	last := spreads[lockstepRounds-2:]
	// Witnessed (see span): what the clients chose, whatever the load.
	if witnessed && lastTwo(func(r int) bool { return aparts[r] > slack(r) }) {
		t.Pass("the clients chose waits that differed after the same failure: at least %s apart, their processes' run and CPU waits left out (spreads as measured: %s)", msList(aparts[lockstepRounds-2:]), msList(spreads))
	}
	if witnessed && lastTwo(func(r int) bool { return togethers[r] <= slack(r) }) {
		t.Fail(&mLockstep, "after each of the last two failures the %d clients chose the same wait, to within %s, their processes' run and CPU waits left out (spreads as measured: %s): clients that fail together retry together", lockstepClients, msList(togethers[lockstepRounds-2:]), msList(spreads))
	}
	// Measured only: the machine's own delays grow with its load (a
	// node client in lockstep spread by 60 ms at 11 tasks a core), and
	// so do the spreads that show jitter.
	busy := pace.Factor()
	switch {
	case lastTwo(func(r int) bool { return spreads[r] <= slack(r) }): // a busy machine only spreads them more
		t.Fail(&mLockstep, "after each of the last two failures the %d clients waited the same, to within %s (spreads: %s): clients that fail together retry together", lockstepClients, msList(last), msList(spreads))
	case slices.Min(last) >= scaled(apartLeast, busy) && slices.Max(last) >= scaled(apartMost, busy):
		t.Pass("the clients' waits after the same failure differed: spreads of %s", msList(spreads))
	}
	t.Unknown("the clients' waits after the last two failures spread by %s: too close to the machine's own delays to tell jitter from none (in step: within %dms and 3%% of the wait; apart: %dms after both and %dms after one, the machine's load now stretching them %.1f times)", msList(last), stepSlack.Milliseconds(), scaled(apartLeast, busy).Milliseconds(), scaled(apartMost, busy).Milliseconds(), busy)
}
