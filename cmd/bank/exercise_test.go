package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/practice"
)

// unfolded is an exercise's report with each check on one line again:
// a check longer than 80 columns goes on under its words, 11 columns in.
func unfolded(report string) string {
	return strings.ReplaceAll(report, "\n           ", " ")
}

// learnerFile writes a learner's program or statement into a temp dir.
func learnerFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The learners' programs are shell scripts that talk to PostgreSQL with
// psql: any language will do, as long as it reads DATABASE_URL.
const shipRight = `#!/bin/sh
ship() {
  r=$(psql "$DATABASE_URL" -XAtq -c "UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid' RETURNING id")
  if [ -n "$r" ]; then echo shipped; return; fi
  s=$(psql "$DATABASE_URL" -XAtq -c "SELECT status FROM orders WHERE id = $1")
  if [ "$s" = shipped ]; then echo "already shipped (ok)"; else echo "error: order is ${s:-missing}"; fi
}
ship 1; ship 1; ship 2; ship 3
`

// shipOwnWords is right, in its own words.
const shipOwnWords = `#!/bin/sh
ship() {
  r=$(psql "$DATABASE_URL" -XAtq -c "UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid' RETURNING id")
  if [ -n "$r" ]; then echo "order $1 shipped"; return; fi
  s=$(psql "$DATABASE_URL" -XAtq -c "SELECT status FROM orders WHERE id = $1")
  case "$s" in
    shipped) echo "ok, already shipped";;
    "") echo "order $1 not found";;
    *) echo "cannot ship order $1: it is $s";;
  esac
}
ship 1; ship 1; ship 2; ship 3
`

// shipErrsTwice reports an error on the second call: not idempotent.
const shipErrsTwice = `#!/bin/sh
ship() {
  r=$(psql "$DATABASE_URL" -XAtq -c "UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid' RETURNING id")
  if [ -n "$r" ]; then echo shipped; return; fi
  s=$(psql "$DATABASE_URL" -XAtq -c "SELECT status FROM orders WHERE id = $1")
  echo "error: order is ${s:-missing}"
}
ship 1; ship 1; ship 2; ship 3
`

// shipAnything ships whatever it is given, cancelled orders too.
const shipAnything = `#!/bin/sh
for id in 1 1 2 3; do
  r=$(psql "$DATABASE_URL" -XAtq -c "UPDATE orders SET status = 'shipped' WHERE id = $id RETURNING id")
  if [ -n "$r" ]; then echo shipped; else echo "error: order is missing"; fi
done
`

// shipLies says the right words and does nothing.
const shipLies = `#!/bin/sh
printf 'shipped\nalready shipped (ok)\nerror: order is cancelled\nerror: order is missing\n'
`

// cleanupNoReturning deletes the right keys but prints none of them.
const cleanupNoReturning = `#!/bin/sh
psql "$DATABASE_URL" -XAtq -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
  (1, 'old-completed', 'h', 'completed', NULL, NULL, now() - interval '48 hours'),
  (1, 'new-completed', 'h', 'completed', NULL, NULL, now() - interval '1 hour'),
  (1, 'old-stuck', 'h', 'in_progress', 'lock-1', now() - interval '47 hours', now() - interval '48 hours');
DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours' AND (status = 'completed' OR locked_until < now());
SQL
echo "deleted: []"
echo "kept: $(psql "$DATABASE_URL" -XAtq -c "SELECT string_agg(key, ', ') FROM idempotency_keys")"
`

// crashes writes fifty lines to standard error and exits 3.
const crashes = `#!/bin/sh
i=1
while [ $i -le 50 ]; do echo "stack line $i" >&2; i=$((i + 1)); done
echo "error: duplicate key value violates unique constraint" >&2
exit 3
`

const retryRight = `#!/bin/sh
for o in network 201 400 409 422 429 500 503; do
  case $o in network|409|429|5*) echo "$o true";; *) echo "$o false";; esac
done
`

const retry422 = `#!/bin/sh
for o in network 201 400 409 422 429 500 503; do
  case $o in network|409|422|429|5*) echo "$o true";; *) echo "$o false";; esac
done
`

const lessonDelete = "DELETE FROM idempotency_keys WHERE created_at < $1 AND (status = 'completed' OR locked_until < $2) RETURNING key"

func TestExercises(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"ship, right", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship.sh", shipRight)}, exitcode.OK, []string{"passed: every check holds"}},
		{"ship, right in its own words", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship-own.sh", shipOwnWords)}, exitcode.OK,
			[]string{`ok       line 2 (order 1 again) succeeds and says it was already shipped: printed "ok, already shipped"`, "passed"}},
		{"ship, an error on the second call", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship2.sh", shipErrsTwice)}, exitcode.No,
			[]string{`NOT YET  line 2 (order 1 again) succeeds and says it was already shipped: printed "error: order is shipped": the second call must still succeed`, "ok       order 1 is 'shipped'"}},
		{"ship, a cancelled order shipped", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship3.sh", shipAnything)}, exitcode.No,
			[]string{"NOT YET  order 2 is still 'cancelled': the database shows order 2 'shipped': only a paid order may be shipped",
				`NOT YET  line 3 (order 2) is an error saying it is cancelled: printed "shipped": a cancelled order must give an error`}},
		{"ship, the right words and no work", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship4.sh", shipLies)}, exitcode.No,
			[]string{`NOT YET  line 1 (order 1) says it shipped: printed "shipped", but the database shows order 1 'paid'`,
				"NOT YET  order 1 is 'shipped': the database shows order 1 'paid'"}},
		{"cleanup, right", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c.sql", lessonDelete)}, exitcode.OK, []string{"passed"}},
		{"cleanup, deletes a key with a valid lock", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c2.sql", "DELETE FROM idempotency_keys WHERE created_at < $1 RETURNING key")}, exitcode.No,
			[]string{"NOT YET  old-locked (in progress, two days old, its lock still valid) is kept: your clean-up deleted it",
				"ok       the deleted: line names the keys the database shows deleted"}},
		{"cleanup, ignores the age", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c3.sql", "DELETE FROM idempotency_keys WHERE $1::timestamptz IS NOT NULL AND (status = 'completed' OR locked_until < $2) RETURNING key")}, exitcode.No,
			[]string{"NOT YET  new-completed (completed an hour ago) is kept: your clean-up deleted it"}},
		{"cleanup, a statement that does not run", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c4.sql", "DELETE FROM idempotency_keys WHERE created_at < $1 AND RETURNING key")}, exitcode.No,
			[]string{"NOT YET  your statement runs: ERROR: syntax error"}},
		{"cleanup, a statement without RETURNING", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c5.sql", strings.TrimSuffix(lessonDelete, " RETURNING key"))}, exitcode.No,
			[]string{"NOT YET  the deleted: line names the keys the database shows deleted: the database shows old-completed and old-stuck deleted, but your statement returned no key: end it with RETURNING key",
				"ok       old-completed (completed, two days old) is deleted: the database shows it deleted"}},
		{"cleanup, a program that prints no RETURNING rows", []string{"exercise", "cleanup", "--", "sh", learnerFile(t, "c6.sh", cleanupNoReturning)}, exitcode.No,
			[]string{`NOT YET  the deleted: line names the keys the database shows deleted: the database shows old-completed and old-stuck deleted, but your program printed "deleted: []": print the keys your DELETE returned (RETURNING key)`,
				"ok       the kept: line", "ok       old-completed (completed, two days old) is deleted", "ok       old-locked"}},
		{"a program that fails shows its error whole", []string{"exercise", "cleanup", "--", "sh", learnerFile(t, "crash.sh", crashes)}, exitcode.No,
			[]string{"NOT YET  your program runs to the end: it exited with status 3", "your program's standard error, the last 40 lines:\n  stack line 12\n",
				"  stack line 50\n  error: duplicate key value violates unique constraint\n", "that is: a key your program inserts is there already"}},
		{"should-retry, right", []string{"exercise", "should-retry", "--", "sh", learnerFile(t, "r.sh", retryRight)}, exitcode.OK, []string{"passed"}},
		{"should-retry, retries 422", []string{"exercise", "should-retry", "--", "sh", learnerFile(t, "r2.sh", retry422)}, exitcode.No,
			[]string{`NOT YET  line 5 (422) says false: printed "422 true": 422 means the bank refused the request itself (too little money, a frozen account, or a key already used for another request): the same request fails the same way every time`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, nil, c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, c.code, r.stdout, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(unfolded(r.stdout), w) {
					t.Errorf("no %q in:\n%s", w, r.stdout)
				}
			}
			if strings.Contains(r.stdout, "stack line 11\n") {
				t.Errorf("more than 40 lines of standard error shown:\n%s", r.stdout)
			}
		})
	}
}

// TestExercisePromptSaysWhatIsChecked: without a program, and at the top
// of every run, the prompt shows the rows prepared, the lines the
// lesson's solution prints and the rules they are read by.
func TestExercisePromptSaysWhatIsChecked(t *testing.T) {
	t.Parallel()
	for _, ex := range practice.Exercises {
		r := cli(t, nil, "exercise", ex.Name)
		if r.code != 0 || !strings.Contains(r.stdout, "DATABASE_URL") {
			t.Errorf("%s without a program: exit %d\n%s", ex.Name, r.code, r.stdout)
		}
		shown := append(slices.Clone(ex.Want), "the lesson's solution prints", "what is checked")
		if ex.Form != nil { // the lines are the answers: their form only
			shown = append(slices.Clone(ex.Form), "lines of this form", "what is checked")
			for _, w := range ex.Want {
				if strings.Contains(r.stdout, w) {
					t.Errorf("%s: the prompt gives the answer %q away:\n%s", ex.Name, w, r.stdout)
				}
			}
		}
		for _, w := range shown {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: the prompt lacks %q:\n%s", ex.Name, w, r.stdout)
			}
		}
		if ex.IsSQL() != strings.Contains(r.stdout, "--sql FILE") {
			t.Errorf("%s: --sql is offered wrongly:\n%s", ex.Name, r.stdout)
		}
	}
	r := cli(t, nil, "exercise", "ship", "--", "sh", learnerFile(t, "ship.sh", shipOwnWords))
	top, _, ok := strings.Cut(r.stdout, "== checking")
	if !ok || !strings.Contains(top, "already shipped (ok)") || !strings.Contains(top, "(1, 'paid') and (2, 'cancelled')") || !strings.Contains(top, `"already"`) {
		t.Errorf("the run does not begin with the prompt:\n%s", r.stdout)
	}
	r = cli(t, nil, "exercise", "cleanup", "--sql", learnerFile(t, "c.sql", lessonDelete))
	top, _, _ = strings.Cut(r.stdout, "== checking")
	if !strings.Contains(top, "(1, 'old-locked')") || strings.Contains(top, "(2, 'old-locked')") {
		t.Errorf("a --sql run must show what --sql prepares, only:\n%s", top)
	}
}

// TestExerciseSolutions: --solution runs the lab's own solution and
// checks it as a learner's is, with none of the bank's money invariants,
// which mean nothing for these exercises.
func TestExerciseSolutions(t *testing.T) {
	t.Parallel()
	for _, ex := range practice.Exercises {
		r := cli(t, nil, "exercise", ex.Name, "--solution")
		if r.code != 0 || !strings.Contains(r.stdout, "checked as yours is:") || strings.Contains(r.stdout, "NOT YET") {
			t.Errorf("%s --solution: exit %d\n%s%s", ex.Name, r.code, r.stdout, r.stderr)
		}
		for _, bad := range []string{"total stays", "₦", "invariants", "balances match"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("%s --solution says %q:\n%s", ex.Name, bad, r.stdout)
			}
		}
	}
}

func TestExerciseUsageAndEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"exercise", "shipp"}, exitcode.Usage, `unknown exercise "shipp" (did you mean ship?)`},
		{[]string{"exercise", "ship", "--sql", "x.sql"}, exitcode.Usage, "ship is not a SQL exercise"},
		{[]string{"exercise", "cleanup", "--sql", "/nonexistent.sql"}, exitcode.Usage, "--sql: open /nonexistent.sql"},
		{[]string{"exercise", "ship", "--", "/nonexistent/program"}, exitcode.Env, "cannot run /nonexistent/program"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
		oneLine(t, r)
	}
}

// TestExerciseOutputIsBounded: a program that prints without end is
// stopped once past the limit, with one line saying so, and is not
// checked (package program's tests bound what the lab holds of it).
func TestExerciseOutputIsBounded(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "exercise", "ship", "--", "sh", "-c", "yes")
	if r.code != exitcode.No || !strings.Contains(r.stderr, "your program printed more than 1 MiB; it was stopped") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	oneLine(t, r)
	if strings.Contains(r.stdout, "== checking") {
		t.Errorf("a stopped program is checked all the same:\n%s", r.stdout)
	}
}

// TestHintsOpenOneAtATime: each --hint shows one hint, the next each
// time, remembered per exercise in the user's cache directory.
func TestHintsOpenOneAtATime(t *testing.T) { // not parallel: it sets HOME
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	first := cli(t, nil, "exercise", "ship", "--hint")
	if !strings.Contains(first.stdout, "hint 1 of 2") || strings.Contains(first.stdout, "hint 2") || strings.Contains(first.stdout, "Only when nothing changed") {
		t.Fatalf("first --hint:\n%s", first.stdout)
	}
	other := cli(t, nil, "exercise", "cleanup", "--hint")
	if !strings.Contains(other.stdout, "hint 1 of 2") || strings.Contains(other.stdout, "hint 2") {
		t.Fatalf("another exercise's first --hint:\n%s", other.stdout)
	}
	second := cli(t, nil, "exercise", "ship", "--hint")
	if !strings.Contains(second.stdout, "hint 2 of 2") || strings.Contains(second.stdout, "hint 1") || !strings.Contains(second.stdout, "--solution") {
		t.Fatalf("second --hint:\n%s", second.stdout)
	}
	third := cli(t, nil, "exercise", "ship", "--hint")
	if !strings.Contains(third.stdout, "hint 2 of 2") || !strings.Contains(third.stdout, "seen all 2 hints") {
		t.Fatalf("third --hint:\n%s", third.stdout)
	}
	cache, _ := os.UserCacheDir()
	for _, name := range []string{"ship", "cleanup"} {
		if _, err := os.Stat(filepath.Join(cache, "bank", "hints", name)); err != nil {
			t.Errorf("the hints of %s are not remembered in the cache directory: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "bank")); err == nil {
		t.Error("hints remembered in the config directory")
	}
}

// Lesson solutions, ported to real drivers (testdata/exercises).

// needRunner finds a language runtime for the ported solutions, or skips
// loudly; with BANK_REQUIRE_NODE set (CI), a missing one fails instead.
func needRunner(t *testing.T, what string, find func() (string, error)) string {
	t.Helper()
	path, err := find()
	if err != nil {
		if os.Getenv("BANK_REQUIRE_NODE") != "" {
			t.Fatalf("%s cannot run, and this run requires it (%v)", what, err)
		}
		pgtest.Skip(t, "%s NOT CHECKED (%v)", strings.ToUpper(what), err)
	}
	return path
}

func exercisesDir(t *testing.T, lang string) string {
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "exercises", lang))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// findNode is node with testdata/exercises/node's one package, pg, which
// make test installs with npm ci.
func findNode(dir string) func() (string, error) {
	return func() (string, error) {
		node, err := exec.LookPath("node")
		if err != nil {
			return "", fmt.Errorf("%w: install nodejs and npm", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg", "package.json")); err != nil {
			return "", fmt.Errorf("%w: make test runs npm ci in %s", err, dir)
		}
		return node, nil
	}
}

// findPython is a python3 with psycopg 3: Debian's, then the first on PATH.
func findPython() (string, error) {
	tried := []string{}
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import psycopg").Run() == nil {
			return path, nil
		}
		tried = append(tried, path)
	}
	return "", fmt.Errorf("no python3 with psycopg 3 (tried %v): install python3-psycopg", tried)
}

// portedCase is one ported program and what bank exercise must say of it.
type portedCase struct {
	exercise, file string
	pass           bool
	want           []string // lines of the report, for a wrong one: the line it fails on
}

func checkPorted(t *testing.T, runner, dir string, cases []portedCase) {
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			r := cli(t, nil, "exercise", c.exercise, "--", runner, filepath.Join(dir, c.file))
			if c.pass != (r.code == exitcode.OK) || !c.pass && r.code != exitcode.No {
				t.Fatalf("exit %d, want it to pass: %t\n%s%s", r.code, c.pass, r.stdout, r.stderr)
			}
			_, report, _ := strings.Cut(r.stdout, "== checking")
			for _, w := range c.want {
				if !strings.Contains(unfolded(report), w) {
					t.Errorf("no %q in:\n%s", w, report)
				}
			}
			if !c.pass && strings.Count(report, "NOT YET") != 1 {
				t.Errorf("want exactly one failing check:\n%s", report)
			}
		})
	}
}

// TestExerciseLessonSolutionsNode: the lesson's own ship.js, cleanup.js
// and should-retry.js, with PGlite swapped for pg and run as written,
// pass; each wrong one fails on the line it should.
func TestExerciseLessonSolutionsNode(t *testing.T) {
	t.Parallel()
	dir := exercisesDir(t, "node")
	node := needRunner(t, "the Node.js exercise solutions", findNode(dir))
	checkPorted(t, node, dir, []portedCase{
		{"ship", "ship.js", true, []string{`ok       line 2 (order 1 again) succeeds and says it was already shipped: printed "already shipped (ok)"`}},
		{"cleanup", "cleanup.js", true, []string{`printed "deleted: [ 'old-completed', 'old-stuck' ]"`, `printed "kept: [ 'old-locked', 'new-completed' ]"`}},
		{"should-retry", "should-retry.js", true, []string{`printed "network  true"`}},
		{"ship", "ship-twice.js", false, []string{`NOT YET  line 2 (order 1 again) succeeds and says it was already shipped: printed "shipped": that reads as if this call shipped it again`}},
		{"cleanup", "cleanup-no-lock-check.js", false, []string{"NOT YET  old-locked (the lab's: in progress, old, its lock still valid) is kept: your clean-up deleted it"}},
		{"should-retry", "should-retry-422.js", false, []string{`NOT YET  line 5 (422) says false: printed "422      true": 422 means`, "fails the same way every time"}},
	})
}

// TestExerciseLessonSolutionsPython: the same, ported to psycopg 3.
func TestExerciseLessonSolutionsPython(t *testing.T) {
	t.Parallel()
	python := needRunner(t, "the Python exercise solutions", findPython)
	dir := exercisesDir(t, "python")
	checkPorted(t, python, dir, []portedCase{
		{"ship", "ship.py", true, nil},
		{"cleanup", "cleanup.py", true, []string{`printed "deleted: ['old-completed', 'old-stuck']"`}},
		{"should-retry", "should_retry.py", true, []string{`printed "network  True"`}},
		{"ship", "ship-twice.py", false, []string{`NOT YET  line 2 (order 1 again)`, `printed "shipped"`}},
		{"cleanup", "cleanup-no-lock-check.py", false, []string{"NOT YET  old-locked (the lab's: in progress, old, its lock still valid) is kept: your clean-up deleted it"}},
		{"should-retry", "should_retry_422.py", false, []string{`NOT YET  line 5 (422) says false`, "fails the same way every time"}},
	})
}

// TestLearnersSQLIsNotSuperuser: on the lab's own server the learner's
// statement runs as a role that owns its database and nothing else, so
// COPY … TO PROGRAM (a shell as the server's account) and server file
// reads are refused with a permission error, also from inside the lab's
// own trigger (scenarios/practice tests the other ways in).
func TestLearnersSQLIsNotSuperuser(t *testing.T) {
	t.Parallel()
	cache := pgtest.CacheDir(t)
	for _, stmt := range []string{"COPY (SELECT 1) TO PROGRAM 'id'", "SELECT pg_read_file('PG_VERSION')"} {
		cmd := command(t, cache, "exercise", "cleanup", "--sql", learnerFile(t, "evil.sql", stmt))
		out, err := cmd.CombinedOutput()
		if code := exitOf(err); code != exitcode.No || !strings.Contains(string(out), "SQLSTATE 42501") {
			t.Errorf("%s: exit %d, want 1 and a permission error (42501):\n%s", stmt, code, out)
		}
	}

	// Nor through the lab's own code: a DO block gives the key column a
	// type of its own, with an assignment cast that the lab's trigger,
	// which records each key deleted, runs. The cast tries COPY … TO
	// PROGRAM, then says who it ran as. When that trigger ran as the lab
	// (SECURITY DEFINER), it ran as the postgres account, a superuser.
	dir, err := os.MkdirTemp("", "bank-escape-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil { // the server's account may write here
		t.Fatal(err)
	}
	escape := `DO $do$ BEGIN
  CREATE TYPE public.k AS (v text);
  CREATE FUNCTION public.k_text(x public.k) RETURNS text LANGUAGE plpgsql AS $f$
  DECLARE copied text := 'ran';
  BEGIN
    BEGIN
      EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'touch ` + dir + `/escaped');
    EXCEPTION WHEN OTHERS THEN copied := 'refused';
    END;
    RAISE EXCEPTION 'the cast ran as % (superuser %), COPY TO PROGRAM %', current_user,
      (SELECT rolsuper::text FROM pg_catalog.pg_roles WHERE rolname = current_user), copied;
  END $f$;
  CREATE CAST (public.k AS text) WITH FUNCTION public.k_text(public.k) AS ASSIGNMENT;
  ALTER TABLE public.idempotency_keys ALTER COLUMN key TYPE public.k USING ROW(key)::public.k;
  DELETE FROM public.idempotency_keys WHERE (key).v = 'old-completed';
END $do$`
	out, err := command(t, cache, "exercise", "cleanup", "--sql", learnerFile(t, "escape.sql", escape)).CombinedOutput()
	if code := exitOf(err); code != exitcode.No || !strings.Contains(unfolded(string(out)), "(superuser false), COPY TO PROGRAM refused") {
		t.Errorf("the cast inside the lab's trigger: exit %d, want 1 and the cast refused as the learner's role:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "escaped")); err == nil {
		t.Errorf("COPY … TO PROGRAM ran inside the lab's trigger:\n%s", out)
	}
}

// TestExerciseSQLIsBounded: a statement that runs past the bound is
// stopped, with one line that names the bound and what to look for, exit
// 1, and is not checked. Not parallel: it shortens the bound, which no
// parallel test then reads.
func TestExerciseSQLIsBounded(t *testing.T) {
	defer func(d time.Duration) { sqlTimeout = d }(sqlTimeout)
	sqlTimeout = 1500 * time.Millisecond
	r := cli(t, nil, "exercise", "cleanup", "--sql", learnerFile(t, "sleep.sql", "DO $$ BEGIN SET statement_timeout = 0; PERFORM pg_sleep(60); END $$"))
	if r.code != exitcode.No || !strings.HasPrefix(r.stderr, "bank: your SQL ran longer than 1.5 s and was stopped (statement_timeout): ") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	oneLine(t, r)
	if strings.Contains(r.stdout, "== checking") {
		t.Errorf("a stopped statement is checked all the same:\n%s", r.stdout)
	}
}
