package bank_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, pgserver.Template{Prefix: "bank", Schema: bank.SchemaText(), Setup: bank.SetupAll})
}

func TestNaira(t *testing.T) {
	for kobo, want := range map[int64]string{
		0:          "₦0",
		5_000_000:  "₦50,000",
		500_000:    "₦5,000",
		1_050:      "₦10.50",
		1:          "₦0.01",
		100_000_00: "₦100,000",
		-500_000:   "-₦5,000",
		123456789:  "₦1,234,567.89",
		-1 << 63:   "-₦92,233,720,368,547,758.08",
	} {
		if got := bank.Naira(kobo); got != want {
			t.Errorf("Naira(%d) = %q, want %q", kobo, got, want)
		}
	}
}

func TestSeedBalancesLine(t *testing.T) {
	pool, _ := pgtest.DB(t)
	line, err := bank.Balances(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	want := "Ada ₦50,000, Bola ₦5,000, Chidi ₦20,000 | total ₦75,000 | transfers 0"
	if line != want {
		t.Fatalf("balances line\n got %s\nwant %s", line, want)
	}
}

// TestRules runs every rule of the bank, each request in its own
// transaction, and checks the receipt or the refusal (code and message)
// and the money afterwards. How a body becomes a request, and a refusal a
// status, is the API's: bank/api tests those.
func TestRules(t *testing.T) {
	pool, _ := pgtest.DB(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		user    int64
		req     bank.Request
		code    bank.Code // "" for a receipt
		message string
	}{
		{"ok", 1, bank.Request{From: 1, To: 2, AmountKobo: 1000000}, "", ""},
		{"not your account", 2, bank.Request{From: 1, To: 2, AmountKobo: 100}, bank.AccountNotFound, "account 1 was not found"},
		{"missing sender", 1, bank.Request{From: 42, To: 2, AmountKobo: 100}, bank.AccountNotFound, "account 42 was not found"},
		{"frozen sender", 3, bank.Request{From: 3, To: 1, AmountKobo: 100}, bank.AccountNotActive, "account 3 is frozen"},
		{"frozen recipient", 1, bank.Request{From: 1, To: 3, AmountKobo: 100}, bank.RecipientUnavailable, "account 3 cannot receive transfers"},
		{"no such recipient", 1, bank.Request{From: 1, To: 99, AmountKobo: 100}, bank.RecipientUnavailable, "account 99 cannot receive transfers"},
		{"too much", 2, bank.Request{From: 2, To: 1, AmountKobo: 9000000}, bank.InsufficientFunds, "the balance is too low for this transfer"},
		{"amount zero", 1, bank.Request{From: 1, To: 2}, bank.InvalidAmount, "amountKobo must be a whole number of kobo above 0"},
		{"amount negative", 1, bank.Request{From: 1, To: 2, AmountKobo: -5}, bank.InvalidAmount, "amountKobo must be a whole number of kobo above 0"},
		{"same account", 1, bank.Request{From: 1, To: 1, AmountKobo: 100}, bank.SameAccount, "an account cannot send money to itself"},
		{"amount before accounts", 1, bank.Request{From: 1, To: 1}, bank.InvalidAmount, "amountKobo must be a whole number of kobo above 0"},
		{"too much for anyone", 1, bank.Request{From: 1, To: 2, AmountKobo: 1 << 62}, bank.InsufficientFunds, "the balance is too low for this transfer"},
		{"a kobo", 1, bank.Request{From: 1, To: 2, AmountKobo: 1}, "", ""},
	}
	for _, c := range cases {
		var o bank.Outcome
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			o, err = bank.Transfer(ctx, tx, c.user, c.req)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch {
		case c.code == "" && (o.Receipt == nil || o.Refusal != nil):
			t.Errorf("%s: got %+v, want a receipt", c.name, o.Refusal)
		case c.code != "" && (o.Receipt != nil || o.Refusal == nil || *o.Refusal != bank.Refusal{Code: c.code, Message: c.message}):
			t.Errorf("%s: got %+v %+v, want %s: %s", c.name, o.Receipt, o.Refusal, c.code, c.message)
		}
	}
	line, err := bank.Balances(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Ada ₦39,999.99, Bola ₦15,000.01, Chidi ₦20,000 | total ₦75,000 | transfers 2"; line != want {
		t.Fatalf("after the rules\n got %s\nwant %s", line, want)
	}
}

func TestReceipt(t *testing.T) {
	pool, _ := pgtest.DB(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	o, err := bank.Transfer(ctx, tx, 1, bank.Request{From: 1, To: 2, AmountKobo: 1000000})
	if err != nil {
		t.Fatal(err)
	}
	if want := (bank.Receipt{TransferID: 1, From: 1, To: 2, AmountKobo: 1000000, BalanceKobo: 4000000}); o.Receipt == nil || *o.Receipt != want {
		t.Fatalf("receipt %+v, want %+v", o.Receipt, want)
	}
}

// TestOppositeTransfersDoNotDeadlock sends money both ways between Ada and
// Bola at once, many times. If each transfer locked its sender first and
// its recipient second, the two would wait for each other and PostgreSQL
// would abort one with a deadlock error: an error for a valid request.
func TestOppositeTransfersDoNotDeadlock(t *testing.T) {
	pool, _ := pgtest.DB(t)
	ctx := context.Background()
	const rounds = 300
	errs := make(chan error, 2)
	for _, dir := range []struct {
		user int64
		req  bank.Request
	}{{1, bank.Request{From: 1, To: 2, AmountKobo: 1}}, {2, bank.Request{From: 2, To: 1, AmountKobo: 1}}} {
		go func() {
			for range rounds {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					o, err := bank.Transfer(ctx, tx, dir.user, dir.req)
					if err == nil && o.Receipt == nil {
						t.Errorf("user %d: %v", dir.user, o.Refusal)
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	line, err := bank.Balances(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Ada ₦50,000, Bola ₦5,000, Chidi ₦20,000 | total ₦75,000 | transfers 600"; line != want {
		t.Fatalf("after %d transfers each way\n got %s\nwant %s", rounds, line, want)
	}
}
