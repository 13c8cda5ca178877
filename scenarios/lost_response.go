package scenarios

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The bus-and-tunnel story. The server moves the money, then the response
// is lost on the way back. The client cannot know the transfer happened,
// so it does what a good client does and retries: the server sees a
// perfectly valid second request, and moves ₦10,000 again.
var LostResponse = &lab.Scenario{
	Name:    "lost-response",
	Summary: "the response is lost, the client retries, and one tap moves ₦20,000",
	Section: "The response that never arrives",
	Fix:     "bank scenario retry-safe (one idempotency key per intent)",
	Blind: map[lab.Check]string{
		lab.TotalKept:    "a transfer made twice still conserves money",
		lab.LedgerAgrees: "both transfers are recorded, so the books agree",
	},
	Explain: map[string]string{
		"retry after a lost response": `Ada is on a bus. The server commits her transfer, and its answer is lost as the bus drives into a tunnel; her app retries.
To the phone a lost response, a request that never arrived and one that failed all look the same.
The lesson's own figure follows, kept whole (two of its lines are wider than 80 columns); its phone is Ada's app, its database PostgreSQL (the lab's diagram names them app and PostgreSQL):

 phone                       server                         database
   |  POST /transfers  ------->   |                               |
   |                              |  BEGIN ... COMMIT  -------->  |  ₦10,000 moved
   |  x <---- 201 lost in tunnel  |                               |
   |  POST /transfers (retry) --> |  BEGIN ... COMMIT  -------->  |  ₦10,000 moved again
   |  <---------------- 201       |                               |`,
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).ShownBroken()
		// BROKEN ON PURPOSE: the transfer, with no key; the network loses
		// its first answer after the commit.
		server := lab.Server("server", api.HandlerFunc(func(ctx context.Context, c api.Call) (idem.Response, error) {
			var resp idem.Response
			err := pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) (err error) {
				resp, err = api.Transfer(ctx, tx, c.UserID, c.Body)
				return err
			})
			return resp, err
		}))
		server.LoseNext(1) // committed; the answer never reaches the phone

		lab.Step("retry after a lost response")
		lab.Say("Ada taps Send once, on a bus: ₦10,000 to Bola. The server makes the transfer, and its answer is lost on the way back as the bus drives into a tunnel; the app times out and retries the same request.")
		for attempt := 1; attempt <= 3; attempt++ {
			r, err := server.Handle(ctx, api.Call{UserID: 1, Body: []byte(adaPaysBola), Now: lab.Clock.Now()})
			if errors.Is(err, errLostResponse) {
				lab.Say("attempt %d: %v", attempt, err)
				continue
			}
			if err != nil {
				return err
			}
			lab.Reply(r, "attempt %d: %d", attempt, r.Status)
			break
		}
		lab.Balances(ctx, "")
		return nil
	},
}
