package clientgrade

import (
	"cmp"
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
	// answered 503: six, so that five decide while the first, blurred
	// most by a runtime's start-up work (node compiles on threads of its
	// own for a second or more on a busy machine), is left out.
	lockstepClients = 12
	lockstepRounds  = 6
	lockstepApart   = 150 * time.Millisecond
	// The last lockstepDecide failures decide (the first is left out: a
	// runtime's start-up work blurs it most), three of them each way, so
	// that a failure or two the machine or a runtime's own work blurred
	// does not leave the check unable to tell. After one, the spread of
	// the clients' waits, the quickest and the slowest left out, within
	// stepSlack is in step: a client without jitter chooses the very wait
	// the others do (the processes' own delays, measured at 2 to 26 ms
	// after failures 2 to 6 for twelve node clients on the quiet 2-core
	// machine, most often under 18, spread them no more). The least
	// jitter the lesson accepts, its random 0 to 50 ms, spreads the middle
	// ten of twelve clients (Beta(9, 4) times 50 ms) by 18 ms or less in
	// 7 of 1,000 failures, so three of five in 3 of a million grades; by
	// apartLeast or more in 97 of 100 (fewer than three of five in 3 of
	// 10,000 grades). Neither bound grows with the waits: what jitter adds
	// does not (the lesson adds 50 ms at most to waits up to 1,600 ms),
	// and neither do the processes' delays. Spreads as measured show
	// jitter when apartLeast or more beyond what the machine's delays can
	// account for (machineSpread); between the bounds the check cannot
	// tell.
	lockstepDecide = 5
	stepSlack      = 18 * time.Millisecond
	apartLeast     = 22 * time.Millisecond
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
// accord, however busy the machine: its wait is a witnessed fact within
// [lo, hi], not one guessed from the machine's load. held is how much of
// hi the machine itself can have added: the front's time to write its
// answer, and the client's time ready to run with no CPU.
type span struct {
	lo, hi    time.Duration
	held      time.Duration
	witnessed bool // lo and held are known
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
			busy := b.BusyIn.Less(a.BusyOut)
			s.lo, s.held, s.witnessed = b.Sent.Sub(a.Written)-busy.Sum(), a.Written.Sub(a.Answered)+busy.Waited, true
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
	var rounds []round
	for n := range lockstepRounds {
		var spans []span // a wait as measured is its span's hi
		for _, f := range fronts {
			if s := waitSpans(f.posts()); len(s) > n {
				spans = append(spans, s[n])
			}
		}
		if len(spans) < 2 {
			break
		}
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.hi, b.hi) })
		var waits []time.Duration
		for _, s := range spans {
			waits = append(waits, s.hi)
		}
		// The spread of all but the quickest and the slowest: one
		// client the machine held up is not jitter.
		middle := spans
		if len(spans) >= 4 {
			middle = spans[1 : len(spans)-1]
		}
		r := round{spread: middle[len(middle)-1].hi - middle[0].hi}
		t.Note("after failure %d the %d clients waited %s (spread %dms, the quickest and the slowest left out)", n+1, len(waits), msList(waits), r.spread.Milliseconds())
		r.apart, r.together, r.witnessed = witnessedSpread(spans)
		if r.witnessed {
			for _, s := range middle {
				r.held = max(r.held, s.held)
			}
			t.Note("  the waits they chose, their processes' run and CPU waits left out: %dms apart at least, within %dms at most; the machine held one of the middle waits up %dms at most", r.apart.Milliseconds(), r.together.Milliseconds(), r.held.Milliseconds())
		}
		rounds = append(rounds, r)
	}
	t.books(audit.Intent{Label: "the taps", From: adaFrom, To: adaTo, Kobo: kobo, Want: lockstepClients})
	if len(rounds) < lockstepRounds {
		t.Fail(nil, "the clients did not retry after each of %d 503s", lockstepRounds)
	}
	last := rounds[lockstepRounds-lockstepDecide:]
	spreads := fmt.Sprintf("spreads after failures %d to %d as measured: %s", lockstepRounds-lockstepDecide+1, lockstepRounds, msList(pick(last, func(r round) time.Duration { return r.spread })))
	busy := pace.Factor()
	allowed := msList(pick(last, func(r round) time.Duration { return machineSpread(r, busy) }))
	chose := ""
	if !slices.ContainsFunc(last, func(r round) bool { return !r.witnessed }) {
		chose = fmt.Sprintf("; the waits they chose, their processes' run and CPU waits left out, at least %s apart and within %s", msList(pick(last, func(r round) time.Duration { return r.apart })), msList(pick(last, func(r round) time.Duration { return r.together })))
	}
	switch k, n := stepVerdict(last, busy); k {
	case jitter:
		t.Pass("the clients' waits differed after %d of the last %d failures (%s; the machine's delays can account for %s at most%s)", n, lockstepDecide, spreads, allowed, chose)
	case inStep:
		t.Fail(&mLockstep, "after %d of the last %d failures the %d clients waited the same, to within %dms (%s%s): clients that fail together retry together", n, lockstepDecide, lockstepClients, stepSlack.Milliseconds(), spreads, chose)
	}
	t.Unknown("the clients' waits (%s) were too close to the machine's own delays to tell jitter from none (in step: within %dms after most of them; jitter: %dms or more after most, beyond the %s the machine's delays can account for%s)", spreads, stepSlack.Milliseconds(), apartLeast.Milliseconds(), allowed, chose)
}

// A round is what the clients' waits after one failure show: their
// spread as measured and, where every one was witnessed (see span), what
// witnessedSpread proves of the waits they chose.
type round struct {
	spread          time.Duration
	apart, together time.Duration
	held            time.Duration // the most the machine held up one of the middle waits (span's)
	witnessed       bool
}

// pick is one figure of each round.
func pick(rounds []round, of func(round) time.Duration) []time.Duration {
	var out []time.Duration
	for _, r := range rounds {
		out = append(out, of(r))
	}
	return out
}

// machineSpread is how far the machine's own delays can have spread the
// clients' waits after one failure beyond a quiet machine's: apartLeast
// stretched by its load (pace.Factor: busy), less apartLeast, or where it
// is witnessed and less, the most it held up one of the waits the spread
// is taken over (that client's time ready to run with no CPU, the front's
// time to write its answer).
func machineSpread(r round, busy float64) time.Duration {
	by := scaled(apartLeast, busy) - apartLeast
	if r.witnessed {
		by = min(by, r.held)
	}
	return by
}

// provenApart reports whether what two clients at least chose after the
// failure was witnessed more than stepSlack apart.
func (r round) provenApart() bool { return r.witnessed && r.apart > stepSlack }

// A stepKind is what one failure's waits, or the deciding ones, show.
type stepKind int

const (
	cannotTell stepKind = iota
	jitter              // the clients' waits differed, beyond the machine's delays
	inStep              // they were the same
)

// shows is what one failure's waits show: jitter when what the clients
// chose, where witnessed, lay more than stepSlack apart, or their waits as
// measured spread apartLeast beyond what the machine's delays can account
// for (machineSpread); in step when what they chose, where witnessed, or
// their waits as measured (a busy machine only spreads them more) lay
// within stepSlack. The two never both hold: what the clients chose lies
// within the waits as measured, so apart ≤ spread ≤ together.
func (r round) shows(busy float64) stepKind {
	switch {
	case r.provenApart(), r.spread-machineSpread(r, busy) >= apartLeast:
		return jitter
	case r.witnessed && r.together <= stepSlack, r.spread <= stepSlack:
		return inStep
	}
	return cannotTell
}

// stepVerdict decides lockstep from the deciding rounds: what most of them
// show (see lockstepDecide), and how many show it. Two failures after
// which what the clients chose is witnessed apart are jitter too, when
// most do not show them in step: clients without jitter choose the same
// wait, so what they chose is never proven apart, however busy the
// machine, while a busy one blurs the spreads of short waits.
func stepVerdict(last []round, busy float64) (stepKind, int) {
	n := map[stepKind]int{}
	proven := 0
	for _, r := range last {
		n[r.shows(busy)]++
		if r.provenApart() {
			proven++
		}
	}
	switch {
	case 2*n[jitter] > len(last):
		return jitter, n[jitter]
	case 2*n[inStep] > len(last):
		if proven >= 2 {
			return cannotTell, 0
		}
		return inStep, n[inStep]
	case proven >= 2:
		return jitter, n[jitter]
	}
	return cannotTell, 0
}
