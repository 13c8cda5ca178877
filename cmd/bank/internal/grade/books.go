package grade

import (
	"github.com/zudojs/bank/bank/audit"
)

// count is how many transfers match an intent's accounts and amount.
func (t *trial) count(from, to, kobo int64) int {
	var n int
	t.must(t.bank.QueryRow(t.ctx, "SELECT count(*) FROM transfers WHERE from_account = $1 AND to_account = $2 AND amount_kobo = $3", from, to, kobo).Scan(&n))
	return n
}

// noteBank notes the bank as the grader read it, in the lesson's
// balances line (audit's), and draws it.
func (t *trial) noteBank(when string, b audit.Books) {
	t.note("%s: %s", when, b.Line())
	t.rec.Event("balances", b.Line())
}

// invariants are checked from the database at the end of every check,
// by the lab's one set of checks (bank/audit): the total is conserved,
// each balance is the seed plus the ledger, and each intent moved money
// as many times as it should (once, or never).
//
// A check that did not apply, or could not tell, may have left a request
// unfinished: then only the books are checked (conserved, agreeing),
// not how many times each intent moved money.
func (t *trial) invariants(partial bool) {
	books, err := audit.Read(t.ctx, t.bank, nil)
	t.must(err)
	t.noteBank("after", books)
	intents := make([]audit.Intent, len(t.intents))
	for i, in := range t.intents {
		intents[i] = audit.Intent{Label: in.label, From: in.from, To: in.to, Kobo: in.kobo, Want: in.want}
	}
	checks := []audit.Finding{books.Conserved(), books.LedgerAgrees()}
	if !partial {
		checks = append(checks, books.OnceEach(intents, !t.ownCount))
	}
	for _, f := range audit.Broken(checks...) {
		for _, e := range f.Evidence {
			t.note("%s", e)
		}
		t.fail("%s: %s", f.Check, f.Detail)
	}
}
