package audit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lesson is the lesson's bank after Ada's ₦10,000 to Bola, moved once.
func lesson() Books {
	return Books{
		Accounts: []Account{
			{ID: 1, Holder: "Ada", Balance: 4_000_000, Opening: 5_000_000},
			{ID: 2, Holder: "Bola", Balance: 1_500_000, Opening: 500_000},
			{ID: 3, Holder: "Chidi", Balance: 2_000_000, Opening: 2_000_000},
		},
		Transfers: []Transfer{{ID: 1, From: 1, To: 2, Kobo: 1_000_000}},
	}
}

var adaPaysBola = Intent{Label: "Ada's ₦10,000 to Bola", From: 1, To: 2, Kobo: 1_000_000, Want: 1}

func TestHistoriesThatHold(t *testing.T) {
	b := lesson()
	for _, f := range []Finding{
		b.Conserved(),
		b.LedgerAgrees(),
		b.OnceEach([]Intent{adaPaysBola}, true),
		b.Answered(adaPaysBola, []Reply{
			{Status: 201, Body: `{"transferId":1,"from":1,"to":2,"amountKobo":1000000}`, TransferID: 1, Kobo: 1_000_000},
			{Status: 201, Body: `{"to": 2, "from": 1, "amountKobo": 1000000, "transferId": 1}`, TransferID: 1, Kobo: 1_000_000},
		}),
	} {
		if !f.Holds {
			t.Errorf("%s", f)
		}
	}
	if got := b.Conserved().Check; got != "total stays ₦75,000" {
		t.Errorf("the check is named %q", got)
	}
	// Money across the edge, with a record, is not money made or lost.
	b.Accounts[0].Balance += 300_000
	b.Flows = []Flow{{Account: 1, Kobo: 500_000}, {Account: 1, Kobo: -200_000}}
	if f := b.Conserved(); !f.Holds || f.Check != "total matches the books" || f.Detail != "₦75,000 + ₦5,000 in - ₦2,000 out = ₦78,000" {
		t.Errorf("with deposits and payouts: %+v", f)
	}
	if f := b.LedgerAgrees(); !f.Holds {
		t.Errorf("with deposits and payouts: %s", f)
	}
}

func TestHistoriesThatMustNotHold(t *testing.T) {
	// The lesson's naive transfer: Ada debited, nobody credited, no record.
	naive := lesson()
	naive.Accounts[1].Balance = 500_000
	naive.Transfers = nil
	if f := naive.Conserved(); f.Holds || f.Detail != "the total is ₦65,000: ₦10,000 vanished" {
		t.Errorf("naive: %+v", f)
	}
	if f := naive.LedgerAgrees(); f.Holds || f.Detail != "Ada has ₦40,000, the ledger says ₦50,000" {
		t.Errorf("naive: %+v", f)
	}

	// The lost response retried without a key: money conserved, ledger
	// right, yet moved twice. Conservation alone proves nothing.
	twice := lesson()
	twice.Accounts[0].Balance, twice.Accounts[1].Balance = 3_000_000, 2_500_000
	twice.Transfers = append(twice.Transfers, Transfer{ID: 2, From: 1, To: 2, Kobo: 1_000_000})
	if !twice.Conserved().Holds || !twice.LedgerAgrees().Holds {
		t.Errorf("a transfer made twice conserves money and agrees with its ledger")
	}
	f := twice.OnceEach([]Intent{adaPaysBola}, true)
	if f.Holds || f.Detail != "Ada's ₦10,000 to Bola moved money twice; it should have moved it once" || len(f.Evidence) != 1 || !strings.Contains(f.Evidence[0], "transfers 1, 2") {
		t.Errorf("twice: %+v", f)
	}
	if f := twice.Answered(adaPaysBola, []Reply{{Status: 201, Body: `{"transferId":2}`, TransferID: 2, Kobo: 1_000_000}}); f.Holds {
		t.Errorf("an acknowledged request with two transfers: %s", f)
	}

	// A refused request that moved money, and a transfer nobody asked for.
	b := lesson()
	refused := Intent{Label: "Ada's ₦52,000", From: 1, To: 2, Kobo: 5_200_000, Want: 0}
	b.Transfers = append(b.Transfers, Transfer{ID: 2, From: 1, To: 2, Kobo: 5_200_000}, Transfer{ID: 3, From: 2, To: 1, Kobo: 7})
	f = b.OnceEach([]Intent{adaPaysBola, refused}, true)
	if f.Holds || !strings.Contains(f.Detail, "Ada's ₦52,000 moved money once; it should have moved it never") || !strings.Contains(f.Detail, "1 transfers belong to no request") {
		t.Errorf("refused and unasked: %+v", f)
	}
	if f := b.OnceEach([]Intent{adaPaysBola, refused}, false); strings.Contains(f.Detail, "belong to no request") {
		t.Errorf("a run that does not name every transfer is not told of the others: %+v", f)
	}

	// A negative balance breaks conservation even when the sum is right.
	neg := lesson()
	neg.Accounts[0].Balance, neg.Accounts[1].Balance = -100, 5_500_100
	if f := neg.Conserved(); f.Holds || !strings.Contains(f.Detail, "below zero") {
		t.Errorf("negative: %+v", f)
	}

	// Replies that differ, and a 201 that names another transfer.
	b = lesson()
	if f := b.Answered(adaPaysBola, []Reply{{Status: 201, Body: `{"transferId":1}`, TransferID: 1, Kobo: 1_000_000}, {Status: 422, Body: `{"error":"x"}`}}); f.Holds {
		t.Errorf("different replies: %s", f)
	}
	if f := b.Answered(adaPaysBola, []Reply{{Status: 201, Body: `{"transferId":9}`, TransferID: 9, Kobo: 1_000_000}}); f.Holds || !strings.Contains(f.Detail, "transfer 9") {
		t.Errorf("a 201 naming another transfer: %+v", f)
	}
	// A receipt that lacks a field is said to lack it: a missing field
	// is not a zero ("names transfer 1 of 0 kobo").
	if f := b.Answered(adaPaysBola, []Reply{{Status: 201, Body: `{"transferId":1}`, TransferID: 1, Unreadable: "lacks the field amountKobo"}}); f.Holds ||
		f.Detail != "Ada's ₦10,000 to Bola: the reply (201) lacks the field amountKobo; the ledger holds transfer 1 of 1000000 kobo" {
		t.Errorf("a 201 without its amount: %+v", f)
	}
	if f := b.Answered(refused, []Reply{{Status: 422, Body: `{"error":"insufficient_funds"}`}, {Status: 422, Body: `{"error":"insufficient_funds"}`}}); !f.Holds {
		t.Errorf("a refusal replayed: %s", f)
	}
	if got := len(Broken(b.Conserved(), twice.OnceEach([]Intent{adaPaysBola}, true))); got != 1 {
		t.Errorf("Broken kept %d findings, want 1", got)
	}
}

// failing is a database whose every query fails, or whose rows fail
// half-way: Read must return the error, never a partial book.
type failing struct {
	queryErr error
	rowsErr  error
}

func (f failing) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, f.queryErr
}

func (f failing) Query(context.Context, string, ...any) (pgx.Rows, error) {
	if f.queryErr != nil {
		return nil, f.queryErr
	}
	return &brokenRows{err: f.rowsErr}, nil
}

func (f failing) QueryRow(context.Context, string, ...any) pgx.Row { return brokenRow{f.queryErr} }

type brokenRow struct{ err error }

func (r brokenRow) Scan(...any) error { return r.err }

// brokenRows yields no row, then reports err, as a connection lost
// mid-result does.
type brokenRows struct {
	pgx.Rows
	err error
}

func (r *brokenRows) Next() bool                                   { return false }
func (r *brokenRows) Err() error                                   { return r.err }
func (r *brokenRows) Close()                                       {}
func (r *brokenRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r *brokenRows) FieldDescriptions() []pgconn.FieldDescription { return nil }

func TestReadReturnsEveryError(t *testing.T) {
	lost := errors.New("connection lost")
	for _, db := range []failing{{queryErr: lost}, {rowsErr: lost}} {
		if _, err := Read(context.Background(), db, nil); !errors.Is(err, lost) {
			t.Errorf("Read on %+v: %v, want the error", db, err)
		}
	}
}

func TestAsOpening(t *testing.T) {
	// A bank found with a transfer already made and a deposit: the
	// openings it implies make its own books agree, and a later double
	// transfer is still seen.
	b := lesson()
	b.Accounts[1].Balance += 100
	b.Flows = []Flow{{Account: 2, Kobo: 100}}
	opening := b.AsOpening()
	if opening[1] != 5_000_000 || opening[2] != 500_000 || opening[3] != 2_000_000 {
		t.Fatalf("openings %v", opening)
	}
	for i := range b.Accounts {
		b.Accounts[i].Opening = opening[b.Accounts[i].ID]
	}
	if f := b.LedgerAgrees(); !f.Holds {
		t.Errorf("%s", f)
	}
	b.Accounts[0].Balance -= 1_000_000
	b.Accounts[1].Balance += 1_000_000
	b.Transfers = append(b.Transfers, Transfer{ID: 2, From: 1, To: 2, Kobo: 1_000_000})
	if f := b.OnceEach([]Intent{adaPaysBola}, false); f.Holds {
		t.Errorf("a second transfer after the openings: %s", f)
	}
}

// TestLineIsTheLessons: the books print the lesson's balances line, the
// same as bank.Snapshot prints it (the grader's card says it this way).
func TestLineIsTheLessons(t *testing.T) {
	t.Parallel()
	b := Books{Accounts: []Account{{ID: 1, Holder: "Ada", Balance: 4_000_000}, {ID: 2, Holder: "Bola", Balance: 1_500_000}, {ID: 3, Holder: "Chidi", Balance: 2_000_000}},
		Transfers: []Transfer{{ID: 1, From: 1, To: 2, Kobo: 1_000_000}}}
	if got, want := b.Line(), "Ada ₦40,000, Bola ₦15,000, Chidi ₦20,000 | total ₦75,000 | transfers 1"; got != want {
		t.Errorf("the line is %q, want %q", got, want)
	}
}
