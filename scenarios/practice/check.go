package practice

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

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
