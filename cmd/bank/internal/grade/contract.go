package grade

import (
	"fmt"
	"strings"

	"github.com/zudojs/bank/bank"
)

// Contract is what bank grade expects of a server: the lesson's API.
func Contract() string {
	var b strings.Builder
	b.WriteString(`The contract bank grade checks: the lesson's transfer API.

Start-up
  bank grade runs your command with three variables in its environment:
    DATABASE_URL  postgres://… of a fresh bank, made for each check
    PORT          listen on 127.0.0.1:$PORT
    LOCK_TTL_MS   how long a claimed key stays locked before a retry may
                  take it over (the grader uses 2000 unless --lock-ttl)
  The database holds the lesson's two tables, and nothing else: create
  your own key table (CREATE TABLE IF NOT EXISTS) when you start; two
  instances of your server may share one database.
    accounts (id, owner_id, holder, status, balance_kobo)
`)
	for _, a := range bank.Seed {
		fmt.Fprintf(&b, "      %d %-9s owner %d  %-7s %s (%d kobo)\n", a.ID, a.Holder, a.Owner, a.Status, bank.Naira(a.BalanceKobo), a.BalanceKobo)
	}
	fmt.Fprintf(&b, `    transfers (id serial, from_account, to_account, amount_kobo)
  The grader reads both after every check: the total must stay %s,
`, bank.Naira(bank.SeedTotal()))
	b.WriteString(`  every balance must be its seed plus its transfers, and each request must
  have moved money once (or never, when it was refused).

POST /transfers
  Authorization: Bearer token-ada | token-bola | token-chidi  (users 1, 2, 3;
                 user N owns account N)
  Idempotency-Key: 16 to 64 letters, digits, - or _
  Body: {"from":1,"to":2,"amountKobo":1000000}  (keys in any order)

  201  the transfer: {"transferId":…,"from":1,"to":2,"amountKobo":1000000,…}
       transferId is the transfers row's id
  201  with Idempotent-Replayed: true: a copy of a completed request, the
       same body as the first answer
  409  with Retry-After: a copy while the first is still in progress
  422  the key was used for a different request (refused; no money moves)
  422  a refusal, such as insufficient funds: stored under the key and
       replayed to every copy, never run again
  400  no Idempotency-Key
  5xx  something broke: nothing moved, and the key is free to retry

GET /transfers?key=KEY   (recommended)
  200 {"key":…,"status":"completed"|"in_progress",…} for a key it has,
  404 for a key it never got.

How the faults are thrown: through PostgreSQL and signals, with no hook in
your code. The grader locks Ada's account row (or holds a SHARE lock on
your own tables) until your server's session waits on it
(pg_blocking_pids), then kills (SIGKILL), pauses (SIGSTOP) or stops
(SIGTERM) your server, or cancels its statement (pg_cancel_backend); its
proxy loses replies after your server has sent them.

Checks (required unless marked):
`)
	for _, c := range Checks {
		req := ""
		if !c.Required {
			req = "  (recommended)"
		}
		fmt.Fprintf(&b, "  %-15s %s%s\n", c.Name, c.Title, req)
	}
	b.WriteString(`
Exit status: 0 when every required check passes, 1 when one fails, 2 for a
usage error, 3 when the server (or PostgreSQL) cannot be started.
`)
	return b.String()
}
