package practice

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
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/pgserver"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/render"
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

// The clean-up exercise's clock: 03:00 UTC, the lesson's night.
var cleanupNow = time.Date(2026, 9, 24, 3, 0, 0, 0, time.UTC)

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

// Finding is one line of an exercise's report: a check, whether it
// passed, and what was expected and found.
type Finding struct {
	What   string
	Passed bool
	Detail string
	line   bool // about the printed lines, not the database
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

// Ran is how the learner's program or statement ran: Printed is what it
// printed (the lines to check), and Failed, if set, says why it did not
// run to the end. A program that failed still has what it printed and
// what it left checked.
type Ran struct {
	Printed string
	Failed  *Finding

	err error // a statement's error, behind Failed (RunSQL)
}

// CheckExercise prepares a fresh database for ex in mode m, lets run do
// the learner's work on it (given the database's URL and a pool on it),
// then checks the printed lines and the rows by the exercise's rules.
func CheckExercise(ctx context.Context, clones *pgserver.Clones, ex *Exercise, m Mode, run func(ctx context.Context, dbURL string, db *pgxpool.Pool) (Ran, error)) (Attempt, error) {
	db, err := clones.NewDatabase(ctx, "exercise_"+ex.Name)
	if err != nil {
		return Attempt{}, err
	}
	defer db.Drop(context.WithoutCancel(ctx))
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		return Attempt{}, err
	}
	defer pool.Close()
	if ex.prepare != nil {
		if err := ex.prepare(ctx, pool, m); err != nil {
			return Attempt{}, fmt.Errorf("preparing the exercise: %w", err)
		}
	}
	// The learner's code gets a role that owns this database and nothing
	// else (on the lab's own server; a --database-url is used as given).
	url := db.URL
	if clones.IsThrowaway() {
		if url, err = db.Confine(ctx); err != nil {
			return Attempt{}, err
		}
		if ex.allow != nil {
			if err := ex.allow(ctx, pool, db.Role()); err != nil {
				return Attempt{}, fmt.Errorf("preparing the exercise: %w", err)
			}
		}
	}
	ran, err := run(ctx, url, pool)
	if err != nil {
		return Attempt{}, err
	}
	var a Attempt
	if ran.Failed != nil {
		a.Findings = append(a.Findings, *ran.Failed)
	}
	ev, err := openEvidence(ctx, url, db.URL)
	if err != nil {
		return a, err
	}
	defer ev.close(context.WithoutCancel(ctx))
	findings, err := ex.judge(ctx, ev, m, printedLines(ran.Printed))
	if err != nil {
		return a, err
	}
	if ran.Failed != nil && strings.TrimSpace(ran.Printed) == "" {
		// Nothing printed because it stopped: say so once, not per line.
		findings = slices.DeleteFunc(findings, func(f Finding) bool { return f.line })
	}
	a.Findings = append(a.Findings, findings...)
	return a, nil
}

// evidence is where a judge reads what a run left, so that nothing the
// learner's code made runs with the lab's rights. The learner owns the
// database and its tables, so a table the lab reads may have become a view
// that calls the learner's function, a column may have the learner's type,
// with the learner's casts and operators, and a schema named after the
// lab's role would come first on the lab's search_path: read as the lab,
// any of these ran as a superuser. So the learner's tables are read
// through the learner's own role (whatever they hook in then runs as
// them), and the lab's own record (schema bank_lab, which the learner may
// only add to) as the lab, with every name qualified and search_path
// pinned in the connection's start-up, which outranks anything the
// learner set for the database (ALTER DATABASE … SET).
type evidence struct {
	tables bank.DB // the learner's database, as the learner's role
	record bank.DB // the lab's record in it, as the lab
	conns  []*pgx.Conn
}

// openEvidence connects to the learner's database as the learner
// (learnerURL) and as the lab (labURL). The learner's code may have made
// its own role unusable (a new password, say): then reading its tables
// fails, and the findings say so.
func openEvidence(ctx context.Context, learnerURL, labURL string) (evidence, error) {
	var ev evidence
	if c, err := pgx.Connect(ctx, learnerURL); err != nil {
		ev.tables = unreadable{fmt.Errorf("the lab could not connect as your code's role to read what it left: %w", err)}
	} else {
		ev.tables, ev.conns = c, append(ev.conns, c)
	}
	cfg, err := pgx.ParseConfig(labURL)
	if err != nil {
		return ev, err
	}
	cfg.RuntimeParams["search_path"] = "pg_catalog, pg_temp"
	cfg.RuntimeParams["local_preload_libraries"] = ""
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		ev.close(ctx)
		return ev, err
	}
	ev.record, ev.conns = c, append(ev.conns, c)
	return ev, nil
}

func (e evidence) close(ctx context.Context) {
	for _, c := range e.conns {
		c.Close(ctx)
	}
}

// unreadable is a database that cannot be read: every query fails with err.
type unreadable struct{ err error }

func (u unreadable) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, u.err
}
func (u unreadable) Query(context.Context, string, ...any) (pgx.Rows, error) { return nil, u.err }
func (u unreadable) QueryRow(context.Context, string, ...any) pgx.Row        { return errRow{u.err} }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// OwnSolution runs the lab's own solution on the database CheckExercise
// prepared, printing what a program would: pass it as CheckExercise's run,
// and the lab's solution is checked exactly as a learner's is.
func (e *Exercise) OwnSolution(ctx context.Context, _ string, db *pgxpool.Pool) (Ran, error) {
	out, err := e.own(ctx, db)
	return Ran{Printed: out}, err
}

// printedLines is what a program printed, a line each, trimmed, without
// the blank lines.
func printedLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// words splits a printed line into lower-case words (letters, digits,
// apostrophes), for the checks that read a line for its meaning.
func words(s string) []string {
	return wordRE.FindAllString(strings.ToLower(strings.ReplaceAll(s, "’", "'")), -1)
}

var wordRE = regexp.MustCompile(`[a-z0-9]+(?:'[a-z]+)?`)

var errorWords = []string{"error", "errors", "err", "cannot", "can't", "cant", "not", "isn't", "won't", "fail", "failed", "fails", "failure", "refused", "refuse", "invalid", "unable", "rejected"}

func hasWord(ws []string, prefixes ...string) bool {
	for _, w := range ws {
		for _, p := range prefixes {
			if strings.HasPrefix(w, p) {
				return true
			}
		}
	}
	return false
}

// hasErrorWord: one of errorWords, or a word such as ValueError or
// OrderException.
func hasErrorWord(ws []string) bool {
	for _, w := range ws {
		if slices.Contains(errorWords, w) || strings.HasSuffix(w, "error") || strings.HasSuffix(w, "exception") {
			return true
		}
	}
	return false
}

// saysMissing: the line says there is no such order.
func saysMissing(line string) bool {
	s := strings.Join(words(line), " ")
	for _, p := range []string{"missing", "not found", "no such", "not exist", "doesn't exist", "does not exist", "nonexistent", "non existent", "unknown", "no order"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// lineFinding checks printed line i by rule, which says what is wrong
// with it ("" when right).
func lineFinding(printed []string, i int, what string, rule func(line string) string) Finding {
	f := Finding{What: fmt.Sprintf("line %d %s", i+1, what), line: true}
	if i >= len(printed) {
		f.Detail = "nothing was printed there"
		return f
	}
	if why := rule(printed[i]); why != "" {
		sep := ": "
		if strings.HasPrefix(why, "but ") {
			sep = ", "
		}
		f.Detail = fmt.Sprintf("printed %q%s%s", printed[i], sep, why)
		return f
	}
	f.Passed, f.Detail = true, fmt.Sprintf("printed %q", printed[i])
	return f
}

func noMoreLines(printed []string, n int, what string) []Finding {
	if len(printed) <= n {
		return nil
	}
	return []Finding{{What: what, Detail: fmt.Sprintf("also printed %q: print only those lines", printed[n]), line: true}}
}

// judgeShip reads each line for its meaning, then makes sure it agrees
// with the orders the database shows.
func judgeShip(ctx context.Context, ev evidence, _ Mode, printed []string) ([]Finding, error) {
	status := map[int]string{} // "" when there is no such order
	var id int
	var st string
	rows, err := ev.tables.Query(ctx, "SELECT id, status FROM orders WHERE id IN (1, 2, 3)")
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&id, &st}, func() error {
			status[id] = st
			return nil
		})
	}
	if err != nil {
		return cannotRead(ctx, "the orders table", err)
	}
	return shipFindings(status, printed), nil
}

// cannotRead is the finding for tables the judge could not read: the
// learner's code may have changed them in any way (a column's type, a
// view in a table's place, a function that fails), and that is theirs to
// fix, not a failure of the lab's; only a run that was stopped (ctx) is
// an error.
func cannotRead(ctx context.Context, what string, err error) ([]Finding, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return []Finding{{What: what + " can be read", Detail: err.Error()}}, nil
}

// shipFindings judges the printed lines and the orders' statuses (by id;
// absent when there is no such order).
func shipFindings(status map[int]string, printed []string) []Finding {
	shows := func(id int) string {
		if s, ok := status[id]; ok {
			return fmt.Sprintf("the database shows order %d %s", id, quote(s))
		}
		return fmt.Sprintf("the database has no order %d", id)
	}
	// What a line claims must be what the database shows.
	agrees := func(id int, want string) string {
		if status[id] == want {
			return ""
		}
		return "but " + shows(id)
	}
	var out []Finding
	out = append(out, lineFinding(printed, 0, "(order 1) says it shipped", func(l string) string {
		ws := words(l)
		switch {
		case hasErrorWord(ws):
			return "that reads as an error, but order 1 was paid: this call ships it and says so"
		case hasWord(ws, "already"):
			return `the first call is the one that ships order 1; "already" is for the second`
		case !hasWord(ws, "shipped"):
			return `say that it shipped (the word "shipped")`
		}
		return agrees(1, "shipped")
	}))
	out = append(out, lineFinding(printed, 1, "(order 1 again) succeeds and says it was already shipped", func(l string) string {
		ws := words(l)
		switch {
		case hasErrorWord(ws):
			return "the second call must still succeed: the order is shipped, as asked, so there is nothing wrong"
		case !hasWord(ws, "already") && hasWord(ws, "shipped"):
			return `that reads as if this call shipped it again: say it was already shipped (the word "already")`
		case !hasWord(ws, "already"):
			return `say it was already shipped (the word "already"), as a success`
		}
		return agrees(1, "shipped")
	}))
	out = append(out, lineFinding(printed, 2, "(order 2) is an error saying it is cancelled", func(l string) string {
		ws := words(l)
		switch {
		case !hasErrorWord(ws) && hasWord(ws, "shipped", "ok"):
			return "a cancelled order must give an error, not be shipped"
		case !hasErrorWord(ws):
			return "give an error: a line with an error word (error, cannot, not, failed, refused, …)"
		case !hasWord(ws, "cancel"):
			return `say why: the order is cancelled (the word "cancelled")`
		}
		return agrees(2, "cancelled")
	}))
	out = append(out, lineFinding(printed, 3, "(order 3) says there is no such order", func(l string) string {
		ws := words(l)
		switch {
		case !saysMissing(l) && hasWord(ws, "shipped", "ok") && !hasErrorWord(ws):
			return "there is no order 3, so there is nothing to ship"
		case !saysMissing(l):
			return `say that order 3 is missing ("missing", "not found", "no such order" or "does not exist")`
		}
		if _, ok := status[3]; ok {
			return "but " + shows(3)
		}
		return ""
	}))
	out = append(out, noMoreLines(printed, 4, "four lines and no more")...)

	row := func(what string, ok bool, why string) Finding {
		f := Finding{What: what, Passed: ok}
		if !ok {
			f.Detail = why
		}
		return f
	}
	out = append(out,
		row("order 1 is 'shipped'", status[1] == "shipped", shows(1)),
		row("order 2 is still 'cancelled'", status[2] == "cancelled", shows(2)+": only a paid order may be shipped"),
	)
	_, three := status[3]
	out = append(out, row("no order 3 was made up", !three, shows(3)+": markShipped must not make one"))
	return out
}

func quote(s string) string { return "'" + s + "'" }

// The clean-up's keys.
const (
	oldCompleted = "old-completed"
	newCompleted = "new-completed"
	oldStuck     = "old-stuck"
	oldLocked    = "old-locked"
)

var lessonKeys = []string{oldCompleted, newCompleted, oldStuck}

// keyAudit records every key inserted or deleted (and every TRUNCATE) in
// a schema of the lab's own, so the checks know what a run deleted, not
// only what it left.
//
// The trigger runs as whoever changes the keys (SECURITY INVOKER, the
// default): the learner's role, which may add rows to the record and do
// nothing else with it (allowRecord). It must never run as the lab: the
// learner owns idempotency_keys, and so its columns' types, casts and
// operators, and a function that runs as another role with those in
// scope hands the learner that role (a SECURITY DEFINER trigger here ran
// an assignment cast of the learner's, and COPY … TO PROGRAM in it, as the
// postgres account). Every name is qualified, pg_catalog's too, and
// search_path is pinned, so that nothing of the learner's is picked up by
// name either. The learner can drop the triggers, or add rows of their
// own: that fools the checks about their own run, and reaches nothing
// else.
const keyAudit = `
CREATE SCHEMA bank_lab;
CREATE TABLE bank_lab.key_events (id bigserial PRIMARY KEY, op text NOT NULL, user_id bigint, key text);
CREATE FUNCTION bank_lab.record_key() RETURNS trigger LANGUAGE plpgsql
  SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
    INSERT INTO bank_lab.key_events (op) VALUES ('T');
  ELSIF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
    INSERT INTO bank_lab.key_events (op, user_id, key) VALUES ('I', NEW.user_id, NEW.key);
  ELSE
    INSERT INTO bank_lab.key_events (op, user_id, key) VALUES ('D', OLD.user_id, OLD.key);
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION bank_lab.record_key() FROM PUBLIC;
CREATE TRIGGER bank_lab_keys AFTER INSERT OR DELETE ON public.idempotency_keys
  FOR EACH ROW EXECUTE FUNCTION bank_lab.record_key();
CREATE TRIGGER bank_lab_keys_truncate AFTER TRUNCATE ON public.idempotency_keys
  FOR EACH STATEMENT EXECUTE FUNCTION bank_lab.record_key();
`

// allowRecord lets the learner's role add rows to the lab's record of
// keys, which its statements do through keyAudit's trigger, and nothing
// more: no SELECT, UPDATE, DELETE or TRUNCATE.
func allowRecord(ctx context.Context, db *pgxpool.Pool, role string) error {
	r := pgx.Identifier{role}.Sanitize()
	_, err := db.Exec(ctx, "GRANT USAGE ON SCHEMA bank_lab TO "+r+"; GRANT INSERT ON TABLE bank_lab.key_events TO "+r+
		"; GRANT USAGE ON SEQUENCE bank_lab.key_events_id_seq TO "+r)
	return err
}

// insertLessonKeys inserts the lesson's three keys, by the lesson's clock.
func insertLessonKeys(ctx context.Context, db *pgxpool.Pool) error {
	_, err := db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
		(1, 'old-completed', 'h', 'completed', NULL, NULL, $1),
		(1, 'new-completed', 'h', 'completed', NULL, NULL, $2),
		(1, 'old-stuck', 'h', 'in_progress', 'lock-1', $3, $1)`,
		hoursAgo(48), hoursAgo(1), hoursAgo(47))
	return err
}

func prepareCleanup(ctx context.Context, db *pgxpool.Pool, m Mode) error {
	if m == SQLMode {
		if err := insertLessonKeys(ctx, db); err != nil {
			return err
		}
		if _, err := db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
			VALUES (1, 'old-locked', 'h', 'in_progress', 'lock-2', $1, $2)`, cleanupNow.Add(time.Minute), hoursAgo(48)); err != nil {
			return err
		}
	} else if _, err := db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
		VALUES (2, 'old-locked', 'h', 'in_progress', 'lock-2', $1, $2)`, guardLocked, guardCreated); err != nil {
		return err
	}
	_, err := db.Exec(ctx, keyAudit)
	return err
}

func keyNames(ctx context.Context, db bank.DB) ([]string, error) {
	rows, err := db.Query(ctx, "SELECT key FROM idempotency_keys ORDER BY key")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

type keyRow struct {
	status      string
	created     time.Time
	lockedUntil *time.Time
}

func (r keyRow) String() string {
	s := strings.ReplaceAll(r.status, "_", " ") + ", created " + r.created.UTC().Format("2006-01-02 15:04 UTC")
	if r.lockedUntil != nil {
		s += ", locked until " + r.lockedUntil.UTC().Format("2006-01-02 15:04 UTC")
	}
	return s
}

// judgeCleanup checks the keys the database shows deleted and kept, and
// that the two printed lines say the same.
func judgeCleanup(ctx context.Context, ev evidence, m Mode, printed []string) ([]Finding, error) {
	k := keyState{left: map[string]keyRow{}, inserted: map[string]bool{}, deleted: map[string]bool{}}
	left := k.left
	var keptNames []string
	var key string
	var r keyRow
	rows, err := ev.tables.Query(ctx, "SELECT key, status, created_at, locked_until FROM idempotency_keys ORDER BY key")
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&key, &r.status, &r.created, &r.lockedUntil}, func() error {
			if _, dup := left[key]; !dup {
				keptNames = append(keptNames, key)
			}
			left[key] = r
			return nil
		})
	}
	if err != nil {
		return cannotRead(ctx, "the idempotency_keys table", err)
	}
	var op string
	rows, err = ev.record.Query(ctx, "SELECT op, coalesce(key, '') FROM bank_lab.key_events ORDER BY id")
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&op, &key}, func() error {
			switch op {
			case "I":
				k.inserted[key] = true
			case "D":
				k.deleted[key] = true
			case "T":
				k.truncated = true
			}
			return nil
		})
	}
	if err != nil {
		return cannotRead(ctx, "the lab's record of deleted keys", err)
	}
	k.keptNames = keptNames
	return cleanupFindings(k, m, printed), nil
}

// keyState is what the clean-up's run did to the keys: the rows left, the
// names of those (in order), and what the lab's record shows inserted,
// deleted or truncated.
type keyState struct {
	left              map[string]keyRow
	keptNames         []string
	inserted, deleted map[string]bool
	truncated         bool
}

func cleanupFindings(k keyState, m Mode, printed []string) []Finding {
	left, keptNames, inserted, deletedEv, truncated := k.left, k.keptNames, k.inserted, k.deleted, k.truncated
	prepared := map[string]bool{oldLocked: true}
	if m == SQLMode {
		for _, k := range lessonKeys {
			prepared[k] = true
		}
	}
	existed := func(k string) bool { return prepared[k] || inserted[k] }
	var gone []string // what the run deleted, by the database
	for k := range deletedEv {
		if _, still := left[k]; !still {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	known := map[string]bool{}
	for k := range prepared {
		known[k] = true
	}
	for _, k := range slices.Concat(lessonKeys, keptNames, gone) {
		known[k] = true
	}
	for k := range inserted {
		known[k] = true
	}

	var out []Finding
	// The two lines.
	find := func(word string) (int, []string) {
		for i, l := range printed {
			if ws := words(l); len(ws) > 0 && ws[0] == word {
				var names []string
				seen := map[string]bool{} // a set: a statement may leave 100,000 keys
				for _, t := range keyTokenRE.FindAllString(l, -1) {
					if known[t] && !seen[t] {
						seen[t] = true
						names = append(names, t)
					}
				}
				slices.Sort(names)
				return i, names
			}
		}
		return -1, nil
	}
	di, dNames := find("deleted")
	f := Finding{What: "the deleted: line names the keys the database shows deleted", line: true}
	switch {
	case di < 0:
		f.Detail = fmt.Sprintf("no line starts with deleted: the database shows %s deleted; print the keys your DELETE returned (RETURNING key) as deleted: [...]", listOrNone(gone))
	case !slices.Equal(dNames, gone) && m == SQLMode:
		f.Detail = fmt.Sprintf("the database shows %s deleted, but your statement returned %s", listOrNone(gone), listOrNone(dNames))
		if len(dNames) == 0 {
			f.Detail += ": end it with RETURNING key"
		}
	case !slices.Equal(dNames, gone):
		f.Detail = fmt.Sprintf("the database shows %s deleted, but your program printed %q", listOrNone(gone), clip(printed[di]))
		if len(dNames) == 0 && len(gone) > 0 {
			f.Detail += ": print the keys your DELETE returned (RETURNING key)"
		} else {
			f.Detail += ": print exactly the keys your DELETE returned (RETURNING key)"
		}
	default:
		f.Passed, f.Detail = true, fmt.Sprintf("printed %q", clip(printed[di]))
	}
	out = append(out, f)
	ki, kNames := find("kept")
	f = Finding{What: "the kept: line names the keys the database still has", line: true}
	withoutGuard := slices.DeleteFunc(slices.Clone(keptNames), func(k string) bool { return k == oldLocked })
	switch {
	case ki < 0:
		f.Detail = fmt.Sprintf("no line starts with kept: the database still has %s; print them as kept: [...] (SELECT key FROM idempotency_keys)", listOrNone(keptNames))
	case slices.Equal(kNames, keptNames) || m == ProgramMode && slices.Equal(kNames, withoutGuard):
		f.Passed, f.Detail = true, fmt.Sprintf("printed %q", clip(printed[ki]))
	default:
		f.Detail = fmt.Sprintf("the database still has %s, but your program printed %q: print the keys left after your DELETE (SELECT key FROM idempotency_keys)", listOrNone(keptNames), clip(printed[ki]))
	}
	out = append(out, f)
	for i, l := range printed {
		if i != di && i != ki {
			out = append(out, Finding{What: "the two lines and no others", Detail: fmt.Sprintf("also printed %q: print only deleted: and kept:", clip(l)), line: true})
			break
		}
	}

	// The keys.
	never := func(k string) string {
		return fmt.Sprintf("your program never inserted %s: insert the lesson's three keys, %s, %s and %s, first, as cleanup.js does", k, oldCompleted, newCompleted, oldStuck)
	}
	mustGo := func(k, what, why string) {
		f := Finding{What: k + " (" + what + ") is deleted"}
		r, still := left[k]
		switch {
		case still:
			f.Detail = fmt.Sprintf("the database still has it (%s): %s", r, why)
		case !existed(k):
			f.Detail = never(k)
		default:
			f.Passed, f.Detail = true, "the database shows it deleted"
		}
		out = append(out, f)
	}
	mustStay := func(k, what, why string) {
		f := Finding{What: k + " (" + what + ") is kept"}
		_, still := left[k]
		switch {
		case still:
			f.Passed, f.Detail = true, "the database still has it"
		case !existed(k):
			f.Detail = never(k)
		case deletedEv[k] || !truncated:
			f.Detail = "your clean-up deleted it: " + why
		default:
			f.Detail = "the table was emptied (TRUNCATE): delete only what the rule allows, and leave the rest: " + why
		}
		out = append(out, f)
	}
	mustGo(oldCompleted, "completed, two days old", "a completed key older than 24 hours must go")
	mustGo(oldStuck, "in progress, two days old, its lock expired", "its lock expired long ago, so no request can still hold it")
	mustStay(newCompleted, "completed an hour ago", "it is an hour old, and keys are kept for 24 hours")
	guard := "the lab's: in progress, old, its lock still valid"
	if m == SQLMode {
		guard = "in progress, two days old, its lock still valid"
	}
	mustStay(oldLocked, guard, "it is old, but its lock is still valid, so a request may still be working on it")
	return out
}

var keyTokenRE = regexp.MustCompile(`[A-Za-z0-9_-]+`)

func listOrNone(keys []string) string {
	switch n := len(keys); {
	case n == 0:
		return "no key"
	case n == 1:
		return keys[0]
	case n > maxListed:
		return strings.Join(keys[:maxListed], ", ") + fmt.Sprintf(" and %d more", n-maxListed)
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
}

// maxListed is how many keys a finding names; a statement may leave
// 100,000, and a finding is one line.
const maxListed = 10

// clip shortens a printed line quoted in a finding to its first 200
// characters.
func clip(line string) string {
	if r := []rune(line); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return line
}

// retryWant is each outcome's right answer and why: the reason is told
// when the answer given is the other one.
var retryWant = map[string]struct {
	retry bool
	why   string
}{
	"network": {true, "a network error leaves the outcome unknown: the request may never have arrived, or may have been done; a retry may succeed, and the idempotency key makes it safe (a done transfer is replayed, not repeated)"},
	"201":     {false, "201 means it is done: there is nothing left to succeed, and a retry would only have the stored answer replayed"},
	"400":     {false, "400 means the request itself is wrong (here: no valid Idempotency-Key): the same request fails the same way every time, so a retry cannot succeed"},
	"409":     {true, "409 means the first copy of this request is still in progress: a moment later it may be done, and with the same key the retry gets its stored answer, not a second transfer"},
	"422":     {false, "422 means the bank refused the request itself (too little money, a frozen account, or a key already used for another request): the same request fails the same way every time, so a retry cannot succeed"},
	"429":     {true, "429 means not now (too many requests): later it may succeed, and the idempotency key makes the retry safe"},
	"500":     {true, "a 5xx is the server failing, not the request: it may succeed later, and the idempotency key makes the retry safe"},
	"503":     {true, "a 5xx is the server failing, not the request (503: unavailable for now): it may succeed later, and the idempotency key makes the retry safe"},
}

func judgeShouldRetry(_ context.Context, _ evidence, _ Mode, printed []string) ([]Finding, error) {
	var out []Finding
	for i, outcome := range scenarios.RetryOutcomes {
		want := retryWant[outcome]
		out = append(out, lineFinding(printed, i, fmt.Sprintf("(%s) says %t", outcome, want.retry), func(l string) string {
			ws := words(l)
			// The first outcome the line names must be this one.
			named := slices.IndexFunc(ws, func(w string) bool { return w == "network" || len(w) == 3 && strings.Trim(w, "0123456789") == "" })
			if named < 0 || ws[named] != outcome {
				return fmt.Sprintf("this line is for %s: the outcomes, one a line, in the order %s", outcome, strings.Join(scenarios.RetryOutcomes, ", "))
			}
			yes := slices.ContainsFunc(ws[named+1:], func(w string) bool { return w == "true" || w == "yes" })
			no := slices.ContainsFunc(ws[named+1:], func(w string) bool { return w == "false" || w == "no" })
			switch {
			case yes == no:
				return "after the outcome print true or false"
			case yes != want.retry:
				return want.why
			}
			return ""
		}))
	}
	out = append(out, noMoreLines(printed, len(scenarios.RetryOutcomes), "eight lines and no more")...)
	return out, nil
}

// RunSQL runs a learner's statement with the exercise's parameters and
// prints, as a program would, the keys it returned and the keys left.
func RunSQL(ctx context.Context, db bank.DB, ex *Exercise, stmt string) (Ran, error) {
	// Bind as many parameters as the statement uses: a statement that
	// ignores $2 is wrong, and the checks will say how.
	used := 0
	for _, m := range paramRE.FindAllStringSubmatch(stmt, -1) {
		n, _ := strconv.Atoi(m[1])
		used = max(used, min(n, len(ex.SQLArgs)))
	}
	failed := func(err error) (Ran, error) {
		return Ran{Failed: &Finding{What: "your statement runs", Detail: err.Error()}, err: err}, nil
	}
	rows, err := db.Query(ctx, stmt, ex.SQLArgs[:used]...)
	if err != nil {
		return failed(err)
	}
	var deleted []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return failed(err)
		}
		if len(vals) != 1 {
			rows.Close()
			return failed(fmt.Errorf("it returns %d columns: return the key alone (RETURNING key)", len(vals)))
		}
		k, ok := vals[0].(string)
		if !ok {
			rows.Close()
			return failed(fmt.Errorf("it returns %T, not the key: RETURNING key", vals[0]))
		}
		deleted = append(deleted, k)
	}
	if err := rows.Err(); err != nil {
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) {
			return failed(err)
		}
		return Ran{}, err
	}
	kept, err := keyNames(ctx, db)
	if err != nil {
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) { // what the statement did to its session or the table
			return failed(fmt.Errorf("after it ran, the keys left could not be read: %w", err))
		}
		return Ran{}, err
	}
	slices.Sort(deleted)
	return Ran{Printed: "deleted: " + scenarios.NodeList(deleted) + "\nkept: " + scenarios.NodeList(kept) + "\n"}, nil
}

var paramRE = regexp.MustCompile(`\$(\d+)`)

// SQLTimeout bounds a learner's statement (--sql), as a program is
// bounded by its own 30 s.
const SQLTimeout = 30 * time.Second

// TooLong is a learner's statement that the lab stopped: it ran longer
// than Limit, or waited longer than Limit for a lock (Lock).
type TooLong struct {
	Limit time.Duration
	Lock  bool
}

func (e *TooLong) Error() string {
	if e.Lock {
		return fmt.Sprintf("your SQL waited longer than %g s for a lock and was stopped (lock_timeout): look for a LOCK or pg_advisory_lock it waits on: the clean-up needs no lock of its own", e.Limit.Seconds())
	}
	return fmt.Sprintf("your SQL ran longer than %g s and was stopped (statement_timeout): a DELETE of this exercise's four rows takes milliseconds, so look for a pg_sleep, or a loop that never ends", e.Limit.Seconds())
}

// RunLearnerSQL runs a learner's statement (--sql) as RunSQL does, on a
// session of its own on the database at url (the learner's role), whose
// statement_timeout and idle_in_transaction_session_timeout are limit,
// and lock_timeout a third of it: set in the session's start-up, so
// that the statement can change them for later statements, not for
// itself. A statement stopped by one of them is a *TooLong error; so is
// one still running limit and 5 s later (the session is then closed,
// and its backend ends with the database, which is dropped after the
// run). Nothing of the session outlives the call.
func RunLearnerSQL(ctx context.Context, url string, ex *Exercise, stmt string, limit time.Duration) (Ran, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return Ran{}, err
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	cfg.RuntimeParams["statement_timeout"] = ms(limit)
	cfg.RuntimeParams["lock_timeout"] = ms(limit / 3)
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = ms(limit)
	sqlCtx, cancel := context.WithTimeout(ctx, limit+5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(sqlCtx, cfg)
	if err != nil {
		return Ran{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ran, err := RunSQL(sqlCtx, conn, ex, stmt)
	var pgErr *pgconn.PgError
	switch {
	case ctx.Err() != nil:
		return Ran{}, ctx.Err()
	case sqlCtx.Err() != nil:
		return Ran{}, &TooLong{Limit: limit}
	case errors.As(ran.err, &pgErr) && pgErr.Code == "57014" && strings.Contains(pgErr.Message, "statement timeout"):
		return Ran{}, &TooLong{Limit: limit}
	case errors.As(ran.err, &pgErr) && pgErr.Code == "55P03" && strings.Contains(pgErr.Message, "lock timeout"):
		return Ran{}, &TooLong{Limit: limit / 3, Lock: true}
	}
	return ran, err
}
