package torture

import (
	mrand "math/rand/v2"
	"time"
)

// plan is what the seed decides for one intent, from the seed and the
// intent's number alone: never from which client sends it, from
// goroutine scheduling, or from which reply happens to come first. So a
// seed throws the same faults every run (TigerBeetle's VOPR: a failing
// seed is a bug report anyone can replay).
//
// What the machine's timing still decides is kept apart (Report.Timed):
// which requests are in flight when a replica or PostgreSQL dies, the
// retries that brings, and the takeovers and fencing rejections the
// servers count beyond the choreographed ones.
type plan struct {
	First int    // the replica its first attempt goes to
	Drops int    // answers the client drops (lost responses) before it keeps one
	Crash bool   // the client dies right after its first attempt, and resumes from its journal, through the other replica
	Copy  string // what follows its answer: "", duplicate, concurrent-duplicate or changed-body
	Same  bool   // a duplicate goes to the replica its first attempt went to (else to the other)
}

// The shares of the faults a client causes.
const (
	crashRate      = 0.10 // clients that die after their first attempt
	duplicateRate  = 0.15 // a copy sent after the answer
	concurrentRate = 0.10 // two copies at once
	changedRate    = 0.05 // the key again with a changed body
	maxDrops       = 8    // lost responses in a row, at most, even at --lose-rate 1
)

// planFor is intent n's plan: replicas servers, answers lost at loseRate.
func planFor(seed uint64, n, replicas int, loseRate float64) plan {
	rnd := mrand.New(mrand.NewPCG(seed, 0x706c616e<<32|uint64(n)))
	p := plan{First: rnd.IntN(replicas)}
	for p.Drops < maxDrops && rnd.Float64() < loseRate {
		p.Drops++
	}
	// The first intent's client always crashes, so that even a short run
	// (bank grade's) has a client crash and a resend to the other replica.
	p.Crash = rnd.Float64() < crashRate || n == 0
	switch c := rnd.Float64(); {
	case c < duplicateRate:
		p.Copy = "duplicate"
	case c < duplicateRate+concurrentRate:
		p.Copy = "concurrent-duplicate"
	case c < duplicateRate+concurrentRate+changedRate:
		p.Copy = "changed-body"
	}
	p.Same = rnd.IntN(2) == 0
	return p
}

// backoff is the wait before attempt k of intent n (k > 1): full jitter
// under a ceiling that doubles, drawn from the seed like the rest.
func backoff(seed uint64, n, k int) time.Duration {
	rnd := mrand.New(mrand.NewPCG(seed, 0x77616974<<32|uint64(n)<<8|uint64(k&0xff)))
	return time.Duration(rnd.Int64N(int64(20*time.Millisecond) << min(k, 6)))
}

// retryReplica is where a retry the timing caused (after no answer, a 409
// or a 5xx) goes: to the other replica after no answer, as a load balancer
// would; after a 409 or a 5xx, to either, as the seed says.
func retryReplica(seed uint64, n, k, last, replicas int, answered bool) int {
	if !answered {
		return last + 1
	}
	rnd := mrand.New(mrand.NewPCG(seed, 0x72657472<<32|uint64(n)<<8|uint64(k&0xff)))
	return last + rnd.IntN(2)
}

// Planned is what a seed plans for a run's intents: how many of each
// fault kind the clients will throw, if every intent is sent (with
// --duration, fewer may be). The same seed gives the same counts.
func Planned(seed uint64, intents, replicas int, loseRate float64) map[string]int64 {
	counts := map[string]int64{}
	for n := range intents {
		p := planFor(seed, n, replicas, loseRate)
		counts["lost-response"] += int64(p.Drops)
		if p.Crash {
			counts["client-crash"]++
		}
		if replicas > 1 {
			// A retry after a lost answer goes to the other replica, and
			// so does a client that resumed after a crash.
			counts["other-replica"] += int64(p.Drops)
			if p.Crash {
				counts["other-replica"]++
			}
		}
		if p.Copy != "" {
			counts[p.Copy]++
		}
	}
	return counts
}
