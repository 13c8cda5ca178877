package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank/audit"
)

// check reads the final database and the journal and verifies every
// promise, with the lab's one set of checks (bank/audit). Each violation
// names its key.
//
// It is long because it is every promise of the run, one after the other,
// each naming the keys that broke it.
func (r *run) check(ctx context.Context, opening map[int64]int64) Report {
	rep := Report{Seed: r.cfg.Seed, Intents: len(r.intents), Checks: map[string]int{}}
	bad := map[string]bool{}
	fail := func(key, format string, args ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, args...))
		if key != "" {
			bad[key] = true
		}
	}
	pass := func(check string) { rep.Checks[check]++ }

	books, err := audit.Read(ctx, r.cfg.DB, opening)
	if err != nil {
		fail("", "reading the bank: %v", err)
		return rep
	}
	r.books = books
	for _, f := range []audit.Finding{books.Conserved(), books.LedgerAgrees()} {
		if f.Holds {
			pass(f.Check)
		} else {
			fail("", "%s: %s", f.Check, f.Detail)
		}
	}
	if !r.cfg.Opaque { // an opaque server's keys are its own business
		rows, err := r.cfg.DB.Query(ctx, "SELECT key FROM idempotency_keys WHERE status = 'in_progress' ORDER BY key")
		var stuck []string
		if err == nil {
			stuck, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		switch {
		case err != nil:
			fail("", "reading the keys left in progress: %v", err)
		case len(stuck) == 0:
			pass("no key left in progress")
		default:
			r.stuck = stuck
			for _, k := range stuck {
				bad[k] = true
			}
			fail("", "%d keys still in progress after the faults stopped: %s", len(stuck), strings.Join(stuck, ", "))
		}
	}

	intents := make([]audit.Intent, len(r.intents))
	for i, in := range r.intents {
		intents[i] = audit.Intent{Label: in.key, From: int64(in.from), To: int64(in.to), Kobo: in.amount, Want: 1}
	}
	// Money moved twice is what this lab is about: those lines come first,
	// then transfers nobody asked for (a changed body that was executed),
	// then the rest.
	for i, in := range r.intents {
		in.moved = books.Moved(intents[i])
	}
	for i, in := range r.intents {
		if moved := books.Moved(intents[i]); len(moved) > 1 {
			fail(in.key, "%s moved money %d times (transfers %v)", in.key, len(moved), transferIDs(moved))
		}
	}
	mine := 0
	for _, in := range intents {
		mine += len(books.Moved(in))
	}
	if stray := len(books.Transfers) - r.before - mine; stray > 0 {
		fail("", "%d transfers belong to no intent", stray)
	}
	for i, in := range r.intents {
		if len(books.Moved(intents[i])) > 1 {
			continue
		}
		pass("at most one transfer per key")
		for _, a := range in.attempts {
			// Any refusal will do (the lesson's is 422), or a 409 while
			// the first is in progress; an answer that accepts it is wrong.
			if a.Kind == "changed-body" && (a.Status/100 == 2 || a.Status/100 == 3) {
				fail(in.key, "%s: the same key with a changed body got %d, not a refusal (422): %s", in.key, a.Status, a.Body)
			}
		}
		var replies []audit.Reply
		for _, a := range in.replies {
			replies = append(replies, a.reply())
		}
		if f := books.Answered(intents[i], replies); f.Holds {
			pass("replies per key identical, 2xx in ledger")
		} else {
			fail(in.key, "%s", f.Detail)
		}
		if !in.resolved {
			fail(in.key, "%s did not resolve after the faults stopped: %s", in.key, in.settleStory())
		} else {
			pass("every intent resolved")
		}
	}
	if len(r.late5xx) == 0 {
		pass("no 5xx after the faults stopped")
	}
	late := slices.Clone(r.late5xx) // in the order the settlers met them: sorted, each once
	slices.Sort(late)
	for _, k := range slices.Compact(late) {
		fail(k, "%s got a 5xx after the faults had stopped", k)
	}
	for k := range bad {
		rep.Offending = append(rep.Offending, k)
	}
	sort.Strings(rep.Offending)
	return rep
}

// reply is an attempt as the audit compares it: its status, its body,
// and the transfer a 2xx names, or what keeps the body from naming it (a
// missing field is not a zero).
func (a attempt) reply() audit.Reply {
	rp := audit.Reply{Status: a.Status, Body: a.Body}
	if a.Status/100 != 2 {
		return rp
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a.Body), &fields); err != nil || fields == nil {
		rp.Unreadable = "is not a JSON object"
		return rp
	}
	var problems []string
	for _, f := range []struct {
		name string
		v    *int64
	}{{"transferId", &rp.TransferID}, {"amountKobo", &rp.Kobo}} {
		raw, ok := fields[f.name]
		switch {
		case !ok:
			problems = append(problems, "lacks the field "+f.name)
		case json.Unmarshal(raw, f.v) != nil:
			problems = append(problems, fmt.Sprintf("has %s %s, not a whole number", f.name, raw))
		}
	}
	rp.Unreadable = strings.Join(problems, " and ")
	return rp
}

func transferIDs(ts []audit.Transfer) []int64 {
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}

// settleStory says what the settle phase did with an intent that never
// resolved: how often it was sent again (or looked up), and the last
// answers, so that "did not resolve" comes with its evidence.
func (in *intent) settleStory() string {
	if in.settleTries == 0 {
		return "the settle phase never got to it"
	}
	var last []string
	for _, a := range in.settleLast {
		last = append(last, a.short())
	}
	return fmt.Sprintf("settling tried it %s, and the last answers were %s", times(in.settleTries), strings.Join(last, ", "))
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// short is an attempt in a few words: its kind when it was not a plain
// send, its status (or "no answer") and the error code of its body.
func (a attempt) short() string {
	s := strconv.Itoa(a.Status)
	if a.Status == 0 {
		s = "no answer"
	}
	if a.Kind == "lookup" {
		s = "lookup " + s
		if strings.Contains(a.Body, "in_progress") {
			s += " in_progress"
		}
		return s
	}
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(a.Body), &body) == nil && body.Error != "" {
		s += " " + body.Error
	}
	return s
}
