package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The ledger's own key. The API answers Ada's tap through the key store,
// as it should, but the answer is lost and her app times out. She reports
// it, and support sends her request again with a tool written in a hurry:
// a second code path, straight to the transfer, bypassing the store. With a ledger that does not know
// the key, money moves twice. With the key written on every ledger row
// under a unique index, the database itself refuses the second transfer.
var LedgerKey = &lab.Scenario{
	Name:    "ledger-key",
	Summary: "a second code path bypasses the key store: the ledger's own unique key refuses the duplicate",
	Section: "Idempotent consumers and retention: the ledger, the last line of defence",
	Fix:     "the safe part above: the key on every ledger row, unique",
	Blind:   twiceBlind,
	Explain: map[string]string{
		"broken: a ledger that does not know the key":  "The API goes through the key store; the support tool calls the transfer directly, so nothing it does looks at the key.",
		"safe: the ledger row carries the key, unique": "Both paths stamp the transfer row with the key, in the transfer's transaction, under a unique index: a second row with the same key cannot commit.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		keys := lab.Keys(&idem.Store{})
		stamp := false
		server := lab.Server("API", api.HandlerFunc(func(ctx context.Context, c api.Call) (idem.Response, error) {
			req := idem.Request{UserID: c.UserID, Key: c.Key, Method: "POST", Path: "/transfers", Body: c.Body, Now: c.Now}
			return keys.Do(ctx, lab.DB, req, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
				return ledgerTransfer(ctx, tx, c.Key, string(c.Body), stamp)
			})
		}))
		lab.Exec(ctx, bank.LedgerKeySchema)

		lab.Say("two ways a request reaches the transfer. The API goes through the key store, the table in PostgreSQL where it claims each request's idempotency key and stores its answer, so that a retry is replayed. A support tool, written in a hurry, goes straight to the transfer code: when a customer reports that her app timed out, support sends her request again with it, key and all, without asking the key store.")
		lab.Part("broken: a ledger that does not know the key")
		lab.Intent("Ada's ₦10,000 tap", 1, 2, 1_000_000, 1).ShownBroken()
		call := api.Call{UserID: 1, Key: "tap-ledger-000000001", Body: []byte(adaPaysBola), Now: lab.Clock.Now()}
		r := answerLost(ctx, lab, server, call)
		lab.Reply(r, "Ada's ₦10,000 to Bola, through the API and its key store: %d %s, but the answer is lost on the way to the phone", r.Status, transferLabel(r.Body))
		resent, err := resendJob(ctx, lab, call.Key, adaPaysBola, false)
		lab.Must(err)
		lab.Reply(resent, "Ada's app timed out, so she reports the tap; support sends it again with the support tool, around the key store: %d %s", resent.Status, transferLabel(resent.Body))

		lab.Part("safe: the ledger row carries the key, unique")
		stamp = true
		const fiveK = `{"from": 1, "to": 2, "amountKobo": 500000}`
		lab.Intent("Ada's ₦5,000 tap", 1, 2, 500_000, 1)
		call = api.Call{UserID: 1, Key: "tap-ledger-000000002", Body: []byte(fiveK), Now: lab.Clock.Now()}
		r = answerLost(ctx, lab, server, call)
		lab.Reply(r, "Ada's ₦5,000 to Bola, through the API and its key store: %d %s, but the answer is lost on the way to the phone", r.Status, transferLabel(r.Body))
		_, err = resendJob(ctx, lab, call.Key, fiveK, true)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return fmt.Errorf("the ledger should have refused the resend, got %w", gotten(err))
		}
		lab.Say("Ada's app timed out, so she reports the tap; support sends it again with the support tool, around the key store: %s", pgErr.Message)
		lab.Say("  (SQLSTATE %s: the support tool's transaction rolled back, transfer and all)", pgErr.Code)
		lab.Balances(ctx, "")
		return nil
	},
}

// answerLost sends call through the API, whose answer is then lost on the
// way to the phone: what the API answered.
func answerLost(ctx context.Context, lab *lab.Lab, server *lab.Endpoint, call api.Call) idem.Response {
	server.LoseNext(1)
	r, err := server.Handle(ctx, call)
	if !errors.Is(err, errLostResponse) {
		lab.Must(fmt.Errorf("the API's answer should have been lost, got %w", gotten(err)))
	}
	return r
}

// ledgerTransfer is the lesson's transfer, which also stamps its ledger
// row with the key when the ledger has the key column in use.
func ledgerTransfer(ctx context.Context, tx pgx.Tx, key, body string, stamp bool) (idem.Response, error) {
	r, refused := api.ParseRequest([]byte(body))
	if refused != nil {
		return *refused, nil
	}
	o, err := bank.Transfer(ctx, tx, 1, r)
	if err == nil && stamp && o.Receipt != nil {
		err = bank.StampKey(ctx, tx, o.Receipt.TransferID, key)
	}
	return api.Answer(o), err
}

// resendJob is BROKEN ON PURPOSE: the support tool, a second code path
// that sends a request again straight to the transfer, without asking the
// key store.
func resendJob(ctx context.Context, lab *lab.Lab, key, body string, stamp bool) (idem.Response, error) {
	var r struct{ From, To, AmountKobo int64 }
	lab.Must(json.Unmarshal([]byte(body), &r))
	lab.Arrow(supportTool, postgres, fmt.Sprintf("BEGIN; transfer %s %d→%d; COMMIT", bank.Naira(r.AmountKobo), r.From, r.To), "")
	var resp idem.Response
	err := pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) (err error) {
		resp, err = ledgerTransfer(ctx, tx, key, body, stamp)
		return err
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		lab.Arrow(postgres, supportTool, "refused: "+pgErr.Code+", the key is on a ledger row already: ROLLBACK", "refused")
	case err == nil:
		lab.Arrow(postgres, supportTool, "committed: "+transferLabel(resp.Body), "")
	}
	return resp, err
}

// supportTool is the lane the support tool's requests are drawn from.
const supportTool = "support tool"
