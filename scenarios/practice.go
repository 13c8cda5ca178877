package scenarios

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/pgserver"
)

// Exercise is one of the lesson's practice tasks, checked on the learner's
// own program (any language: it gets DATABASE_URL in its environment) or,
// for a SQL task, on the learner's own statement. The lab prepares exactly
// the situation the task describes, then checks what the program printed
// and what it left in the database.
type Exercise struct {
	Name     string
	Summary  string   // one line, for the list
	Task     string   // what to write, in the lab's words
	Want     []string // the lines the program must print, in order
	Setup    func(ctx context.Context, db *pgxpool.Pool) error
	Checks   []RowCheck
	SQLArgs  []any    // the parameters a --sql statement gets ($1, $2, …); nil when the task is not SQL
	Hints    []string // opened one at a time
	Solution string   // the lab's own solution, in words
	Scenario string   // the scenario that runs the lab's solution
}

// RowCheck is one fact the database must show after the learner's run: a
// query that counts rows, and how many there must be.
type RowCheck struct {
	What  string
	Query string
	Want  int
}

// The clean-up exercise's clock: 03:00 UTC, the lesson's night.
var cleanupNow = time.Date(2026, 9, 24, 3, 0, 0, 0, time.UTC)

func hoursAgo(h int) time.Time { return cleanupNow.Add(-time.Duration(h) * time.Hour) }

// Exercises, in the lesson's order.
var Exercises = []*Exercise{
	{
		Name:    "ship",
		Summary: "mark an order shipped, so that a second call changes nothing and still succeeds",
		Task: "Write markShipped(orderId) for a table orders (id, status): shipping an order twice has the\n" +
			"effect of shipping it once and the second call still succeeds; only a paid order ships.\n" +
			"Your program marks orders 1, 1, 2 and 3 and prints what each call said.",
		Want: []string{"shipped", "already shipped (ok)", "error: order is cancelled", "error: order is missing"},
		Setup: func(ctx context.Context, db *pgxpool.Pool) error {
			_, err := db.Exec(ctx, bank.OrdersSchema+"; INSERT INTO orders VALUES (1, 'paid'), (2, 'cancelled')")
			return err
		},
		Checks: []RowCheck{
			{"order 1 is shipped", "SELECT count(*) FROM orders WHERE id = 1 AND status = 'shipped'", 1},
			{"order 2 is still cancelled", "SELECT count(*) FROM orders WHERE id = 2 AND status = 'cancelled'", 1},
			{"no order 3 was made up", "SELECT count(*) FROM orders WHERE id = 3", 0},
		},
		Hints: []string{
			"Make the change conditional on the state it starts from: an UPDATE … WHERE status = 'paid' that\nreturns the row it changed tells you whether this call did the work.",
			"Only when nothing changed do you need to look at the row, to tell 'already shipped' (a success)\nfrom 'cancelled' or 'missing' (errors).",
		},
		Solution: "UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid' RETURNING id;\n" +
			"a row back means \"shipped\". Otherwise SELECT status FROM orders WHERE id = $1: 'shipped' means\n" +
			"\"already shipped (ok)\", any other status \"error: order is <status>\", no row \"error: order is missing\".",
		Scenario: "ship",
	},
	{
		Name:    "cleanup",
		Summary: "the nightly DELETE of old keys that never removes one with a valid lock",
		Task: "Write the nightly job's DELETE: remove idempotency keys older than 24 hours, but never one that\n" +
			"is still in progress with a valid lock. $1 is 24 hours ago and $2 is now (03:00 UTC, 24 Sep 2026).\n" +
			"Run it as --sql FILE, or as a program that prints deleted: [...] and kept: [...].",
		Want: []string{"deleted: [ 'old-completed', 'old-stuck' ]", "kept: [ 'new-completed', 'old-locked' ]"},
		Setup: func(ctx context.Context, db *pgxpool.Pool) error {
			_, err := db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
				(1, 'old-completed', 'h', 'completed', NULL, NULL, $1),
				(1, 'new-completed', 'h', 'completed', NULL, NULL, $2),
				(1, 'old-stuck', 'h', 'in_progress', 'lock-1', $3, $1),
				(1, 'old-locked', 'h', 'in_progress', 'lock-2', $4, $1)`,
				hoursAgo(48), hoursAgo(1), hoursAgo(47), cleanupNow.Add(time.Minute))
			return err
		},
		Checks: []RowCheck{
			{"the completed key from two days ago is gone", "SELECT count(*) FROM idempotency_keys WHERE key = 'old-completed'", 0},
			{"the stuck key, whose lock expired long ago, is gone", "SELECT count(*) FROM idempotency_keys WHERE key = 'old-stuck'", 0},
			{"the key completed an hour ago is kept", "SELECT count(*) FROM idempotency_keys WHERE key = 'new-completed'", 1},
			{"the old key whose lock is still valid is kept", "SELECT count(*) FROM idempotency_keys WHERE key = 'old-locked'", 1},
		},
		SQLArgs: []any{hoursAgo(24), cleanupNow},
		Hints: []string{
			"Two conditions joined by AND: one about age (created_at against $1), one about whether the key\nis safe to delete.",
			"A key is safe to delete when it is completed, or when its lock has expired (locked_until against $2).",
		},
		Solution: "DELETE FROM idempotency_keys WHERE created_at < $1 AND (status = 'completed' OR locked_until < $2)\n" +
			"RETURNING key: age alone is not enough, since a request may still hold a key it claimed long ago.",
		Scenario: "cleanup",
	},
	{
		Name:    "should-retry",
		Summary: "which outcomes a client may retry",
		Task: "Write shouldRetry(outcome), where outcome is an HTTP status or \"network\". Your program prints,\n" +
			"for network, 201, 400, 409, 422, 429, 500 and 503 in that order, the outcome and true or false.",
		Want: []string{"network true", "201 false", "400 false", "409 true", "422 false", "429 true", "500 true", "503 true"},
		Hints: []string{
			"Retry only what may succeed later: a network error, or an answer that says 'not now'.",
			"Not now: 409 (still in progress), 429 (too many requests) and every 5xx. A 4xx other than those\nwill fail the same way every time.",
		},
		Solution: "network → true; otherwise true for 409, 429 and any status of 500 or more, false for the rest.\n" +
			"Retrying is only safe at all because the request carries its idempotency key.",
		Scenario: "should-retry",
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

// Finding is one line of an exercise's report: a check, whether it
// passed, and what was expected and found when it did not.
type Finding struct {
	What   string
	Passed bool
	Detail string
}

// Attempt is how a learner's run went.
type Attempt struct {
	Findings []Finding
}

// Passed reports whether every check passed.
func (a Attempt) Passed() bool {
	for _, f := range a.Findings {
		if !f.Passed {
			return false
		}
	}
	return len(a.Findings) > 0
}

// CheckExercise prepares a fresh database for ex, lets run do the
// learner's work on it (given the database's URL; it returns what the
// learner's program printed), then checks the printed lines and the rows.
func CheckExercise(ctx context.Context, cluster *pgserver.Cluster, ex *Exercise, run func(ctx context.Context, dbURL string, db *pgxpool.Pool) (string, error)) (Attempt, error) {
	db, err := cluster.NewDatabase(ctx, "exercise_"+ex.Name)
	if err != nil {
		return Attempt{}, err
	}
	defer db.Drop(context.WithoutCancel(ctx))
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		return Attempt{}, err
	}
	defer pool.Close()
	if ex.Setup != nil {
		if err := ex.Setup(ctx, pool); err != nil {
			return Attempt{}, fmt.Errorf("preparing the exercise: %w", err)
		}
	}
	printed, err := run(ctx, db.URL, pool)
	var a Attempt
	var theirs *LearnerError
	switch {
	case errors.As(err, &theirs):
		a.Findings = append(a.Findings, Finding{What: "your statement runs", Detail: theirs.Error()})
	case err != nil:
		return Attempt{}, err
	default:
		a.Findings = append(a.Findings, comparePrinted(ex.Want, printed)...)
	}
	for _, c := range ex.Checks {
		var n int
		if err := pool.QueryRow(ctx, c.Query).Scan(&n); err != nil {
			return a, fmt.Errorf("checking %q: %w", c.What, err)
		}
		f := Finding{What: c.What, Passed: n == c.Want}
		if !f.Passed {
			f.Detail = fmt.Sprintf("the database has %d such rows, expected %d", n, c.Want)
		}
		a.Findings = append(a.Findings, f)
	}
	return a, nil
}

// LearnerError is the learner's own code failing: a finding to report,
// not a failure of the lab.
type LearnerError struct{ Err error }

func (e *LearnerError) Error() string { return e.Err.Error() }

// RunSQL runs a learner's statement with the exercise's parameters and
// prints, as a program would, the keys it returned and the keys left.
func RunSQL(ctx context.Context, pool *pgxpool.Pool, ex *Exercise, stmt string) (string, error) {
	// Bind as many parameters as the statement uses: a statement that
	// ignores $2 is wrong, and the checks will say how.
	used := 0
	for _, m := range paramRE.FindAllStringSubmatch(stmt, -1) {
		n, _ := strconv.Atoi(m[1])
		used = max(used, min(n, len(ex.SQLArgs)))
	}
	rows, err := pool.Query(ctx, stmt, ex.SQLArgs[:used]...)
	if err != nil {
		return "", &LearnerError{err}
	}
	deleted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", &LearnerError{fmt.Errorf("%w (it must return the keys it deleted: RETURNING key)", err)}
	}
	rows, err = pool.Query(ctx, "SELECT key FROM idempotency_keys ORDER BY key")
	if err != nil {
		return "", err
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	slices.Sort(deleted)
	return "deleted: " + nodeList(deleted) + "\nkept: " + nodeList(kept) + "\n", nil
}

// comparePrinted checks the printed lines against the wanted ones, line
// by line, forgiving what differs between languages: spacing, quotes and
// letter case.
func comparePrinted(want []string, printed string) []Finding {
	got := strings.Split(strings.TrimRight(printed, "\n"), "\n")
	var out []Finding
	for i, w := range want {
		f := Finding{What: fmt.Sprintf("line %d prints %q", i+1, w), Passed: true}
		switch {
		case i >= len(got) || strings.TrimSpace(got[i]) == "":
			f.Passed, f.Detail = false, "nothing was printed there"
		case canonical(got[i]) != canonical(w):
			f.Passed, f.Detail = false, fmt.Sprintf("printed %q", strings.TrimSpace(got[i]))
		}
		out = append(out, f)
	}
	if len(got) > len(want) {
		out = append(out, Finding{What: fmt.Sprintf("%d lines and no more", len(want)), Detail: fmt.Sprintf("also printed %q", got[len(want)])})
	}
	return out
}

var paramRE = regexp.MustCompile(`\$(\d+)`)

func canonical(s string) string {
	s = strings.ToLower(s)
	s = strings.NewReplacer("'", "", "\"", "", " ", "", "\t", "").Replace(s)
	return s
}
