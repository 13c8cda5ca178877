package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

func TestExercises(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"ship, right", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship.sh", shipRight)}, exitOK, []string{"passed: every check holds"}},
		{"ship, an error on the second call", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship2.sh", shipErrsTwice)}, exitNotAsTaught,
			[]string{`NOT YET  line 2 prints "already shipped (ok)": printed "error: order is shipped"`, "ok       order 1 is shipped"}},
		{"ship, a cancelled order shipped", []string{"exercise", "ship", "--", "sh", learnerFile(t, "ship3.sh", shipAnything)}, exitNotAsTaught,
			[]string{"NOT YET  order 2 is still cancelled: the database has 0 such rows, expected 1"}},
		{"cleanup, right", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c.sql", "DELETE FROM idempotency_keys WHERE created_at < $1 AND (status = 'completed' OR locked_until < $2) RETURNING key")}, exitOK, []string{"passed"}},
		{"cleanup, deletes a key with a valid lock", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c2.sql", "DELETE FROM idempotency_keys WHERE created_at < $1 RETURNING key")}, exitNotAsTaught,
			[]string{"NOT YET  the old key whose lock is still valid is kept"}},
		{"cleanup, ignores the age", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c3.sql", "DELETE FROM idempotency_keys WHERE $1::timestamptz IS NOT NULL AND (status = 'completed' OR locked_until < $2) RETURNING key")}, exitNotAsTaught,
			[]string{"NOT YET  the key completed an hour ago is kept"}},
		{"cleanup, a statement that does not run", []string{"exercise", "cleanup", "--sql", learnerFile(t, "c4.sql", "DELETE FROM idempotency_keys WHERE created_at < $1 AND RETURNING key")}, exitNotAsTaught,
			[]string{"NOT YET  your statement runs: ERROR: syntax error"}},
		{"should-retry, right", []string{"exercise", "should-retry", "--", "sh", learnerFile(t, "r.sh", retryRight)}, exitOK, []string{"passed"}},
		{"should-retry, retries 422", []string{"exercise", "should-retry", "--", "sh", learnerFile(t, "r2.sh", retry422)}, exitNotAsTaught,
			[]string{`NOT YET  line 5 prints "422 false": printed "422 true"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, nil, c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, c.code, r.stdout, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("no %q in:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestExerciseUsageAndEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"exercise", "shipp"}, exitUsage, `unknown exercise "shipp" (did you mean ship?)`},
		{[]string{"exercise", "ship", "--sql", "x.sql"}, exitUsage, "ship is not a SQL exercise"},
		{[]string{"exercise", "cleanup", "--sql", "/nonexistent.sql"}, exitUsage, "--sql: open /nonexistent.sql"},
		{[]string{"exercise", "ship", "--", "/nonexistent/program"}, exitEnv, "cannot run /nonexistent/program"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
		oneLine(t, r)
	}
	r := cli(t, nil, "exercise", "cleanup")
	if r.code != 0 || !strings.Contains(r.stdout, "--sql FILE") || !strings.Contains(r.stdout, "DATABASE_URL") {
		t.Errorf("the task without a program: exit %d\n%s", r.code, r.stdout)
	}
}

// TestHintsOpenOneAtATime: each --hint shows one more, then points to
// the solution.
func TestHintsOpenOneAtATime(t *testing.T) { // not parallel: it sets HOME
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	first := cli(t, nil, "exercise", "ship", "--hint")
	second := cli(t, nil, "exercise", "ship", "--hint")
	if strings.Contains(first.stdout, "hint 2") || !strings.Contains(first.stdout, "hint 1 of 2") {
		t.Fatalf("first --hint:\n%s", first.stdout)
	}
	if !strings.Contains(second.stdout, "hint 2 of 2") || !strings.Contains(second.stdout, "--solution") {
		t.Fatalf("second --hint:\n%s", second.stdout)
	}
}
