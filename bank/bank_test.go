package bank_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/pgserver"
	"github.com/zudojs/bank/bank/pgserver/pgtest"
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

// TestRules runs every rule of the lesson, each request in its own
// transaction, and checks status, code and the money afterwards.
func TestRules(t *testing.T) {
	pool, _ := pgtest.DB(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		user   int64
		body   string
		status int
		label  string
	}{
		{"ok", 1, `{"from":1,"to":2,"amountKobo":1000000}`, 201, "transfer 1"},
		{"not your account", 2, `{"from":1,"to":2,"amountKobo":100}`, 404, "account_not_found"},
		{"missing sender", 1, `{"from":42,"to":2,"amountKobo":100}`, 404, "account_not_found"},
		{"frozen sender", 3, `{"from":3,"to":1,"amountKobo":100}`, 422, "account_not_active"},
		{"frozen recipient", 1, `{"from":1,"to":3,"amountKobo":100}`, 422, "recipient_unavailable"},
		{"no such recipient", 1, `{"from":1,"to":99,"amountKobo":100}`, 422, "recipient_unavailable"},
		{"recipient beyond integer", 1, `{"from":1,"to":9007199254740991,"amountKobo":100}`, 422, "recipient_unavailable"},
		{"too much", 2, `{"from":2,"to":1,"amountKobo":9000000}`, 422, "insufficient_funds"},
		{"half a kobo", 1, `{"from":1,"to":2,"amountKobo":10.5}`, 400, "invalid_amount"},
		{"amount as string", 1, `{"from":1,"to":2,"amountKobo":"100"}`, 400, "invalid_amount"},
		{"amount 1e400", 1, `{"from":1,"to":2,"amountKobo":1e400}`, 400, "invalid_amount"},
		{"amount 2^63", 1, `{"from":1,"to":2,"amountKobo":9223372036854775808}`, 400, "invalid_amount"},
		{"amount zero", 1, `{"from":1,"to":2,"amountKobo":0}`, 400, "invalid_amount"},
		{"amount negative", 1, `{"from":1,"to":2,"amountKobo":-5}`, 400, "invalid_amount"},
		{"amount missing", 1, `{"from":1,"to":2}`, 400, "invalid_amount"},
		{"account as string", 1, `{"from":"1","to":2,"amountKobo":100}`, 400, "invalid_account"},
		{"account fractional", 1, `{"from":1.5,"to":2,"amountKobo":100}`, 400, "invalid_account"},
		{"same account", 1, `{"from":1,"to":1,"amountKobo":100}`, 422, "same_account"},
		{"not an object", 1, `[1,2]`, 400, "invalid_json"},
		{"trailing data", 1, `{"from":1,"to":2,"amountKobo":100} {}`, 400, "invalid_json"},
		{"amount 2^62 is whole, just too much", 1, `{"from":1,"to":2,"amountKobo":4611686018427387904}`, 422, "insufficient_funds"},
		{"exponent that is whole", 1, `{"from":1,"to":2,"amountKobo":1e2}`, 201, "transfer 2"},
	}
	for _, c := range cases {
		var o bank.Outcome
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			o, err = bank.Transfer(ctx, tx, c.user, []byte(c.body))
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if o.Status != c.status || o.Label() != c.label {
			t.Errorf("%s: got %d %s, want %d %s", c.name, o.Status, o.Label(), c.status, c.label)
		}
	}
	line, err := bank.Balances(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Ada ₦39,999, Bola ₦15,001, Chidi ₦20,000 | total ₦75,000 | transfers 2"; line != want {
		t.Fatalf("after the rules\n got %s\nwant %s", line, want)
	}
}

func TestReceiptBody(t *testing.T) {
	pool, _ := pgtest.DB(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	o, err := bank.Transfer(ctx, tx, 1, []byte(`{"from":1,"to":2,"amountKobo":1000000}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"transferId":1,"from":1,"to":2,"amountKobo":1000000,"balanceKobo":4000000}`
	if got := string(o.Body()); got != want {
		t.Fatalf("body %s, want %s", got, want)
	}
	refused, _ := bank.Transfer(ctx, tx, 1, []byte(`{"from":1,"to":1,"amountKobo":1}`))
	if got := string(refused.Body()); !strings.HasPrefix(got, `{"error":"same_account","message":`) {
		t.Fatalf("refusal body %s", got)
	}
}

// TestOppositeTransfersDoNotDeadlock sends money both ways between Ada and
// Bola at once, many times. If each transfer locked its sender first and
// its recipient second, the two would wait for each other and PostgreSQL
// would abort one with a deadlock error: a 500 for a valid request.
func TestOppositeTransfersDoNotDeadlock(t *testing.T) {
	pool, _ := pgtest.DB(t)
	ctx := context.Background()
	const rounds = 300
	errs := make(chan error, 2)
	for _, dir := range []struct {
		user int64
		body string
	}{{1, `{"from":1,"to":2,"amountKobo":1}`}, {2, `{"from":2,"to":1,"amountKobo":1}`}} {
		go func() {
			for range rounds {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					o, err := bank.Transfer(ctx, tx, dir.user, []byte(dir.body))
					if err == nil && o.Status != 201 {
						t.Errorf("user %d: %d %s", dir.user, o.Status, o.Label())
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
