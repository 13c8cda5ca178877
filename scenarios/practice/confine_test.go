package practice

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// probeSQL makes public.probe(tag), the learner's spy: it tries COPY … TO
// PROGRAM (a shell as the server's account), which touches dir/tag if it
// runs, then raises an error that says who it ran as, so that whatever
// called it (the learner's statement, the lab's trigger, the lab's
// judge) fails with that line, and the line reaches the findings.
func probeSQL(dir string) string {
	return `CREATE FUNCTION public.probe(tag text) RETURNS boolean LANGUAGE plpgsql AS $probe$
DECLARE copied text := 'ran';
BEGIN
  BEGIN
    EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'touch ` + dir + `/' || tag);
  EXCEPTION WHEN OTHERS THEN copied := 'refused';
  END;
  RAISE EXCEPTION 'probe % ran as % (superuser %), COPY TO PROGRAM %', tag, current_user,
    (SELECT rolsuper::text FROM pg_catalog.pg_roles WHERE rolname = current_user), copied;
END $probe$;
`
}

var probeRE = regexp.MustCompile(`probe (\S+) ran as (\S+) \(superuser (\w+)\), COPY TO PROGRAM (\w+)`)

// TestLearnersCodeNeverRunsAsTheLab: the learner's code, run as its
// confined role, hooks its own functions into everything the lab runs
// over its database: (a) an assignment cast inside the lab's trigger that
// records deleted keys (a --sql statement, as the finding ran it), (b) an
// operator the lab's checks pick up when they read the orders, (c) a view
// in place of the table the checks read, and a schema named after the
// lab's own role, first on its search_path, that shadows it. Each spy
// either never runs or runs as the learner's role: never as a superuser
// or as the lab's role, and COPY … TO PROGRAM never writes its file.
func TestLearnersCodeNeverRunsAsTheLab(t *testing.T) {
	t.Parallel()
	if !pgtest.Clones().IsThrowaway() {
		pgtest.Skip(t, "the learner's code is confined on the lab's own server only, and BANK_TEST_DATABASE_URL names another")
	}
	ctx := context.Background()
	var admin string
	if err := func() error {
		c, err := pgx.Connect(ctx, pgtest.AdminURL())
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return c.QueryRow(ctx, "SELECT current_user").Scan(&admin)
	}(); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "bank-probe-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil { // the server's account (postgres, as root) may write here
		t.Fatal(err)
	}
	probe := probeSQL(dir)
	for _, c := range []struct {
		name, exercise string
		mode           Mode
		attack         string
	}{
		{"a: a cast of the learner's inside the lab's trigger", "cleanup", SQLMode, `DO $do$ BEGIN
  ` + probe + `
  CREATE TYPE public.k AS (v text);
  CREATE FUNCTION public.k_text(x public.k) RETURNS text LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.probe('a'); RETURN x.v; END $f$;
  CREATE CAST (public.k AS text) WITH FUNCTION public.k_text(public.k) AS ASSIGNMENT;
  ALTER TABLE public.idempotency_keys ALTER COLUMN key TYPE public.k USING ROW(key)::public.k;
  DELETE FROM public.idempotency_keys WHERE (key).v = 'old-completed' RETURNING (key).v;
END $do$`},
		{"b: an operator of the learner's in the lab's check", "ship", ProgramMode, probe + `
  CREATE TYPE public.myid AS (v integer);
  CREATE FUNCTION public.myid_eq(a public.myid, b integer) RETURNS boolean LANGUAGE sql AS $f$ SELECT public.probe('b') $f$;
  CREATE OPERATOR public.= (LEFTARG = public.myid, RIGHTARG = integer, FUNCTION = public.myid_eq);
  ALTER TABLE public.orders ALTER COLUMN id TYPE public.myid USING ROW(id)::public.myid;`},
		{"c: a view in place of the table the lab reads", "cleanup", ProgramMode, probe + `
  ALTER TABLE public.idempotency_keys RENAME TO keys_table;
  CREATE VIEW public.idempotency_keys AS SELECT * FROM public.keys_table WHERE public.probe('c-view');`},
		{"c: a schema named after the lab's role shadows the table", "cleanup", ProgramMode, probe + `
  CREATE SCHEMA ` + pgx.Identifier{admin}.Sanitize() + `;
  CREATE VIEW ` + pgx.Identifier{admin, "idempotency_keys"}.Sanitize() + ` AS SELECT * FROM public.idempotency_keys WHERE public.probe('c-schema');`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ex, _ := LookupExercise(c.exercise)
			var role string
			a, err := CheckExercise(ctx, pgtest.Clones(), ex, c.mode, func(ctx context.Context, dbURL string, _ *pgxpool.Pool) (Ran, error) {
				conn, err := pgx.Connect(ctx, dbURL)
				if err != nil {
					return Ran{}, err
				}
				defer conn.Close(ctx)
				if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&role); err != nil {
					return Ran{}, err
				}
				if c.mode == SQLMode {
					return RunSQL(ctx, conn, ex, c.attack)
				}
				if _, err := conn.Exec(ctx, c.attack); err != nil {
					return Ran{}, fmt.Errorf("the attack itself failed: %w", err)
				}
				return Ran{Printed: strings.Join(ex.Want, "\n")}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if role == admin {
				t.Fatalf("the learner's code ran as the lab's own role %s", admin)
			}
			var said []string
			for _, f := range a.Findings {
				said = append(said, f.Detail)
			}
			ran := probeRE.FindAllStringSubmatch(strings.Join(said, "\n"), -1)
			for _, m := range ran {
				if m[2] != role || m[3] != "false" || m[4] != "refused" {
					t.Errorf("%s", m[0])
				}
			}
			if c.mode == SQLMode && len(ran) == 0 {
				t.Errorf("the statement's own spy never ran: the attack did not work as written:\n%s", report(a.Findings))
			}
			t.Logf("learner %s; spies that ran: %q", role, ran)
		})
	}
	written, _ := os.ReadDir(dir)
	for _, f := range written {
		t.Errorf("COPY … TO PROGRAM ran: it wrote %s", f.Name())
	}
}

// TestLearnerMayOnlyAddToTheRecord: the learner's role adds rows to the
// lab's record of keys (through the lab's trigger, which runs as that
// role) and can do nothing else with the record or the trigger's
// function: read, change, empty or replace them.
func TestLearnerMayOnlyAddToTheRecord(t *testing.T) {
	t.Parallel()
	if !pgtest.Clones().IsThrowaway() {
		pgtest.Skip(t, "the learner's code is confined on the lab's own server only, and BANK_TEST_DATABASE_URL names another")
	}
	ctx := context.Background()
	ex, _ := LookupExercise("cleanup")
	_, err := CheckExercise(ctx, pgtest.Clones(), ex, SQLMode, func(ctx context.Context, dbURL string, _ *pgxpool.Pool) (Ran, error) {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return Ran{}, err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "INSERT INTO bank_lab.key_events (op, key) VALUES ('I', 'mine')"); err != nil {
			t.Errorf("adding to the record: %v", err)
		}
		for _, sql := range []string{
			"SELECT count(*) FROM bank_lab.key_events",
			"UPDATE bank_lab.key_events SET key = 'x'",
			"DELETE FROM bank_lab.key_events",
			"TRUNCATE bank_lab.key_events",
			"CREATE OR REPLACE FUNCTION bank_lab.record_key() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
			"ALTER FUNCTION bank_lab.record_key() SECURITY DEFINER",
			"CREATE TABLE bank_lab.mine (n int)",
		} {
			_, err := conn.Exec(ctx, sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Errorf("%s: %v, want a permission error (42501)", sql, err)
			}
		}
		return Ran{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
