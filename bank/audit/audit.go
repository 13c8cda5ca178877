// Package audit is the one set of checks every judge of the lab uses on
// a bank after a run: the scenarios, bank torture, bank grade and the
// exercises. Each check states the lesson's promise, says in the
// lesson's words whether it held, and carries its evidence.
//
// Reading and judging are apart: Read takes the books from the database
// (every error returned, none swallowed); the checks are pure functions
// of the books and of what the run asked for, so they are tested on
// histories made by hand, ones that hold and ones that must not.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
)

// Books are what the checks read of a bank.
type Books struct {
	Accounts  []Account  // by id
	Transfers []Transfer // by id
	Flows     []Flow     // money across the bank's edge, where the bank has such tables
}

// Account is one account as it stands, and as it opened.
type Account struct {
	ID      int64
	Holder  string // first name
	Balance int64  // kobo
	Opening int64  // kobo, the seed's
}

// Transfer is one row of the ledger.
type Transfer struct {
	ID, From, To, Kobo int64
}

// Flow is money that came in (a deposit, Kobo > 0) or went out (a payout,
// Kobo < 0) of an account, with a record.
type Flow struct {
	Account, Kobo int64
}

// Total is the money in the bank now.
func (b Books) Total() int64 {
	var total int64
	for _, a := range b.Accounts {
		total += a.Balance
	}
	return total
}

// Line is the lesson's balances line for these books, as bank.Snapshot
// writes it: Ada ₦50,000, Bola ₦5,000, Chidi ₦20,000 | total ₦75,000 |
// transfers 0.
func (b Books) Line() string {
	s := bank.Snapshot{Total: b.Total(), Transfers: len(b.Transfers)}
	for _, a := range b.Accounts {
		s.Holders = append(s.Holders, a.Holder)
		s.Balances = append(s.Balances, a.Balance)
	}
	return s.Line()
}

// Opening is the money the bank opened with, plus what crossed its edge.
func (b Books) Opening() (opening, in, out int64) {
	for _, a := range b.Accounts {
		opening += a.Opening
	}
	for _, f := range b.Flows {
		if f.Kobo > 0 {
			in += f.Kobo
		} else {
			out -= f.Kobo
		}
	}
	return opening, in, out
}

// AsOpening is what each account must have opened with, for these books
// to agree with their ledger: its balance, less its transfers and flows.
// A run that starts on a bank someone else made takes its books first,
// and audits the end against these openings.
func (b Books) AsOpening() map[int64]int64 {
	opening := map[int64]int64{}
	for _, a := range b.Accounts {
		opening[a.ID] = a.Balance
	}
	for _, t := range b.Transfers {
		opening[t.To] -= t.Kobo
		opening[t.From] += t.Kobo
	}
	for _, f := range b.Flows {
		opening[f.Account] -= f.Kobo
	}
	return opening
}

// Read takes the books. Accounts the seed does not name open with what
// opening says (nil: with nothing).
func Read(ctx context.Context, db bank.DB, opening map[int64]int64) (Books, error) {
	var b Books
	seed := map[int64]int64{}
	for _, a := range bank.Seed {
		seed[a.ID] = a.BalanceKobo
	}
	for id, kobo := range opening {
		seed[id] = kobo
	}
	rows, err := db.Query(ctx, "SELECT id, split_part(holder, ' ', 1), balance_kobo FROM accounts ORDER BY id")
	if err != nil {
		return b, fmt.Errorf("reading the accounts: %w", err)
	}
	var a Account
	if _, err := pgx.ForEachRow(rows, []any{&a.ID, &a.Holder, &a.Balance}, func() error {
		a.Opening = seed[a.ID]
		b.Accounts = append(b.Accounts, a)
		return nil
	}); err != nil {
		return b, fmt.Errorf("reading the accounts: %w", err)
	}
	rows, err = db.Query(ctx, "SELECT id, from_account, to_account, amount_kobo FROM transfers ORDER BY id")
	if err != nil {
		return b, fmt.Errorf("reading the transfers: %w", err)
	}
	var t Transfer
	if _, err := pgx.ForEachRow(rows, []any{&t.ID, &t.From, &t.To, &t.Kobo}, func() error {
		b.Transfers = append(b.Transfers, t)
		return nil
	}); err != nil {
		return b, fmt.Errorf("reading the transfers: %w", err)
	}
	// Deposits and payouts, where the bank has them (the lab's own
	// schema does; the lesson's, which bank grade hands out, does not).
	var flows bool
	if err := db.QueryRow(ctx, "SELECT to_regclass('deposits') IS NOT NULL AND to_regclass('payouts') IS NOT NULL").Scan(&flows); err != nil {
		return b, fmt.Errorf("looking for deposits and payouts: %w", err)
	}
	if !flows {
		return b, nil
	}
	rows, err = db.Query(ctx, "SELECT account_id, amount_kobo FROM deposits UNION ALL SELECT account_id, -amount_kobo FROM payouts ORDER BY 1, 2")
	if err != nil {
		return b, fmt.Errorf("reading deposits and payouts: %w", err)
	}
	var f Flow
	if _, err := pgx.ForEachRow(rows, []any{&f.Account, &f.Kobo}, func() error {
		b.Flows = append(b.Flows, f)
		return nil
	}); err != nil {
		return b, fmt.Errorf("reading deposits and payouts: %w", err)
	}
	return b, nil
}

// Finding is one check's result.
type Finding struct {
	Check    string   // the promise, in the lesson's words
	Holds    bool     // whether it held
	Detail   string   // what broke it, in the lesson's words ("" when it held, or a note)
	Evidence []string // the rows and replies it rests on, where it broke
}

func (f Finding) String() string {
	state := "holds"
	if !f.Holds {
		state = "BROKEN"
	}
	if f.Detail == "" {
		return f.Check + ": " + state
	}
	return f.Check + ": " + state + ": " + f.Detail
}

// Conserved: money moves, it is never made or lost. The total must be
// what the bank opened with, plus what came in, minus what went out, each
// with a record.
func (b Books) Conserved() Finding {
	opening, in, out := b.Opening()
	want := opening + in - out
	f := Finding{Check: "total stays " + bank.Naira(opening), Holds: b.Total() == want}
	flows := ""
	if in != 0 || out != 0 {
		f.Check = "total matches the books"
		flows = fmt.Sprintf("%s + %s in - %s out = %s", bank.Naira(opening), bank.Naira(in), bank.Naira(out), bank.Naira(want))
	}
	switch {
	case f.Holds:
		f.Detail = flows
	default:
		how := "vanished"
		if b.Total() > want {
			how = "appeared from nowhere"
		}
		f.Detail = strings.TrimPrefix(fmt.Sprintf("%s; the total is %s: %s %s", flows, bank.Naira(b.Total()), bank.Naira(abs(b.Total()-want)), how), "; ")
	}
	for _, a := range b.Accounts {
		if a.Balance < 0 {
			f.Holds = false
			f.Detail = strings.TrimPrefix(f.Detail+fmt.Sprintf("; %s's balance is %s, below zero", a.Holder, bank.Naira(a.Balance)), "; ")
		}
	}
	return f
}

// LedgerAgrees: every balance is its opening plus the transfers in,
// minus the transfers out (and its deposits and payouts): no balance
// changed without a record, no record without the balance.
func (b Books) LedgerAgrees() Finding {
	net := map[int64]int64{}
	for _, t := range b.Transfers {
		net[t.To] += t.Kobo
		net[t.From] -= t.Kobo
	}
	for _, fl := range b.Flows {
		net[fl.Account] += fl.Kobo
	}
	f := Finding{Check: "balances match the ledger", Holds: true}
	var details []string
	for _, a := range b.Accounts {
		if ledger := a.Opening + net[a.ID]; ledger != a.Balance {
			f.Holds = false
			details = append(details, fmt.Sprintf("%s has %s, the ledger says %s", a.Holder, bank.Naira(a.Balance), bank.Naira(ledger)))
		}
	}
	f.Detail = strings.Join(details, "; ")
	return f
}

// Intent is one thing a run asked the bank to do, by its accounts and
// amount, and how many times it should have moved money: once, or never
// when it was refused.
type Intent struct {
	Label          string
	From, To, Kobo int64
	Want           int
}

// Moved are the transfers that match an intent.
func (b Books) Moved(in Intent) []Transfer {
	var ts []Transfer
	for _, t := range b.Transfers {
		if t.From == in.From && t.To == in.To && t.Kobo == in.Kobo {
			ts = append(ts, t)
		}
	}
	return ts
}

// OnceEach: each intent moved money as many times as it should, and no
// transfer belongs to no intent (where the run names every transfer it
// asked for: all).
func (b Books) OnceEach(intents []Intent, all bool) Finding {
	f := Finding{Check: "each request moved money once (or never, when refused)", Holds: true}
	var details []string
	mine := 0
	for _, in := range intents {
		moved := b.Moved(in)
		mine += len(moved)
		if len(moved) == in.Want {
			continue
		}
		f.Holds = false
		details = append(details, fmt.Sprintf("%s moved money %s; it should have moved it %s", in.Label, bank.Times(len(moved)), bank.Times(in.Want)))
		if len(moved) > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: transfers %s", in.Label, ids(moved)))
		}
	}
	if all && len(b.Transfers) > mine {
		f.Holds = false
		details = append(details, fmt.Sprintf("%d transfers belong to no request that was sent", len(b.Transfers)-mine))
	}
	f.Detail = strings.Join(details, "; ")
	return f
}

// Reply is one definitive answer a client got for an intent.
type Reply struct {
	Status     int
	Body       string // as sent; compared as JSON
	TransferID int64  // the transferId of a 2xx
	Kobo       int64  // the amountKobo of a 2xx
	// Unreadable says what keeps TransferID and Kobo from being read
	// from a 2xx's body ("lacks the field amountKobo"), "" when both are
	// there: a missing field is not a zero.
	Unreadable string
}

// Answered: every definitive reply to one intent is the same (a replay
// is the first answer again), and a 2xx names the one transfer the
// ledger holds for it, with its amount.
func (b Books) Answered(in Intent, replies []Reply) Finding {
	f := Finding{Check: "every reply to a request is the same, and a 2xx names its transfer", Holds: true}
	if len(replies) == 0 {
		return f
	}
	first := Normalize(replies[0].Body)
	for _, r := range replies[1:] {
		if Normalize(r.Body) != first || r.Status != replies[0].Status {
			f.Holds = false
			f.Detail = fmt.Sprintf("%s got different answers: %d %s, then %d %s", in.Label, replies[0].Status, replies[0].Body, r.Status, r.Body)
			return f
		}
	}
	r := replies[0]
	if r.Status/100 != 2 {
		return f
	}
	moved := b.Moved(in)
	switch {
	case len(moved) != 1:
		f.Holds = false
		f.Detail = fmt.Sprintf("%s was acknowledged (%d), but the ledger holds %s for it", in.Label, r.Status, transfersWord(len(moved)))
	case r.Unreadable != "":
		f.Holds = false
		f.Detail = fmt.Sprintf("%s: the reply (%d) %s; the ledger holds transfer %d of %d kobo", in.Label, r.Status, r.Unreadable, moved[0].ID, in.Kobo)
	case r.TransferID != moved[0].ID || r.Kobo != in.Kobo:
		f.Holds = false
		f.Detail = fmt.Sprintf("%s: the reply names transfer %d of %d kobo, the ledger holds transfer %d of %d kobo", in.Label, r.TransferID, r.Kobo, moved[0].ID, in.Kobo)
	}
	return f
}

func transfersWord(n int) string {
	if n == 1 {
		return "one transfer"
	}
	if n == 0 {
		return "no transfer"
	}
	return fmt.Sprintf("%d transfers", n)
}

func ids(ts []Transfer) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = fmt.Sprint(t.ID)
	}
	return strings.Join(s, ", ")
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// Broken is the findings that did not hold.
func Broken(fs ...Finding) []Finding {
	return slices.DeleteFunc(slices.Clone(fs), func(f Finding) bool { return f.Holds })
}

// Normalize re-encodes a JSON body so that key order and spacing do not
// count (PostgreSQL's jsonb keeps its own order); a body that is not JSON
// is kept as it is.
func Normalize(body string) string {
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return body
	}
	b, _ := json.Marshal(v)
	return string(b)
}
