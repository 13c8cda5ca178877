package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The three cases a client cannot tell apart. After a timeout the phone
// sees the same thing whether its request never arrived, arrived and
// failed, or arrived and succeeded. Not retrying loses the first two;
// retrying without a key repeats the third. One retry with the same key
// is right for all three: the first two run now, the third is replayed.
var UnknownOutcome = &lab.Scenario{
	Name:     "unknown-outcome",
	Summary:  "never arrived, arrived and failed, arrived and succeeded: one view from the phone, one right retry",
	Section:  "The response that never arrives",
	Prevents: "both ways of guessing: a lost transfer (no retry) and a double one (a retry with a new key)",
	Explain: map[string]string{
		"three timeouts": "Each case is an intent of its own, of ₦1,000, ₦2,000 and ₦3,000, so that the balances tell them apart.",
		"three retries":  "Each retry carries its own tap's key. The key store decides: a key it does not hold (never sent, or released after the failure) is claimed and run now; a completed key's stored answer is replayed.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		server := lab.Session(ctx, "SET lock_timeout = '"+serverLockTimeout+"'")
		var failure error // what went wrong on the server, which the phone never hears
		transfers := &api.Transfers{DB: server, Keys: lab.Keys(&idem.Store{})}
		handler := lab.Server("server", answersErrors(transfers, &failure))
		now := lab.Clock.Now()
		cases := []struct {
			what string
			call api.Call
		}{
			{"case 1, Ada's ₦1,000 to Bola: the request never arrived", api.Call{UserID: 1, Key: "unknown-never-arrived-1", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 100000}`), Now: now}},
			{"case 2, Ada's ₦2,000 to Bola: it arrived and failed", api.Call{UserID: 1, Key: "unknown-arrived-failed-2", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 200000}`), Now: now}},
			{"case 3, Ada's ₦3,000 to Bola: it arrived and succeeded", api.Call{UserID: 1, Key: "unknown-arrived-done-3", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 300000}`), Now: now}},
		}
		lab.Intent("case 1's ₦1,000", 1, 2, 100_000, 1)
		lab.Intent("case 2's ₦2,000", 1, 2, 200_000, 1)
		lab.Intent("case 3's ₦3,000", 1, 2, 300_000, 1)

		lab.Say("Ada makes three taps, each with its own idempotency key: an id the app makes once per tap and sends with every retry of it.")
		lab.Say("the server keeps its keys in a key store, a table in PostgreSQL. It claims a new key before working (a row marked in progress and locked for 30 s, so that no second delivery of the same request runs meanwhile), and stores its answer under the key in the transfer's own transaction; a request with a completed key gets that answer again, replayed, instead of a second transfer. If the work fails unexpectedly, the key is released (its row deleted), so that a retry runs afresh.")
		lab.Step("three timeouts")
		lab.Say("the phone times out on all three:")
		// Case 1: the network loses the request; nothing reaches the server.
		seen := handler.DropRequest(cases[0].call)
		lab.Say("%s; the phone sees: %v", cases[0].what, seen)
		// Case 2: a maintenance job holds Ada's row past the server's lock
		// timeout, so the transfer fails; its answer (a 500) is lost too.
		release := lab.HoldRow(ctx, 1)
		handler.LoseNext(1)
		_, seen = handler.Handle(ctx, cases[1].call)
		release()
		var pgErr *pgconn.PgError
		if !errors.As(failure, &pgErr) || !errors.Is(seen, errLostResponse) {
			return fmt.Errorf("case 2 should have failed on the server and its answer been lost, got %w and %w", gotten(failure), gotten(seen))
		}
		lab.Say("%s; the phone sees: %v", cases[1].what, seen)
		var timeout string
		lab.Must(server.QueryRow(ctx, "SHOW lock_timeout").Scan(&timeout))
		lab.Say("  (on the server: a maintenance job held Ada's account row; the server waits %s for a row lock (its lock_timeout), then gives up: PostgreSQL said %q, SQLSTATE %s. The transfer rolled back, the key was released, and the server's 500 was lost on the way.)", timeout, pgErr.Message, pgErr.Code)
		// Case 3: the transfer commits; its answer is lost on the way.
		handler.LoseNext(1)
		if _, seen = handler.Handle(ctx, cases[2].call); !errors.Is(seen, errLostResponse) {
			return fmt.Errorf("case 3's answer should have been lost, got %w", gotten(seen))
		}
		lab.Say("%s; the phone sees: %v", cases[2].what, seen)

		lab.Step("three retries")
		for _, c := range cases {
			r := handler.Send(ctx, c.call)
			lab.Reply(r, "%s; retry with the same key: %d %s%s", c.what[:strings.Index(c.what, ":")], r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		lab.Balances(ctx, "")
		return nil
	},
}

// answersErrors serves h as bank serve does: a request that failed
// unexpectedly is answered 500 internal_error (its key was released), and
// the error is kept in *failed for the story to say what happened.
func answersErrors(h api.Handler, failed *error) api.Handler {
	return api.HandlerFunc(func(ctx context.Context, c api.Call) (idem.Response, error) {
		r, err := h.Handle(ctx, c)
		if err != nil {
			*failed = err
			return serverError(), nil
		}
		return r, nil
	})
}
