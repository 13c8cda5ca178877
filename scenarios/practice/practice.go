package practice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Exercise is one of the lesson's practice tasks, checked on the learner's
// own program (any language: it gets DATABASE_URL in its environment) or,
// for a SQL task, on the learner's own statement. The lab prepares exactly
// the rows its prompt names, then checks what the program printed and
// what it left in the database, by the rules its prompt states: the
// prompt and the checker are one and the same text here.
type Exercise struct {
	Name    string
	Summary string // one line, for the list
	Task    string // what to write, in the lab's words

	// Prepared is what the lab puts in the fresh database before the
	// learner's program runs; PreparedSQL the same for --sql FILE (empty
	// when the task is not SQL).
	Prepared, PreparedSQL string
	// Want is what the lesson's own solution prints on the database
	// Prepared describes; WantSQL what the lab prints for the lesson's
	// statement under --sql.
	Want, WantSQL []string
	// Form, where set, is shown in the program's prompt in Want's place:
	// the shape of each line and not its value, for an exercise whose
	// printed lines are the answer itself (should-retry's true or false).
	Form []string
	// Rules say how the printed lines and the database are checked.
	Rules []string

	SQLArgs  []any    // the parameters a --sql statement gets ($1, $2, …); nil when the task is not SQL
	Hints    []string // opened one at a time
	Solution string   // the lab's own solution, in words
	// Tips explain an error a program commonly stops with, keyed by a
	// piece of its message.
	Tips map[string]string

	prepare func(ctx context.Context, db *pgxpool.Pool, m Mode) error
	// allow grants the learner's role what it needs of the lab's own
	// objects that prepare made (on the lab's server, after Confine).
	allow func(ctx context.Context, db *pgxpool.Pool, role string) error
	judge func(ctx context.Context, ev evidence, m Mode, printed []string) ([]Finding, error)
	own   func(ctx context.Context, db *pgxpool.Pool) (string, error)
}

// Mode is how the learner's work reaches the lab.
type Mode int

const (
	ProgramMode Mode = iota // a program, run with DATABASE_URL
	SQLMode                 // a statement, run by the lab with SQLArgs bound
)

// The clean-up exercise's clock: the lesson's nightly job, at 03:00.
var cleanupNow = lab.Nightly

func hoursAgo(h int) time.Time { return cleanupNow.Add(-time.Duration(h) * time.Hour) }

// The clean-up's guard for a program, whose clock the lab does not know:
// claimed long before any "24 hours ago", locked long after any "now".
var (
	guardCreated = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	guardLocked  = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Exercises, in the lesson's order. Their texts are written as
// paragraphs, a line each (a line that starts with spaces is an item of a
// list), and folded at Width when shown.
var Exercises = []*Exercise{
	{
		Name:    "ship",
		Summary: "mark an order shipped, so that a second call changes nothing and still succeeds",
		Task: "Write markShipped(orderId) for the table orders (id, status): shipping an order twice has the " +
			"effect of shipping it once, and the second call is still reported as a success; only a paid " +
			"order ships, a cancelled one gives an error. Your program calls it for orders 1, 1, 2 and 3, " +
			"in that order, and prints one line for each call.",
		Prepared: "the table orders (id integer PRIMARY KEY, status text NOT NULL) with the rows " +
			"(1, 'paid') and (2, 'cancelled'), and nothing else in it. They are there when your program " +
			"starts: leave out the CREATE TABLE and INSERT that the lesson's ship.js runs in PGlite.",
		Want: []string{"shipped", "already shipped (ok)", "error: order is cancelled", "error: order is missing"},
		Rules: []string{
			"your own words are fine: each line is read for what it says, by these words (letter case, " +
				"spacing and punctuation do not matter; blank lines are skipped):",
			"  line 1 (order 1): says it shipped: the word \"shipped\", without \"already\" or an error word",
			"  line 2 (order 1 again): a success that says it was already shipped: \"already\", no error word",
			"  line 3 (order 2): an error that says why: an error word and \"cancelled\"",
			"  line 4 (order 3): says there is no such order: \"missing\", \"not found\", \"no such\" or \"does not exist\"",
			"  (the error words: error, cannot, can't, not, fail, failed, refused, invalid, unable, and any " +
				"word ending in error or exception, such as ValueError)",
			"four lines, no more.",
			"the database afterwards: order 1 'shipped', order 2 still 'cancelled', and no order 3.",
			"a line must agree with the database: \"shipped\" while the database shows order 1 paid is not yet right.",
		},
		Hints: []string{
			"Make the change conditional on the state it starts from: an UPDATE … WHERE status = 'paid' that " +
				"returns the row it changed (RETURNING id) tells you whether this call did the work.",
			"Only when nothing changed do you need to look at the row, to tell 'already shipped' (a success) " +
				"from 'cancelled' or 'missing' (errors).",
		},
		Solution: "UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid' RETURNING id; " +
			"a row back means \"shipped\". Otherwise SELECT status FROM orders WHERE id = $1: 'shipped' means " +
			"\"already shipped (ok)\", any other status \"error: order is <status>\", no row \"error: order is missing\".",
		Tips: map[string]string{
			`relation "orders" already exists`: "the lab has created orders and its two rows already: leave out the CREATE TABLE and the INSERT",
			"duplicate key":                    "the lab has inserted orders 1 and 2 already: leave out the INSERT",
		},
		prepare: func(ctx context.Context, db *pgxpool.Pool, _ Mode) error {
			_, err := db.Exec(ctx, bank.OrdersSchema+"; INSERT INTO orders VALUES (1, 'paid'), (2, 'cancelled')")
			return err
		},
		judge: judgeShip,
		own: func(ctx context.Context, db *pgxpool.Pool) (string, error) {
			var out strings.Builder
			for _, id := range []int64{1, 1, 2, 3} {
				said, err := bank.MarkShipped(ctx, db, id)
				if err != nil {
					return out.String(), err
				}
				out.WriteString(said + "\n")
			}
			return out.String(), nil
		},
	},
	{
		Name:    "cleanup",
		Summary: "the nightly DELETE of old keys that never removes one with a valid lock",
		Task: "Write the nightly job's DELETE: remove idempotency keys older than 24 hours, but never one that " +
			"is still in progress with a valid lock. As a program (the lesson's cleanup.js): insert the " +
			"lesson's three keys, run your DELETE … RETURNING key, and print the line deleted: with the keys " +
			"it returned and the line kept: with the keys left. Or give the statement alone with --sql FILE.\n" +
			"The keys are in the table idempotency_keys, as the lesson's openBank() makes it:\n" +
			keyColumns,
		Prepared: "the bank's tables, as the lesson's openBank() makes them (accounts with Ada, Bola and Chidi, " +
			"no transfers, and idempotency_keys), and in idempotency_keys only one key, the lab's own:\n" +
			"  (2, 'old-locked')  in progress, created 2000-01-01, locked until 3000-01-01\n" +
			"It is old, but its lock is valid whatever clock your program uses: a right clean-up keeps it. " +
			"Your program inserts the lesson's three keys itself, as cleanup.js does (user 1, relative to " +
			"its own now): old-completed (completed, 48 hours old), new-completed (completed, 1 hour old), " +
			"old-stuck (in progress, 48 hours old, its lock expired 47 hours ago). Do not empty the table first.",
		PreparedSQL: "the lesson's three keys and a fourth, by the lesson's clock (now is 03:00 UTC, 24 Sep 2026):\n" +
			"  (1, 'old-completed') completed, 48 hours old\n" +
			"  (1, 'new-completed') completed, 1 hour old\n" +
			"  (1, 'old-stuck')     in progress, 48 hours old, its lock ended 47 hours ago\n" +
			"  (1, 'old-locked')    in progress, 48 hours old, locked until a minute from now\n" +
			"Your statement runs with $1 = 24 hours ago and $2 = now; the lab prints deleted: with the keys " +
			"it returned (so it must end with RETURNING key) and kept: with the keys left.",
		Want:    []string{"deleted: [ 'old-completed', 'old-stuck' ]", "kept: [ 'old-locked', 'new-completed' ]"},
		WantSQL: []string{"deleted: [ 'old-completed', 'old-stuck' ]", "kept: [ 'new-completed', 'old-locked' ]"},
		Rules: []string{
			"a line starting deleted and a line starting kept, each listing keys in any order, in any " +
				"brackets and quotes (Node's [ 'a' ], Python's ['a'] or plain a, b); no other lines.",
			"the lines must agree with the database, where the lab records each key deleted:",
			"  deleted: names exactly the keys your run deleted; kept: names the keys left (the lab's " +
				"old-locked may be left out of a program's kept: line).",
			"the database afterwards: old-completed and old-stuck are gone; new-completed and old-locked are " +
				"kept. A program must have inserted the three keys, under the lesson's names.",
		},
		SQLArgs: []any{hoursAgo(24), cleanupNow},
		Hints: []string{
			"Two conditions joined by AND: one about age (created_at against $1), one about whether the key " +
				"is safe to delete.",
			"A key is safe to delete when it is completed, or when its lock has expired (locked_until against $2).",
		},
		Solution: "DELETE FROM idempotency_keys WHERE created_at < $1 AND (status = 'completed' OR locked_until < $2) " +
			"RETURNING key: age alone is not enough, since a request may still hold a key it claimed long ago.",
		Tips: map[string]string{
			"duplicate key": "a key your program inserts is there already: the lab prepares only (2, 'old-locked'); does your program insert a key twice?",
			`relation "idempotency_keys" already exists`: "the lab's database has the bank's tables already, as openBank() makes them: leave out the CREATE TABLE",
		},
		prepare: prepareCleanup,
		allow:   allowRecord,
		judge:   judgeCleanup,
		own: func(ctx context.Context, db *pgxpool.Pool) (string, error) {
			if err := insertLessonKeys(ctx, db); err != nil {
				return "", err
			}
			deleted, err := idem.Prune(ctx, db, hoursAgo(24), cleanupNow)
			if err != nil {
				return "", err
			}
			kept, err := keyNames(ctx, db)
			if err != nil {
				return "", err
			}
			return "deleted: " + scenarios.NodeList(deleted) + "\nkept: " + scenarios.NodeList(kept) + "\n", nil
		},
	},
	{
		Name:    "should-retry",
		Summary: "which outcomes a client may retry",
		Task: "Write shouldRetry(outcome), where outcome is an HTTP status or \"network\". Your program prints, " +
			"for network, 201, 400, 409, 422, 429, 500 and 503 in that order, one line each: the outcome, " +
			"then true or false.",
		Want: []string{"network  true", "201      false", "400      false", "409      true", "422      false", "429      true", "500      true", "503      true"},
		Form: retryForm(),
		Rules: []string{
			"eight lines in the lesson's order, each the outcome then true or false (yes or no will do); " +
				"letter case, spacing, quotes and punctuation do not matter (Python's True is fine).",
			"each wrong answer is told why: a retry is right only when the same request may succeed later.",
		},
		Hints: []string{
			"Retry only what may succeed later: a network error, or an answer that says 'not now'.",
			"Not now: 409 (still in progress), 429 (too many requests) and every 5xx. A 4xx other than those " +
				"will fail the same way every time.",
		},
		Solution: "network → true; otherwise true for 409, 429 and any status of 500 or more, false for the rest. " +
			"Retrying is only safe at all because the request carries its idempotency key.",
		judge: judgeShouldRetry,
		own: func(ctx context.Context, _ *pgxpool.Pool) (string, error) {
			var out strings.Builder
			err := scenarios.PlayRetries(ctx, func(time.Duration) {}, func(outcome string, retried bool) {
				fmt.Fprintf(&out, "%-8s %t\n", outcome, retried)
			})
			return out.String(), err
		},
	},
}

// LookupExercise finds an exercise by name.
func LookupExercise(name string) (*Exercise, bool) {
	for _, e := range Exercises {
		if e.Name == name {
			return e, true
		}
	}
	return nil, false
}

// ExerciseNames lists the exercises' names in order.
func ExerciseNames() []string {
	names := make([]string, len(Exercises))
	for i, e := range Exercises {
		names[i] = e.Name
	}
	return names
}

// IsSQL reports whether the exercise can be checked on a statement alone.
func (e *Exercise) IsSQL() bool { return e.SQLArgs != nil }

// Prompt is everything the exercise checks, said before anything is
// checked: the task, the rows prepared, the lines the lesson's solution
// prints (or, where those lines are the answer, their form) and the
// rules, folded at Width. It names the modes given (both, when the task
// is only being shown).
func (e *Exercise) Prompt(modes ...Mode) string {
	var b strings.Builder
	title := render.Fold(fmt.Sprintf("exercise %s: %s", e.Name, e.Summary), Width, "  ")
	fmt.Fprintf(&b, "%s\n\n%s\n", strings.Join(title, "\n"), Fold(e.Task, "  "))
	for _, m := range modes {
		prepared, want, how := e.Prepared, e.Want, "your program"
		if m == SQLMode {
			if !e.IsSQL() {
				continue
			}
			prepared, want, how = e.PreparedSQL, e.WantSQL, "your statement (--sql FILE)"
		}
		if prepared == "" {
			fmt.Fprintf(&b, "\n%s\n", Fold(fmt.Sprintf("for %s, nothing is prepared: this exercise needs no database (DATABASE_URL is set all the same).", how), ""))
		} else {
			fmt.Fprintf(&b, "\n%s\n%s\n", Fold(fmt.Sprintf("for %s, the lab prepares a fresh database (DATABASE_URL) with", how), ""), Fold(prepared, "  "))
		}
		switch {
		case m == SQLMode:
			fmt.Fprintf(&b, "the lab prints, for the lesson's statement:\n%s\n", Fold(strings.Join(want, "\n"), "  "))
		case e.Form != nil:
			fmt.Fprintf(&b, "%s\n%s\n", Fold("your program prints lines of this form (which of true or false is for you to work out; once it has run, the checks say why where it is wrong):", ""), Fold(strings.Join(e.Form, "\n"), "  "))
		default:
			fmt.Fprintf(&b, "the lesson's solution prints here:\n%s\n", Fold(strings.Join(want, "\n"), "  "))
		}
	}
	fmt.Fprintf(&b, "\nwhat is checked:\n%s\n", Fold(strings.Join(e.Rules, "\n"), "  "))
	return b.String()
}

// Width is the widest line of an exercise's texts, in columns.
const Width = render.Width

// Fold shows s, paragraphs written a line each, with lead before every
// line, folded at Width at spaces: the later lines of a paragraph line up
// under its first, those of an item (a line that starts with spaces) two
// columns further in.
func Fold(s, lead string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		in := line[:len(line)-len(strings.TrimLeft(line, " "))]
		cont := lead + in
		if in != "" {
			cont += "  "
		}
		out = append(out, render.Fold(lead+line, Width, cont)...)
	}
	return strings.Join(out, "\n")
}

// keyColumns names every column of the key store's table (idem.Schema),
// for a program or a statement that must know them without psql (a test
// holds the two together).
const keyColumns = "  user_id bigint, key text       the primary key (a user's keys are their own)\n" +
	"  request_hash text              the request's fingerprint\n" +
	"  status text                    'in_progress' or 'completed'\n" +
	"  lock_id text                   the claim's lock, while in progress\n" +
	"  locked_until timestamptz       when that lock expires\n" +
	"  response_status integer        the stored answer, once completed\n" +
	"  response_body jsonb\n" +
	"  created_at timestamptz         when the key was claimed"

// retryForm is should-retry's lines as the prompt shows them: each
// outcome, and where its answer goes.
func retryForm() []string {
	form := make([]string, len(scenarios.RetryOutcomes))
	for i, o := range scenarios.RetryOutcomes {
		form[i] = fmt.Sprintf("%-8s <true or false>", o)
	}
	return form
}

// Tip explains a program's error output, if the exercise knows it.
func (e *Exercise) Tip(stderr string) string {
	keys := make([]string, 0, len(e.Tips))
	for k := range e.Tips {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.Contains(stderr, k) {
			return e.Tips[k]
		}
	}
	return ""
}
