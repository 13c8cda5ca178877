package torture

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zudojs/bank/bank/audit"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// Diagnosis is the lesson's mistake a run's violations fit, derived from
// the run's history (which attempts made which transfers, at which
// replica and in which of its lives, and what the faults did to them),
// never fixed per run: with the line that says why.
type Diagnosis struct {
	// Mistake names one of the lab's catalogue of mistakes, or is ""
	// when the evidence fits none of them; then Why says what was seen.
	Mistake string `json:"mistake"`
	Why     string `json:"why"`
	See     string `json:"see,omitempty"` // the lab command that shows the mistake, and its fix
}

// mistake is the diagnosis naming a mistake of the lab's catalogue, with
// what torture sees of it and the command that shows it.
func mistake(name, why string) Diagnosis {
	m := mistakes.Must(name)
	return Diagnosis{Mistake: m.Name, Why: m.Seen + ": " + why, See: m.See}
}

// diagnose is the run's diagnosis.
func (r *run) diagnose(rep Report) Diagnosis {
	r.mu.Lock()
	events := slices.Clone(r.events)
	r.mu.Unlock()
	return diagnose(r.intents, r.stuck, r.cfg.LockTTL, rep.Violations, events)
}

// The ways two transfers of one intent came about, from the most telling.
const (
	byRestart    = iota // the same replica ran it again in a later life
	byDeath             // a transfer no answer named, its attempt died, and a later attempt ran it again
	byTakeover          // the second ran while the first still worked, a lock TTL or more later
	byConcurrent        // two copies sent at once both ran
	byEarly             // the second ran while the first still worked, before a lock TTL
	bySequence          // the same replica ran a copy after it had answered the first
	byOther             // the other replica ran it again, and no replica sees another's keys
	byUnknown
)

// execution is a transfer of an intent and the attempt that made it: the
// first that answered a 2xx naming it, not as a replay (nil when none did).
type execution struct {
	t audit.Transfer
	a *attempt
}

func executions(in *intent) []execution {
	var xs []execution
	for _, t := range in.moved {
		x := execution{t: t}
		for i := range in.attempts {
			a := &in.attempts[i]
			if a.Status/100 == 2 && !a.Replayed && a.Kind != "lookup" && a.Kind != "changed-body" &&
				a.reply().Unreadable == "" && a.reply().TransferID == t.ID && (x.a == nil || a.sent < x.a.sent) {
				x.a = a
			}
		}
		xs = append(xs, x)
	}
	return xs
}

// diagnose reads the history of a run (its intents, every attempt of
// each, and the transfers each moved; the keys left in progress) and
// names the mistake its violations fit.
//
// It is long because it is the ways two transfers of one intent come
// about, tried from the most telling, each with its evidence in words.
func diagnose(intents []*intent, stuck []string, ttl time.Duration, violations []string, events []fault) Diagnosis {
	// died: an attempt the run saw die, not one that only went
	// unanswered (a client's timeout on a slow replica is not a death):
	// it got a 5xx, or it was the one a kill or a session's end caught, or
	// its replica (or the database) was killed while it was in flight.
	died := func(d attempt) bool {
		if d.Status >= 500 || d.Kind == "kill" || d.Kind == "session-kill" {
			return true
		}
		for _, e := range events {
			hit := e.Fault == "database-crash" || (e.Fault == "replica-kill" || e.Fault == "session-kill") && e.Replica != nil && *e.Replica == d.Replica
			if hit && e.at >= d.sent && e.at <= d.done {
				return true
			}
		}
		return false
	}
	// What the servers kept, over the whole run: a replay, a 409 or a
	// completed lookup shows a key was kept; one from a replica other than
	// the one that ran the intent shows the replicas share their keys.
	kept, shared := false, false
	for _, in := range intents {
		var ran []int
		for _, x := range executions(in) {
			if x.a != nil {
				ran = append(ran, x.a.Replica)
			}
		}
		for _, a := range in.attempts {
			if a.Replayed || a.Status == 409 || a.State == "completed" {
				kept = true
				if len(ran) > 0 && !slices.Contains(ran, a.Replica) || a.State == "completed" {
					shared = true
				}
			}
		}
	}

	// Money moved twice: each intent's transfers, pair by pair.
	type found struct {
		in    *intent
		story string
	}
	var twice []found
	by := map[int][]found{}
	for _, in := range intents {
		if len(in.moved) < 2 {
			continue
		}
		best, story := byUnknown, ""
		xs := executions(in)
		for i := range xs {
			for j := range xs {
				if i == j {
					continue
				}
				k, s := pair(in, xs[i], xs[j], ttl, shared, died)
				if k < best {
					best, story = k, s
				}
			}
		}
		if story == "" {
			story = fmt.Sprintf("transfers %v", transferIDs(in.moved))
		}
		by[best] = append(by[best], found{in, story})
		twice = append(twice, found{in, story})
	}
	example := func(fs []found) string {
		s := fs[0].in.key + ": " + fs[0].story
		if len(fs) > 1 {
			s = fmt.Sprintf("%d intents; %s", len(fs), s)
		}
		return s
	}
	if len(twice) > 0 && !kept {
		return mistake("no-keys", fmt.Sprintf("%d intents moved money more than once, and no copy of any request was replayed or answered 409; such as %s: %s", len(twice), twice[0].in.key, twice[0].story))
	}
	for _, m := range []struct {
		kind int
		name string
	}{{byRestart, "memory-keys"}, {byDeath, "second-transaction"}, {byTakeover, "no-fencing"}, {byConcurrent, "check-then-insert"},
		{byEarly, "lock-ttl-ignored"}, {bySequence, "no-keys"}, {byOther, "keys-not-shared"}} {
		if fs := by[m.kind]; len(fs) > 0 {
			return mistake(m.name, example(fs))
		}
	}

	// No money moved twice (or none the history explains): the answers.
	for _, in := range intents {
		first := firstAnswer(in)
		for _, a := range in.attempts {
			if a.Kind == "changed-body" && a.Status/100 == 2 && first != nil && audit.Normalize(a.Body) == audit.Normalize(first.Body) {
				return mistake("no-fingerprint", fmt.Sprintf("%s: the same key with the amount changed got the first request's answer, %d %s, instead of 422", in.key, a.Status, a.Body))
			}
		}
	}
	for _, in := range intents {
		for _, a := range in.attempts {
			if a.Status >= 500 && (a.Replayed || a.State == "completed") {
				how := "its retry got it back marked Idempotent-Replayed: true"
				if !a.Replayed {
					how = "its key's lookup shows it stored as the answer"
				}
				return mistake("replay-500", fmt.Sprintf("%s: %s; %s", in.key, a.short(), how))
			}
		}
	}
	if len(stuck) > 0 {
		return mistake("no-lock-expiry", fmt.Sprintf("%d keys still in progress once the faults had stopped and every lock (TTL %s) could have expired, such as %s", len(stuck), ttl, stuck[0]))
	}
	for _, in := range intents {
		if !in.resolved && in.settleTries > 0 && allInProgress(in.settleLast) {
			return mistake("no-lock-expiry", fmt.Sprintf("%s: still in progress after the faults stopped and its lock (TTL %s) could have expired; %s", in.key, ttl, in.settleStory()))
		}
	}
	for _, in := range intents {
		if len(in.moved) > 1 || len(in.replies) < 2 {
			continue
		}
		first := in.replies[0]
		for _, a := range in.replies[1:] {
			if a.Status != first.Status || audit.Normalize(a.Body) != audit.Normalize(first.Body) {
				if !a.Replayed && a.Kind != "lookup" {
					continue // not a replay: another answer
				}
				return mistake("replay-differs", fmt.Sprintf("%s: the first answer was %s, %s", in.key, snippet(first), replayWords(a)))
			}
		}
	}
	seen := "no violation"
	if len(violations) > 0 {
		seen = violations[0]
		if r := []rune(seen); len(r) > 240 {
			seen = string(r[:240]) + "…"
		}
	}
	return Diagnosis{Why: "the violations fit none of the lesson's mistakes; seen: " + seen}
}

// pair says how the transfers of executions x and y (x's first, when the
// attempts tell) came about, with the line of evidence.
func pair(in *intent, x, y execution, ttl time.Duration, shared bool, died func(attempt) bool) (int, string) {
	switch {
	case x.a == nil && y.a == nil:
		return byUnknown, ""
	case x.a == nil || y.a == nil:
		if x.a != nil || x.t.ID > y.t.ID {
			return byUnknown, "" // the unseen one first, the seen one after
		}
		// x's attempt never heard of its transfer: did an attempt die
		// before y's ran it again?
		for _, d := range in.attempts {
			if d.Kind != "lookup" && (d.Network != "" || d.Status >= 500) && died(d) && d.sent <= y.a.sent && d != *y.a {
				return byDeath, fmt.Sprintf("transfer %d was made, but %s at replica %d %s, and %s at replica %d made transfer %d", x.t.ID, d.what(), d.Replica, d.fate(), y.a.what(), y.a.Replica, y.t.ID)
			}
		}
		return byUnknown, ""
	}
	a, b := x.a, y.a
	if b.sent < a.sent {
		return byUnknown, "" // each pair is looked at both ways; this is the other
	}
	both := fmt.Sprintf("%s at replica %d made transfer %d, %s at replica %d made transfer %d", a.what(), a.Replica, x.t.ID, b.what(), b.Replica, y.t.ID)
	switch {
	case a.Replica == b.Replica && a.Life < b.Life:
		return byRestart, fmt.Sprintf("%s at replica %d made transfer %d; after the replica was killed and restarted, %s there made transfer %d", a.what(), a.Replica, x.t.ID, b.what(), y.t.ID)
	case a.Replica != b.Replica && !shared:
		return byOther, both + ", and no replica ever replayed a key the other had run"
	case b.sent < a.done && b.sent-a.sent >= ttl:
		return byTakeover, fmt.Sprintf("replica %d was still working on it when %s, %s later (after the lock TTL of %s), ran it at replica %d: transfers %d and %d", a.Replica, b.what(), (b.sent - a.sent).Round(10*time.Millisecond), ttl, b.Replica, x.t.ID, y.t.ID)
	case b.sent < a.done && a.Kind == "concurrent" && b.Kind == "concurrent":
		return byConcurrent, fmt.Sprintf("two copies sent at once, to replicas %d and %d, both ran: transfers %d and %d, though the server keeps keys (other copies were replayed or answered 409)", a.Replica, b.Replica, x.t.ID, y.t.ID)
	case b.sent < a.done:
		return byEarly, fmt.Sprintf("%s, %s after the first attempt and before its lock TTL of %s, while it still worked: %s", b.what(), (b.sent - a.sent).Round(10*time.Millisecond), ttl, both)
	case a.Replica == b.Replica:
		return bySequence, fmt.Sprintf("%s; replica %d had answered the first before the second came, and ran it again", both, a.Replica)
	}
	return byUnknown, ""
}

// firstAnswer is the intent's first definitive answer, if it had one.
func firstAnswer(in *intent) *attempt {
	if len(in.replies) == 0 {
		return nil
	}
	return &in.replies[0]
}

func allInProgress(as []attempt) bool {
	for _, a := range as {
		if a.Status != 409 && a.State != "in_progress" {
			return false
		}
	}
	return len(as) > 0
}

// what an attempt was, in a few words.
func (a attempt) what() string {
	switch a.Kind {
	case "send":
		return "its first send"
	case "retry":
		return "a retry"
	case "resume":
		return "the resend of a client that had crashed"
	case "duplicate":
		return "a duplicate sent after the answer"
	case "concurrent":
		return "one of two copies sent at once"
	case "settle":
		return "a resend after the faults stopped"
	case "pause":
		return "a copy of the paused request"
	case "kill":
		return "the request the kill caught"
	case "session-kill":
		return "the request whose session was ended"
	}
	return a.Kind
}

// fate is what became of an attempt that died.
func (a attempt) fate() string {
	if a.Network != "" {
		switch a.Kind {
		case "kill":
			return "got no answer (the replica was killed before it stored its answer)"
		}
		return "got no answer"
	}
	return fmt.Sprintf("got %d", a.Status)
}

func snippet(a attempt) string {
	b := a.Body
	if r := []rune(b); len(r) > 120 {
		b = string(r[:120]) + "…"
	}
	return strings.TrimSpace(fmt.Sprintf("%d %s", a.Status, b))
}

func replayWords(a attempt) string {
	if a.Kind == "lookup" {
		return "the answer stored under its key is " + snippet(a)
	}
	return "a replay (Idempotent-Replayed: true) answered " + snippet(a)
}
