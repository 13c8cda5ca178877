package hookgrade

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// credits are the deposits rows of each payment, and the accounts'
// balances, as the database holds them now.
type credits struct {
	rows     map[string]int  // deposits rows, by source (the payment)
	balances map[int64]int64 // balance_kobo, by account
	line     string          // the balances, as the lesson writes them
}

// readCredits reads the deposits and the balances.
func (t *trial) readCredits() credits {
	c := credits{rows: map[string]int{}, balances: map[int64]int64{}}
	rows, err := t.db.Query(t.ctx, "SELECT source, count(*) FROM deposits GROUP BY source")
	t.Must(err)
	for rows.Next() {
		var src string
		var n int
		t.Must(rows.Scan(&src, &n))
		c.rows[src] = n
	}
	t.Must(rows.Err())
	rows, err = t.db.Query(t.ctx, "SELECT id, balance_kobo FROM accounts ORDER BY id")
	t.Must(err)
	var parts []string
	for rows.Next() {
		var id, bal int64
		t.Must(rows.Scan(&id, &bal))
		c.balances[id] = bal
		parts = append(parts, fmt.Sprintf("account %d %s", id, bank.Naira(bal)))
	}
	t.Must(rows.Err())
	c.line = strings.Join(parts, ", ")
	return c
}

// quietBound is how long the consumer's database must stay still (no
// session of its at work) before its books are read, stretched on a busy
// machine; stillBound bounds the wait.
const (
	quietFor   = 300 * time.Millisecond
	stillBound = 10 * time.Second
)

// quiet waits until no session of the consumer's is at work in its
// database (running a statement, or in a transaction) for quietFor: a
// delivery the provider gave up on may still be running.
func (t *trial) quiet() {
	deadline, since := pace.After(stillBound), time.Now()
	for !deadline.Passed() {
		if t.busy() > 0 {
			since = time.Now()
		} else if time.Since(since) >= pace.Stretch(quietFor) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// books checks every payment delivered in the check: credited as many
// times as it must be (t.want), in deposits and in the balances. twice is
// the mistake a payment credited more than once fits, in this check.
func (t *trial) books(twice *mistakes.Mistake) {
	t.quiet()
	c := t.readCredits()
	t.Note("the bank after: %s; deposits %s", c.line, depositsLine(c.rows))
	wantBal := map[int64]int64{}
	for _, a := range bank.Seed {
		wantBal[int64(a.ID)] = a.BalanceKobo
	}
	for _, p := range slices.Sorted(maps.Keys(t.want)) {
		e := t.eventOf(p)
		got, want := c.rows[p], t.want[p]
		wantBal[e.Account] += int64(want) * e.Kobo
		switch {
		case got > want && want > 0:
			t.Fail(twice, "payment %s (%s) was credited %d times: it is one payment", p, bank.Naira(e.Kobo), got)
		case got > want:
			t.Fail(twice, "payment %s was credited, and it must not have been", p)
		case got < want:
			t.Fail(nil, "payment %s (%s to account %d) was never credited: no deposits row has source %s", p, bank.Naira(e.Kobo), e.Account, p)
		}
	}
	for id, want := range wantBal {
		if c.balances[id] != want {
			t.Fail(nil, "account %d holds %s, but its seed and its deposits make %s: the credit and its deposits row must be one transaction", id, bank.Naira(c.balances[id]), bank.Naira(want))
		}
	}
}

// eventOf is one event of payment p.
func (t *trial) eventOf(p string) event {
	for _, id := range slices.Sorted(maps.Keys(t.events)) {
		if t.events[id].Payment == p {
			return t.events[id]
		}
	}
	return event{Payment: p}
}

func depositsLine(rows map[string]int) string {
	if len(rows) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(rows)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", p, rows[p]))
	}
	return strings.Join(parts, ", ")
}

// recordedWith checks, from the witness, that the transaction that
// inserted e's payment's deposits row also wrote a row (outside deposits
// and accounts) holding e's id: the event recorded with its credit.
func (t *trial) recordedWith(e event) {
	if !t.witness {
		t.Unknown("the database has no witness, so the grader cannot see which transaction recorded the event")
	}
	writes, err := witness.Since(t.ctx, t.db, 0)
	t.Must(err)
	var credit *witness.Write
	for i, w := range writes {
		if w.Op == "INSERT" && isTable(w.Table, "deposits") && strings.Contains(w.New, `"source": "`+e.Payment+`"`) {
			credit = &writes[i]
			break
		}
	}
	if credit == nil {
		t.Fail(nil, "no deposits row for %s was written", e.Payment)
	}
	var elsewhere []string
	for _, w := range writes {
		if isTable(w.Table, "deposits") || isTable(w.Table, "accounts") || !w.Names(e.ID) {
			continue
		}
		if w.Xact == credit.Xact {
			t.Note("the event %s was recorded (%s into %s) in the credit's own transaction", e.ID, strings.ToLower(w.Op), w.Table)
			return
		}
		elsewhere = append(elsewhere, fmt.Sprintf("%s into %s in transaction %d", strings.ToLower(w.Op), w.Table, w.Xid()))
	}
	if len(elsewhere) > 0 {
		t.Fail(&mOutside, "the credit of %s was written in transaction %d, the record of its event %s in another (%s): a crash between the two loses the credit for good, or credits it twice", e.Payment, credit.Xid(), e.ID, strings.Join(elsewhere, "; "))
	}
	t.Fail(&mNoEventDedupe, "no row the consumer wrote holds the event's id %s: it keeps no record of the events it processed, so nothing stops a second delivery of one from crediting again", e.ID)
}

// isTable reports whether the witness's table name (schema.table) is name.
func isTable(qualified, name string) bool {
	_, tbl, _ := strings.Cut(qualified, ".")
	return strings.Trim(tbl, `"`) == name
}

// gate shuts the witness's gate: every transaction of the consumer is held
// at its first write, until a Step or Open.
func (t *trial) gate() *witness.Gate {
	if !t.witness {
		t.Unknown("the database has no witness, so the grader cannot hold the consumer's transactions")
	}
	g, err := witness.Close(t.ctx, t.db)
	t.Must(err)
	return g
}

// heldBound is how long the grader waits for a consumer to write, or to
// answer (stretched on a busy machine).
const heldBound = 10 * time.Second

// waitHeld waits until a transaction of the consumer is held at the gate
// (true), or p is over and the consumer's database has been still since
// (false): a consumer that answers first may write after.
func (t *trial) waitHeld(g *witness.Gate, p *pending) bool {
	deadline, still := pace.After(heldBound), time.Time{}
	for {
		held, err := g.Waiting(t.ctx, t.db)
		t.Must(err)
		switch {
		case len(held) > 0:
			return true
		case p.answered() && t.busy() == 0:
			if still.IsZero() {
				still = time.Now()
			}
			if time.Since(still) >= pace.Stretch(quietFor) {
				return false
			}
		case p.answered():
			still = time.Time{}
		case deadline.Passed():
			g.Open(t.ctx)
			t.Unknown("the delivery of %s was neither answered nor written within %s", p.d.Event.ID, heldBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// busy counts the consumer's sessions at work in its database: running a
// statement, or in a transaction.
func (t *trial) busy() int {
	var n int
	t.Must(t.db.QueryRow(t.ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
		  AND state IS DISTINCT FROM 'idle'`).Scan(&n))
	return n
}

// waiting counts the sessions of the consumer's database that wait on a
// lock: held at the gate, or behind another's row or key.
func (t *trial) waiting() int {
	var n int
	t.Must(t.db.QueryRow(t.ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n))
	return n
}

// step lets the transactions held at the gate go on, and waits until the
// gate is shut again behind them.
func (t *trial) step(g *witness.Gate) {
	shut, err := g.Let(t.ctx, pace.Stretch(heldBound))
	t.Must(err)
	if !shut {
		g.Open(t.ctx)
		t.Unknown("a transaction of the consumer's let through the gate did not end within %s", heldBound)
	}
}

// endHeld ends the sessions held at the gate, as a crash does.
func (t *trial) endHeld(g *witness.Gate) { t.Must(g.EndHeld(t.ctx, t.db)) }
