package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// check reads the final database and the journal and verifies every
// promise. Each violation names its key.
func (r *run) check(ctx context.Context, total0 int64) Report {
	rep := Report{Seed: r.cfg.Seed, Intents: len(r.intents), Checks: map[string]int{}}
	bad := map[string]bool{}
	fail := func(key, format string, args ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, args...))
		if key != "" {
			bad[key] = true
		}
	}
	pass := func(check string) { rep.Checks[check]++ }

	var total int64
	var negative int
	if err := r.cfg.DB.QueryRow(ctx, "SELECT sum(balance_kobo), count(*) FILTER (WHERE balance_kobo < 0) FROM accounts").Scan(&total, &negative); err != nil {
		fail("", "reading balances: %v", err)
		return rep
	}
	if total == total0 && negative == 0 {
		pass("money conserved, no negative balance")
	} else {
		fail("", "money: total %d before, %d after; %d negative balances", total0, total, negative)
	}

	// Transfers per intent, by its unique amount.
	count := map[int64]int{}
	ids := map[int64][]int64{}
	rows, err := r.cfg.DB.Query(ctx, "SELECT id, amount_kobo FROM transfers ORDER BY id")
	if err != nil {
		fail("", "reading transfers: %v", err)
		return rep
	}
	for rows.Next() {
		var id, amount int64
		if err := rows.Scan(&id, &amount); err != nil {
			rows.Close()
			fail("", "reading transfers: %v", err)
			return rep
		}
		count[amount]++
		ids[amount] = append(ids[amount], id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		fail("", "reading transfers: %v", err)
		return rep
	}
	if !r.cfg.Opaque { // an opaque server's keys are its own business
		var stuck int
		switch err := r.cfg.DB.QueryRow(ctx, "SELECT count(*) FROM idempotency_keys WHERE status = 'in_progress'").Scan(&stuck); {
		case err != nil:
			fail("", "reading the keys left in progress: %v", err)
		case stuck == 0:
			pass("no key left in progress")
		default:
			fail("", "%d keys still in progress after the faults stopped", stuck)
		}
	}

	mine := map[int64]bool{}
	for _, in := range r.intents {
		mine[in.amount] = true
	}
	// Money moved twice is what this lab is about: those lines come first,
	// then transfers nobody asked for (a changed body that was executed),
	// in order of amount, then the rest.
	for _, in := range r.intents {
		if n := count[in.amount]; n > 1 {
			fail(in.key, "%s moved money %d times (transfers %v)", in.key, n, ids[in.amount])
		}
	}
	amounts := make([]int64, 0, len(count))
	for amount := range count {
		amounts = append(amounts, amount)
	}
	slices.Sort(amounts)
	for _, amount := range amounts {
		if !mine[amount] {
			fail("", "%d transfers of %d kobo belong to no intent", count[amount], amount)
		}
	}
	for _, in := range r.intents {
		n := count[in.amount]
		if n > 1 {
			continue
		}
		pass("at most one transfer per key")
		acked := false
		var first []byte
		same := true
		for _, a := range in.replies {
			if a.Kind == "changed-body" {
				fail(in.key, "%s: the same key with a changed body got %d, not a refusal (422): %s", in.key, a.Status, a.Body)
				continue
			}
			if a.Status/100 == 2 {
				acked = true
			}
			norm := normalize(a.Body)
			if first == nil {
				first = norm
			} else if string(norm) != string(first) {
				same = false
			}
		}
		if same {
			pass("every definitive reply identical")
		} else {
			fail(in.key, "%s got different definitive replies", in.key)
		}
		if acked && n != 1 {
			fail(in.key, "%s was acknowledged with 2xx but has %d transfers", in.key, n)
		} else if acked {
			pass("every acknowledged transfer present")
			var receipt struct {
				TransferID int64 `json:"transferId"`
				AmountKobo int64 `json:"amountKobo"`
			}
			json.Unmarshal(first, &receipt)
			if receipt.TransferID == ids[in.amount][0] && receipt.AmountKobo == in.amount {
				pass("reply matches the transfer read back")
			} else {
				fail(in.key, "%s: reply %s, transfer read back %v", in.key, first, ids[in.amount])
			}
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
	for _, k := range r.late5xx {
		fail(k, "%s got a 5xx after the faults had stopped", k)
	}
	for k := range bad {
		rep.Offending = append(rep.Offending, k)
	}
	sort.Strings(rep.Offending)
	return rep
}

// normalize re-encodes a JSON body so key order and spacing do not count.
func normalize(body string) []byte {
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return []byte(body)
	}
	b, _ := json.Marshal(v)
	return b
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
