package grade

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/audit"
)

// count is how many transfers match an intent's accounts and amount.
func (t *trial) count(from, to, kobo int64) int {
	var n int
	t.must(t.bank.QueryRow(t.ctx, "SELECT count(*) FROM transfers WHERE from_account = $1 AND to_account = $2 AND amount_kobo = $3", from, to, kobo).Scan(&n))
	return n
}

// snapshot is the bank as the grader reads it.
type snapshot struct {
	balances  [3]int64 // Ada, Bola, Chidi
	total     int64
	transfers int
}

func readBank(ctx context.Context, db *pgxpool.Pool) (snapshot, error) {
	var s snapshot
	rows, err := db.Query(ctx, "SELECT id, balance_kobo FROM accounts ORDER BY id")
	if err != nil {
		return s, fmt.Errorf("reading the balances: %w", err)
	}
	var id, kobo int64
	_, err = pgx.ForEachRow(rows, []any{&id, &kobo}, func() error {
		if id >= 1 && id <= 3 {
			s.balances[id-1] = kobo
		}
		s.total += kobo
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("reading the balances: %w", err)
	}
	if err := db.QueryRow(ctx, "SELECT count(*) FROM transfers").Scan(&s.transfers); err != nil {
		return s, fmt.Errorf("counting the transfers: %w", err)
	}
	return s, nil
}

// noteBank notes the bank as the grader read it, and draws it.
func (t *trial) noteBank(when string, s snapshot) {
	t.note("%s: %s", when, s.line())
	t.rec.Event("balances", s.line())
}

func (s snapshot) line() string {
	return fmt.Sprintf("Ada %s, Bola %s, Chidi %s | total %s | transfers %d",
		bank.Naira(s.balances[0]), bank.Naira(s.balances[1]), bank.Naira(s.balances[2]), bank.Naira(s.total), s.transfers)
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
	after, err := readBank(t.ctx, t.bank)
	t.must(err)
	t.noteBank("after", after)
	books, err := audit.Read(t.ctx, t.bank, nil)
	t.must(err)
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
