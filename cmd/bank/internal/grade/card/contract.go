package card

import (
	"fmt"
	"strings"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Contract is what bank grade expects of a server: the lesson's API.
//
// It is long because it is the contract's text, section by section in the
// order a learner reads it; splitting it would scatter one document.
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
  Request (the grader sends exactly this shape):
    Authorization: Bearer token-ada | token-bola | token-chidi
                   (users 1, 2, 3; user N owns account N)
    Idempotency-Key: 16 to 64 letters, digits, - or _ (the grader's keys
                   look like grade-plain-0000001), sent bare, unquoted,
                   as the lesson writes it; or quoted, as the IETF draft
                   writes it ("grade-plain-0000001"), if your server
                   refuses the bare form: before its first check the
                   grader sends Bola's refused request (more than she
                   has) with its key bare, and where that is a 400 and
                   the same request quoted is not, every key of the run
                   goes quoted. Either form passes.
    Content-Type: application/json
    Body: {"from":1,"to":2,"amountKobo":1000000}  (the same request may
          come again with its keys in another order, or other spacing)

  Answers. R: required, checked; r: recommended, checked by a check marked
  (recommended); -: not checked, but the lesson's API does it.
  R 201  a transfer made: a JSON object with at least
         {"transferId":N,"from":1,"to":2,"amountKobo":1000000}, where
         transferId is the id of the transfers row it inserted
  R      the same key and the same request again (a retry, or a copy):
         the first answer's status and body again, never a second
         transfer; a refusal (below) is replayed the same way
  r      on a replay, the header Idempotent-Replayed: true
  R 409  a copy that arrives while the first is still being processed
         (recommended: the lesson's); the grader retries it
         (Retry-After: 1 is the lesson's, and the grader honours it, but
         does not require it). Also accepted, as the lesson's own run
         shows ("either way the money moves once"): a copy made to wait,
         in PostgreSQL or in your code, that then gets the first's
         stored answer, or takes the key over once its lock has expired
         and makes the transfer itself. Either way money moves once, and
         a first request that lost its lock must not commit its transfer
         (with a claim not committed before the work, nothing is left to
         take over, and pause is n/a). A request that took longer than
         its lock and rolled back its own work may answer 409 too, even
         the first under its key: the grader resends it, as a client does
  R 422  the same key with a different request: refused, no money moves
         (any 4xx but 409 and 429 is accepted; 422 is the lesson's)
  R 422  a business refusal (insufficient funds, a frozen account, …):
         the request's real answer, stored under its key and replayed to
         every copy, never run again (any 4xx but 409 and 429 is accepted)
  R 400  no Idempotency-Key
  R 5xx  something broke (the grader cancels your statement to see it):
         nothing moved, nothing stored under the key, so a retry with the
         same key makes the transfer
  - 401  no or unknown bearer token
  - 404  an account that does not exist or is not the user's
  Error bodies: any JSON. The lesson's is {"error":"code","message":"…"};
  RFC 9457 problem details (application/problem+json, {"type","title",
  "status","detail"}) are fine too, with the lesson's members (as bank
  serve sends them) or without. The grader reads statuses, the
  Idempotent-Replayed header and transferId, compares a replayed body with
  the first as JSON values (key order and spacing do not count), and
  quotes an error's code and message in its evidence, from either shape.

  What the checks require of where and how keys are kept:
  R  keys scoped to their user: (user, key), not key alone
  R  a fingerprint of the request (method, path and body with its keys
     sorted) kept with the key; a different request under it is refused
  R  claimed atomically (INSERT … ON CONFLICT DO NOTHING, or the like):
     of many copies at once, exactly one runs
  R  kept where every instance sees it and a restart does not lose it:
     two instances share one database, and a copy may reach either
  R  the answer stored in the same database transaction as the transfer
     (checked from PostgreSQL's record of your writes: the top-level
     transaction that inserted the transfers row, a savepoint in it
     included, must also write the key's state: a row naming the key,
     the row its claim wrote, or the transfers row carrying the key;
     then your server is killed at its first write after that commit,
     and the retry must not transfer again)
  R  a claim's lock expires after LOCK_TTL_MS (not before, not long
     after), so that a retry after a crash takes the key over and makes
     the transfer
  R  a fencing token: completing a key checks, inside the transfer's
     transaction, that this request still holds the lock; a server that
     lost its lock to a takeover rolls its transfer back

The standards, point by point (bank help standards has the lab's own
table: what bank serve does, and where it departs on purpose):
  R  the key in one of two forms: bare (the lesson's) or an RFC 8941
     String (the IETF draft's, §2.1); the grader sends the one your
     server takes
  -  both forms taken as one key ("k" and k are the same request), and
     two Idempotency-Key lines, or a value that is not one key, refused
     with a 400 of its own (bank serve: idempotency_key_invalid)
  -  every error body RFC 9457 problem details (any JSON is accepted)
  R  a failure of the database (the outage check): a 5xx, never stored
     under the key, so that the retry makes the transfer
  -  a database that cannot be reached: 503 with Retry-After, and a
     health check (bank serve: GET /healthz) that answers 503 too
  -  a 201 with Location: /transfers/{id}, and GET /transfers/{id}: the
     transfer to its owner, 404 to anyone else
  r  GET /transfers?key=, below (the lookup check)

GET /transfers?key=KEY   (r: the lookup check)
  200 {"key":"…","status":"completed"|"in_progress", …} for a key of the
      user's; a completed one may add "responseStatus" and "responseBody"
  404 for a key the user never sent, another user's key included

How the faults are thrown: through PostgreSQL and signals, with no hook in
your code. The grader locks Ada's account row (or holds a SHARE lock on
your own tables, or holds your transactions at their first write, as
its record of your writes lets it) until your server's session waits on it
(pg_blocking_pids), then kills (SIGKILL), pauses (SIGSTOP) or stops
(SIGTERM) your server, or cancels its statement (pg_cancel_backend); its
proxy loses replies after your server has sent them.

Checks (required unless marked):
`)
	for _, c := range grade.Checks {
		req := ""
		if !c.Required {
			req = "  (recommended)"
		}
		for _, l := range render.Fold(fmt.Sprintf("  %-15s %s%s", c.Name, c.Title, req), render.Width, strings.Repeat(" ", 18)) {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString(`
Exit status: 0 when every required check passes, 1 when one fails, 2 for a
usage error, 3 when the server (or PostgreSQL) cannot be started.
`)
	return b.String()
}
