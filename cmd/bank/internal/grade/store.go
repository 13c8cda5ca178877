package grade

import (
	"fmt"
	"strings"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/witness"
)

// crashOnStore checks the lesson's rule 4, the answer stored in the
// transfer's own transaction, for any design of key store, with
// PostgreSQL as the witness (package witness), in two parts.
//
// First a plain transfer, and the witness's record of it: the top-level
// transaction that inserted the transfers row (a savepoint inside it
// counts as it) must also have written the key's state: a row that names
// the key, or the row the key's claim wrote, or the transfers row itself
// carrying the key (the outline's ledger). What the server writes later
// (a last_used_at, a final phase) does not undo that.
//
// Then the crash the rule is about, provoked: the grader holds the
// server's work at the witness's gate one transaction at a time, and
// kills the server at its first write after the transfer's transaction
// has committed, where a server that stores its answer in a second
// transaction is storing it. The retry must not move money again.
func crashOnStore(t *trial) {
	if !t.witnessed() {
		t.unknown("the grader cannot watch what the server writes here (%s), so it cannot tell in which transaction the answer is stored; grade on the lab's own PostgreSQL (without --database-url)", witness.ErrUnavailable)
		return
	}
	t.keyStateWithTransfer()
	t.killAfterCommit()
}

// keyStateWithTransfer makes a plain transfer and reads, from the
// witness, what the transaction that inserted it wrote besides.
func (t *trial) keyStateWithTransfer() {
	const key = "grade-storexmin-001"
	t.intent("Ada's ₦100 to Bola", 1, 2, 10_000, 1)
	mark := t.lastWrite()
	got := t.sendFirst(request{user: "ada", key: key, body: body(1, 2, 10_000)})
	if got.Status != 201 {
		t.fail("a plain transfer got %s, not 201", got.short())
		return
	}
	t.quiet(5 * time.Second)
	writes := t.writesSince(mark)
	x, ok := transferRow(writes, 1, 2, 10_000)
	if !ok {
		t.fail("the 201 was sent, but the witness saw no transfers row of ₦100 from account 1 to 2 inserted")
		return
	}
	t.note("the witness: the transfer was inserted by transaction %d, which wrote: %s", x.Xact, summary(writes, x.Xact))
	for _, xact := range transactions(writes) {
		if xact != x.Xact {
			t.note("the witness: transaction %d wrote: %s", xact, summary(writes, xact))
		}
	}
	if x.Names(key) {
		t.note("the transfers row itself carries the key: %s", shortRow(x.New))
		return
	}
	for _, w := range writes {
		if w.Xact == x.Xact && !lessonTable(w.Table) && w.Names(key) {
			t.note("the transfer's transaction (%d) also wrote the key's row of %s (%s): %s", x.Xact, w.Table, w.Op, shortRow(w.Row()))
			return
		}
	}
	// A key table keyed by something else than the key (its hash, say):
	// the transfer's transaction updates the very row the claim wrote.
	for _, w := range writes {
		if w.Xact != x.Xact || lessonTable(w.Table) || w.Op == "INSERT" {
			continue
		}
		for _, c := range writes {
			if c.Seq < w.Seq && c.Xact != x.Xact && c.Table == w.Table && sameJSON(c.New, w.Old) {
				t.note("the transfer's transaction (%d) %s the row of %s that transaction %d wrote for the key's claim: %s", x.Xact, strings.ToLower(w.Op)+"d", w.Table, c.Xact, shortRow(w.Row()))
				return
			}
		}
	}
	var others []string
	for _, w := range writes {
		if w.Names(key) && w.Xact != x.Xact {
			when := "before"
			if w.Seq > x.Seq {
				when = "after"
			}
			others = append(others, fmt.Sprintf("%s %s in transaction %d, %s the transfer's", w.Table, w.Op, w.Xact, when))
		}
	}
	switch {
	case len(others) > 0:
		t.failAs(mSecondTransaction, "the transaction that inserted the transfer (%d) wrote nothing of the key's; its rows were written by other transactions (%s): the answer is stored outside the transfer's transaction, so a crash between the two commits leaves the retry to transfer again", x.Xact, strings.Join(others, "; "))
	case len(t.ownTables()) == 0:
		t.failAs(mSecondTransaction, "the server keeps nothing in the database (no table of its own), and the transfers row does not carry the key: its answer is kept outside PostgreSQL, or not at all, so it cannot be stored in the transfer's transaction (%d): a crash after that commit leaves the retry to transfer again", x.Xact)
	default:
		t.failAs(mSecondTransaction, "no row the server wrote names the key %s, and the transfer's transaction (%d) touched no row its claim wrote: the answer is kept outside PostgreSQL, or not at all, so a crash after the transfer's commit leaves the retry to transfer again", key, x.Xact)
	}
}

// killAfterCommit holds the server's work at the witness's gate, one
// transaction at a time, and kills the server at its first write after
// its transfer's transaction committed; then the retry.
func (t *trial) killAfterCommit() {
	r := t.adaPaysBola("grade-storecrash-01")
	gate, err := witness.Close(t.ctx, t.db)
	t.must(err)
	defer gate.Open(t.ctx)
	t.note("the grader holds each of the server's transactions at its first write (the witness's gate), and lets it go on until the transfer has committed")
	t.rec.Arrow(record.ActorApp, record.ActorDB, "hold each transaction at its first write (the witness's gate)", "")
	p := t.async(r)
	claimBy := time.Now() // at the latest: held at the gate, nothing commits without the grader
	var held []witness.Waiter
	var at *witness.Waiter // the write the server is killed at
	for deadline := time.Now().Add(t.bound(20 * time.Second)); at == nil; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			gate.Open(t.ctx)
			got, _ := t.await(p, 10*time.Second)
			t.unknown("the transfer had not committed %s after it was sent (the last answer: %s): too slow to tell", t.bound(20*time.Second), got.short())
			return
		}
		shut, err := gate.Shut()
		t.must(err)
		if !shut {
			continue
		}
		waiting, err := gate.Waiting(t.ctx, t.db)
		t.must(err)
		if len(waiting) == 0 {
			if p.answered() && !t.serverBusy() {
				break
			}
			continue
		}
		if t.count(1, 2, tenThousand) > 0 {
			at = &waiting[0]
			break
		}
		held = append(held, waiting...)
		gate.Step(t.ctx)
	}
	for _, w := range held {
		t.note("held, then let go: transaction %d at %s", w.Xid, oneLine(w.Query))
	}
	if at == nil {
		gate.Open(t.ctx)
		got, _ := t.await(p, 10*time.Second)
		t.quiet(5 * time.Second)
		t.note("the transfer committed and the server answered %s without writing anything after that commit", got.short())
		t.passed("the answer is stored in the transfer's own transaction, and nothing is written after it commits: there is no second commit to crash between")
		return
	}
	t.rec.Arrow(serverName(0), record.ActorDB, "after the transfer's commit, writes again: held", "in-progress")
	t.kill(0)
	t.endServerSessions()
	gate.Open(t.ctx)
	t.note("the transfer had committed; the server's next transaction (%d) was held at its first write (%s), and the server was killed there (SIGKILL), its sessions ending with it", at.Xid, oneLine(at.Query))
	t.await(p, 10*time.Second)
	t.must(t.restart(0))
	t.note("the server is started again")
	got, ok := t.retry(r, claimBy, "the crash")
	n := t.count(1, 2, tenThousand)
	switch {
	case n > 1:
		t.failAs(mSecondTransaction, "killed after its transfer's transaction had committed and before its next one did, the server had not stored the answer with the transfer: the retry transferred again, and money moved %s", bank.Times(n))
	case !ok:
	case got.Status != 201:
		t.fail("the retry after the crash got %s, not the transfer's 201", got.short())
	default:
		t.receipt(got, 1, 2, tenThousand, mSecondTransaction)
		t.passed("killed at its first write after the transfer's commit, the server had already stored the answer with the transfer: the retry got the transfer's 201; money moved once")
	}
}
