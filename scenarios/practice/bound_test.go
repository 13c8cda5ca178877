package practice

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestLearnersSQLIsBounded: a statement that sleeps, one that turns its
// own statement_timeout off before it sleeps, a loop that never ends and
// one that waits for a lock are each stopped by the lab's bound, which
// says which bound and how to fix the SQL; the session ends with it, and
// the exercise's database goes, as after every run.
func TestLearnersSQLIsBounded(t *testing.T) {
	t.Parallel()
	ex, _ := LookupExercise("cleanup")
	const limit = 1500 * time.Millisecond
	for _, c := range []struct{ name, stmt, says string }{
		{"pg_sleep", "SELECT pg_sleep(60)", "your SQL ran longer than 1.5 s and was stopped (statement_timeout)"},
		{"the bound turned off inside", "DO $$ BEGIN SET statement_timeout = 0; SET lock_timeout = 0; PERFORM pg_sleep(60); END $$", "your SQL ran longer than 1.5 s"},
		{"a loop", "DO $$ BEGIN LOOP END LOOP; END $$", "your SQL ran longer than 1.5 s"},
		{"a lock", "SELECT pg_advisory_lock(42)", "your SQL waited longer than 0.5 s for a lock and was stopped (lock_timeout)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var name string
			_, err := CheckExercise(ctx, pgtest.Clones(), ex, SQLMode, func(ctx context.Context, url string, pool *pgxpool.Pool) (Ran, error) {
				if err := pool.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
					return Ran{}, err
				}
				// The lab's session holds the lock the statement waits for.
				held, err := pool.Acquire(ctx)
				if err != nil {
					return Ran{}, err
				}
				defer held.Release()
				if _, err := held.Exec(ctx, "SELECT pg_advisory_lock(42)"); err != nil {
					return Ran{}, err
				}
				defer held.Exec(ctx, "SELECT pg_advisory_unlock_all()")
				return RunLearnerSQL(ctx, url, ex, c.stmt, limit)
			})
			var tooLong *TooLong
			if !errors.As(err, &tooLong) || !strings.HasPrefix(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%v, want one line starting %q", err, c.says)
			}
			// Nothing left: no session on the database, and then no database.
			admin, err := pgx.Connect(ctx, pgtest.AdminURL())
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			left := true
			for deadline := time.Now().Add(10 * time.Second); left && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) OR EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = $1)", name).Scan(&left); err != nil {
					t.Fatal(err)
				}
			}
			if left {
				t.Errorf("the database %s, or a session on it, is still there", name)
			}
		})
	}
}
