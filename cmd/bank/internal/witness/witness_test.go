package witness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, pgserver.Template{Prefix: "witness", Schema: "CREATE TABLE transfers (id serial PRIMARY KEY, amount_kobo bigint);" + witness.SQL,
		Setup: func(ctx context.Context, c *pgx.Conn) error {
			if _, err := c.Exec(ctx, "CREATE TABLE transfers (id serial PRIMARY KEY, amount_kobo bigint)"); err != nil {
				return err
			}
			return witness.Install(ctx, c)
		}})
}

// program is a database as a learner's program gets it: its own role,
// which owns the database and its tables, and the admin's pool beside it.
func program(t *testing.T) (admin, learner *pgxpool.Pool) {
	t.Helper()
	admin, db := pgtest.DB(t)
	url, err := db.Confine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	learner, err = pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(learner.Close)
	return admin, learner
}

func exec(t *testing.T, db *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestTopLevelTransaction: a transfer made in a savepoint, and the key's
// row written after the savepoint, carry one transaction: the top-level
// one. A write in a savepoint rolled back, and a transaction rolled back,
// leave no record.
func TestTopLevelTransaction(t *testing.T) {
	ctx := context.Background()
	admin, learner := program(t)
	exec(t, learner, "CREATE TABLE IF NOT EXISTS keys (k text PRIMARY KEY, status text)")
	exec(t, learner, "CREATE TABLE IF NOT EXISTS keys (k text PRIMARY KEY, status text)") // a second start
	exec(t, learner, "INSERT INTO keys VALUES ('grade-key-1', 'in_progress')")
	exec(t, learner, `BEGIN; SAVEPOINT s; INSERT INTO transfers (amount_kobo) VALUES (10000); RELEASE SAVEPOINT s;
		SAVEPOINT t; INSERT INTO transfers (amount_kobo) VALUES (1); ROLLBACK TO SAVEPOINT t;
		UPDATE keys SET status = 'completed' WHERE k = 'grade-key-1'; COMMIT`)
	exec(t, learner, "BEGIN; INSERT INTO transfers (amount_kobo) VALUES (2); ROLLBACK")
	writes, err := witness.Since(ctx, admin, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range writes {
		got = append(got, w.Table+" "+w.Op)
	}
	if want := "public.keys INSERT|public.transfers INSERT|public.keys UPDATE"; strings.Join(got, "|") != want {
		t.Fatalf("writes: %q, want %q", strings.Join(got, "|"), want)
	}
	if writes[1].Xact != writes[2].Xact || writes[0].Xact == writes[1].Xact {
		t.Errorf("transactions: claim %d, transfer %d, completion %d: want the transfer and its completion in one, the claim in another", writes[0].Xact, writes[1].Xact, writes[2].Xact)
	}
	if !writes[2].Names("grade-key-1") || !strings.Contains(writes[2].New, "completed") || !strings.Contains(writes[2].Old, "in_progress") {
		t.Errorf("the completion: %+v", writes[2])
	}
	if n, err := witness.Last(ctx, admin); err != nil || n != writes[2].Seq {
		t.Errorf("Last = %d, %v; want %d", n, err, writes[2].Seq)
	}
}

// TestTheProgramCannotReadOrChangeIt: the program's role adds records by
// writing its tables, and can do nothing else with them.
func TestTheProgramCannotReadOrChangeIt(t *testing.T) {
	ctx := context.Background()
	_, learner := program(t)
	for _, sql := range []string{
		"SELECT count(*) FROM bank_witness.writes",
		"UPDATE bank_witness.writes SET op = 'x'",
		"DELETE FROM bank_witness.writes",
		"TRUNCATE bank_witness.writes",
		"DROP TABLE bank_witness.writes",
		"CREATE TABLE bank_witness.mine (x int)",
		"CREATE OR REPLACE FUNCTION bank_witness.log() RETURNS trigger LANGUAGE sql AS 'SELECT NULL'",
		"ALTER EVENT TRIGGER bank_witness DISABLE",
	} {
		if _, err := learner.Exec(ctx, sql); err == nil {
			t.Errorf("the program's role ran %q", sql)
		}
	}
}

// TestGateHoldsTheFirstWriteAfterACommit: stepped through one transaction
// at a time, the program is held at the first write of the transaction
// after the transfer's, and that transaction dies with its session.
func TestGateHoldsTheFirstWriteAfterACommit(t *testing.T) {
	ctx := context.Background()
	admin, learner := program(t)
	exec(t, learner, "CREATE TABLE keys (k text PRIMARY KEY, status text)")
	gate, err := witness.Close(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Open(ctx)
	done := make(chan error, 1)
	go func() {
		conn, err := learner.Acquire(ctx)
		if err != nil {
			done <- err
			return
		}
		defer conn.Release()
		for _, sql := range []string{
			"INSERT INTO keys VALUES ('k', 'claimed')", // the claim, on its own
			"BEGIN", "INSERT INTO transfers (amount_kobo) VALUES (10000)", // the transfer
			"UPDATE keys SET status = 'transferred'", "COMMIT",
			"UPDATE keys SET status = 'answered'", // after the commit
		} {
			if _, err = conn.Exec(ctx, sql); err != nil {
				break
			}
		}
		done <- err
	}()
	var held []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the program was held at %q and never reached the write after the transfer's commit", held)
		}
		shut, err := gate.Shut()
		if err != nil {
			t.Fatal(err)
		}
		if !shut {
			continue
		}
		waiters, err := gate.Waiting(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if len(waiters) == 0 {
			continue
		}
		held = append(held, waiters[0].Query)
		var transferred bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM transfers)").Scan(&transferred); err != nil {
			t.Fatal(err)
		}
		if transferred {
			if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", waiters[0].PID); err != nil {
				t.Fatal(err)
			}
			break
		}
		gate.Step(ctx)
	}
	gate.Open(ctx)
	if err := <-done; err == nil {
		t.Fatal("the write after the commit went through")
	}
	want := []string{"INSERT INTO keys VALUES ('k', 'claimed')", "INSERT INTO transfers (amount_kobo) VALUES (10000)", "UPDATE keys SET status = 'answered'"}
	if strings.Join(held, "|") != strings.Join(want, "|") {
		t.Errorf("held at %q, want %q", held, want)
	}
	var status string
	if err := admin.QueryRow(ctx, "SELECT status FROM keys").Scan(&status); err != nil || status != "transferred" {
		t.Errorf("the key is %q (%v), want transferred: the transfer's transaction committed, the next one did not", status, err)
	}
}
