package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// label is the short form of an answer: "transfer 1" or the error code.
func label(resp idem.Response) string {
	var b struct {
		TransferID int64 `json:"transferId"`
		Error      string
	}
	json.Unmarshal(resp.Body, &b)
	if b.TransferID != 0 {
		return fmt.Sprintf("transfer %d", b.TransferID)
	}
	return b.Error
}

// TestRules sends every rule of the lesson as a body, each request in its
// own transaction, and checks the status, the code and the money
// afterwards: the parsing rules are the API's, the rest the bank's, and
// the status of each of the bank's refusals the API's.
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
		{"account beyond integer", 1, `{"from":1,"to":9007199254740992,"amountKobo":100}`, 400, "invalid_account"},
		{"account before amount", 1, `{"from":"1","to":2,"amountKobo":0}`, 400, "invalid_account"},
		{"same account", 1, `{"from":1,"to":1,"amountKobo":100}`, 422, "same_account"},
		{"amount before same account", 1, `{"from":1,"to":1,"amountKobo":0.5}`, 400, "invalid_amount"},
		{"not an object", 1, `[1,2]`, 400, "invalid_json"},
		{"trailing data", 1, `{"from":1,"to":2,"amountKobo":100} {}`, 400, "invalid_json"},
		{"amount 2^62 is whole, just too much", 1, `{"from":1,"to":2,"amountKobo":4611686018427387904}`, 422, "insufficient_funds"},
		{"exponent that is whole", 1, `{"from":1,"to":2,"amountKobo":1e2}`, 201, "transfer 2"},
	}
	for _, c := range cases {
		var resp idem.Response
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			resp, err = api.Transfer(ctx, tx, c.user, []byte(c.body))
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if resp.Status != c.status || label(resp) != c.label {
			t.Errorf("%s: got %d %s, want %d %s", c.name, resp.Status, label(resp), c.status, c.label)
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

// TestBodies: the receipt and the refusals as the API writes them, byte
// for byte (a replay sends the stored bytes): a refusal is RFC 9457
// problem details that keep the lesson's error and message, which the
// transcripts print.
func TestBodies(t *testing.T) {
	pool, _ := pgtest.DB(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	refusal := func(status int, code, title, message string) string {
		m, _ := json.Marshal(message)
		return fmt.Sprintf(`{"type":"/problems/%s","title":"%s","status":%d,"detail":%s,"error":"%s","message":%s}`, code, title, status, m, code, m)
	}
	for _, c := range []struct {
		user       int64
		body, want string
	}{
		{1, `{"from":1,"to":2,"amountKobo":1000000}`, `{"transferId":1,"from":1,"to":2,"amountKobo":1000000,"balanceKobo":4000000}`},
		{1, `{"from":1,"to":1,"amountKobo":1}`, refusal(422, "same_account", "Same account", "an account cannot send money to itself")},
		{1, `{"from":1,"to":2,"amountKobo":1.5}`, refusal(400, "invalid_amount", "Invalid amount", "amountKobo must be a whole number of kobo above 0")},
		{1, `{"from":1,"to":2,"amountKobo":"1"}`, refusal(400, "invalid_amount", "Invalid amount", "amountKobo must be a whole number of kobo above 0")},
		{1, `{"from":1,"to":"2","amountKobo":1}`, refusal(400, "invalid_account", "Invalid account", "from and to must be account numbers")},
		{1, `{"from":7,"to":2,"amountKobo":1}`, refusal(404, "account_not_found", "Account not found", "account 7 was not found")},
		{1, `{"from":1,"to":3,"amountKobo":1}`, refusal(422, "recipient_unavailable", "Recipient unavailable", "account 3 cannot receive transfers")},
		{3, `{"from":3,"to":1,"amountKobo":1}`, refusal(422, "account_not_active", "Account not active", "account 3 is frozen")},
		{1, `{"from":1,"to":2,"amountKobo":9000000}`, refusal(422, "insufficient_funds", "Insufficient funds", "the balance is too low for this transfer")},
		{1, `{"from":1`, refusal(400, "invalid_json", "Invalid JSON", `the body must be one JSON object such as {"from":1,"to":2,"amountKobo":1000000}`)},
	} {
		resp, err := api.Transfer(ctx, tx, c.user, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(resp.Body); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.body, got, c.want)
		}
	}
}

// TestAnswer: each of the bank's refusals gets its status, and the zero
// outcome (which comes with an error) answers nothing.
func TestAnswer(t *testing.T) {
	for code, status := range map[bank.Code]int{
		bank.InvalidAmount: 400, bank.AccountNotFound: 404, bank.SameAccount: 422,
		bank.AccountNotActive: 422, bank.RecipientUnavailable: 422, bank.InsufficientFunds: 422,
	} {
		if got := api.Answer(bank.Outcome{Refusal: &bank.Refusal{Code: code, Message: "m"}}).Status; got != status {
			t.Errorf("%s: %d, want %d", code, got, status)
		}
	}
	if got := api.Answer(bank.Outcome{}); got.Status != 0 || got.Body != nil {
		t.Errorf("the zero outcome answered %d %s", got.Status, got.Body)
	}
}
