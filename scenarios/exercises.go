package scenarios

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The lesson's three exercises.

// Ship: not every operation needs a key. Marking an order shipped names
// its target state, so doing it twice is doing it once; the conditional
// UPDATE says whether this call made the change, and only when it did not
// is the row read to say why.
// nightly is lab.Nightly, for the stories whose lab shadows the package.
var nightly = lab.Nightly

var Ship = &lab.Scenario{
	Name:     "ship",
	Summary:  "exercise: a naturally idempotent update, mark an order shipped",
	Section:  "Practice: naturally idempotent",
	Prevents: "a repeated call shipping twice or reading as a failure, with no idempotency key at all: the state it names makes a repeat harmless",
	Explain: map[string]string{
		"mark shipped": "markShipped runs one conditional UPDATE: SET status = 'shipped' WHERE id = $1 AND status = 'paid'. If it changed a row, this call shipped the order. If not, one SELECT says why: already shipped (a success, said again), or cancelled or missing (an error).",
	},
	Here: map[lab.Check]string{
		lab.TotalKept:    "no money moves: the exercise's orders sit beside the bank",
		lab.LedgerAgrees: "no transfer is made",
		lab.OnceEach:     "order 1 shipped, however often it was marked; cancelled order 2 never",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Exec(ctx, bank.OrdersSchema+"; INSERT INTO orders VALUES (1, 'paid'), (2, 'cancelled')")
		lab.Effect("order 1 shipped", 1, orderIs(lab, 1, "shipped"))
		lab.Effect("order 2, cancelled, shipped", 0, orderIs(lab, 2, "shipped"))
		lab.Say("naturally idempotent: an operation that has the same effect however many times it runs, with no idempotency key. \"Mark the order shipped\" names the state the order ends in, so a second call finds it there and changes nothing; \"move ₦10,000\" does not, which is why a transfer needs a key.")
		lab.Step("mark shipped")
		lab.Say("order 1 is paid and order 2 cancelled; there is no order 3. markShipped is called for orders 1, 1 again, 2 and 3:")
		for _, id := range []int64{1, 1, 2, 3} {
			said, err := bank.MarkShipped(ctx, lab.DB, id)
			lab.Must(err)
			lab.Say("%s", said)
		}
		return nil
	},
}

func orderIs(lab *lab.Lab, id int64, status string) func(context.Context) (int, error) {
	return lab.Counting("SELECT count(*) FROM orders WHERE id = $1 AND status = $2", id, status)
}

// Cleanup: the nightly job over three keys, as in the exercise: a
// completed key from two days ago, a completed one from an hour ago, and
// a stuck one from two days ago whose lock expired long since.
var Cleanup = &lab.Scenario{
	Name:     "cleanup",
	Summary:  "exercise: delete keys older than 24 hours, never one with a valid lock",
	Section:  "Practice: clean up old keys",
	Prevents: "a key table that grows for ever, without deleting a key that a request still holds",
	Explain: map[string]string{
		"the nightly job, on the exercise's three keys":      "DELETE FROM idempotency_keys WHERE created_at < now - 24 h AND (status = 'completed' OR locked_until < now).",
		"the same job, with a key whose lock is still valid": "A key can be old and still held: a retry that took its expired lock over is working under it now. Deleting it would let a third copy claim the key afresh and transfer again.",
	},
	Here: map[lab.Check]string{
		lab.TotalKept:    "no money moves: the job only deletes keys",
		lab.LedgerAgrees: "no transfer is made",
		lab.OnceEach:     "each key deleted or kept as the rule says",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		now := nightly
		ago := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
		lab.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
			(1, 'old-completed', 'h', 'completed', NULL, NULL, $1),
			(1, 'new-completed', 'h', 'completed', NULL, NULL, $2),
			(1, 'old-stuck', 'h', 'in_progress', 'lock-1', $3, $1)`, ago(48), ago(1), ago(47))
		kept := func(key string) func(context.Context) (int, error) {
			return lab.Counting("SELECT count(*) FROM idempotency_keys WHERE key = $1", key)
		}
		lab.Effect("old-completed kept", 0, kept("old-completed"))
		lab.Effect("new-completed kept", 1, kept("new-completed"))
		lab.Effect("old-stuck kept", 0, kept("old-stuck"))
		lab.Effect("old-running kept", 1, kept("old-running"))
		lab.Say("an idempotency key is a row of idempotency_keys: completed (its answer stored), or in progress under a lock that expires (locked_until), so that a retry may take a crashed request's key over.")
		lab.Part("the nightly job, on the exercise's three keys")
		lab.Say("at 03:00 the job deletes the keys older than 24 hours that are completed or whose lock has expired, of three: old-completed (48 h old), new-completed (1 h old), and old-stuck (in progress for 48 h, its lock expired 47 h ago).")
		deleted, err := idem.Prune(ctx, lab.DB, ago(24), now)
		lab.Must(err)
		lab.Say("deleted: %s", NodeList(deleted))
		lab.Say("kept: %s", NodeList(keys(ctx, lab)))

		lab.Part("the same job, with a key whose lock is still valid")
		lab.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
			(1, 'old-running', 'h', 'in_progress', 'lock-2', $1, $2)`, now.Add(20*time.Second), ago(48))
		lab.Say("a fourth key, set up as one a retry took over 10 s ago: old-running, made 48 h ago, in progress, its lock valid 20 s more")
		deleted, err = idem.Prune(ctx, lab.DB, ago(24), now)
		lab.Must(err)
		lab.Say("the job again at 03:00: deleted: %s; kept: %s", NodeList(deleted), NodeList(keys(ctx, lab)))
		return nil
	},
}

// ShouldRetry: which outcomes may a client retry? Each outcome is played
// for real: a loopback server answers the first attempt with it (or drops
// the connection, for "network"), and the lab's client decides. The table
// is what the client did.
var ShouldRetry = &lab.Scenario{
	Name:     "should-retry",
	Summary:  "exercise: which outcomes the client retries, played through the real client",
	Section:  "Practice: which responses to retry?",
	Prevents: "retries that cannot help, and giving up on what may succeed later",
	Here: map[lab.Check]string{
		lab.TotalKept:    "no money moves: a test server answers, not the bank",
		lab.LedgerAgrees: "no transfer is made",
		lab.OnceEach:     "nothing is counted: the table is what the client did",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Step("play each outcome")
		lab.Say("for each outcome, a test server answers the client's first attempt with it (\"network\": it closes the connection instead), and the client decides: true if it tried again.")
		err := PlayRetries(ctx, lab.Clock.Advance, func(outcome string, retried bool) {
			// Drawn once the client has decided: the first attempt, its
			// outcome, and the second attempt if the client made one.
			lab.Arrow(phone, "server", "POST /transfers (attempt 1)", "")
			answer, mark := outcome, map[string]string{"network": "lost", "409": "in-progress", "400": "refused", "422": "refused", "429": "refused", "500": "error", "503": "error"}[outcome]
			if outcome == "network" {
				answer = "no answer: connection closed"
			}
			lab.Arrow("server", phone, answer, mark)
			if retried {
				lab.Arrow(phone, "server", "POST /transfers (attempt 2)", "")
				lab.Arrow("server", phone, "201", "")
			}
			lab.Say("%-8s %t", outcome, retried)
		})
		if err != nil {
			return err
		}
		lab.Say("why: a network error, 409 (a copy still in progress), 429 (too many requests for now), 500 and 503 (the server failed, or is down for now) may succeed later, so the client tries again, with the same key; 201 is done; 400 and 422 say the request itself is wrong, and would fail the same way every time.")
		return nil
	},
}

// RetryOutcomes are the exercise's outcomes, in the lesson's order.
var RetryOutcomes = []string{"network", "201", "400", "409", "422", "429", "500", "503"}

// PlayRetries plays each outcome for real: a loopback server answers the
// first attempt with it (or drops the connection, for "network"), and the
// lab's client decides whether to try again; say hears what it did. The
// client's back-off waits are not slept but given to wait.
func PlayRetries(ctx context.Context, wait func(time.Duration), say func(outcome string, retried bool)) error {
	var mu sync.Mutex
	var first string
	attempts := 0
	stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		n, outcome := attempts, first
		mu.Unlock()
		if n > 1 {
			w.WriteHeader(http.StatusCreated)
			return
		}
		if outcome == "network" {
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		code := map[string]int{"201": 201, "400": 400, "409": 409, "422": 422, "429": 429, "500": 500, "503": 503}[outcome]
		w.WriteHeader(code)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: stub, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Shutdown(context.WithoutCancel(ctx))
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &client.Client{
		BaseURL: "http://" + ln.Addr().String(), Token: "token-ada", MaxAttempts: 2,
		HTTP:  &http.Client{Transport: transport, Timeout: 10 * time.Second},
		Sleep: func(_ context.Context, d time.Duration) error { wait(d); return nil },
	}
	for _, outcome := range RetryOutcomes {
		mu.Lock()
		first, attempts = outcome, 0
		mu.Unlock()
		if _, err := c.Send(ctx, "should-retry-key-0001", []byte(`{}`)); err != nil {
			return err
		}
		mu.Lock()
		retried := attempts > 1
		mu.Unlock()
		say(outcome, retried)
	}
	return nil
}
