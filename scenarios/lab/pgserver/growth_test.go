package pgserver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestGrownSlotIsNotKept: code that writes about 100 MB grows the slot
// it ran in, and the next run finds the slot back to the size a fresh
// copy has. Two ways: a learner's code (a confined role) makes a 100 MB
// table that its database, left for the next run to drop, still holds at
// Stop, measured because the code was a learner's; and the lab's own run
// inserts 100 MB, dropped before Stop, whose WAL PostgreSQL would keep.
func TestGrownSlotIsNotKept(t *testing.T) {
	t.Parallel()
	cache := pgtest.CacheDir(t)
	ctx := context.Background()
	const mb = 1 << 20
	s := start(t, pgserver.Options{CacheDir: cache})
	slot := s.DataDir()
	fresh := pgserver.Usage(slot)
	tmpl := pgserver.Template{Prefix: "growthtest", Schema: "v1", Setup: func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE TABLE junk (b text)")
		return err
	}}
	// next stops s, checks that the next run has the same slot at its
	// fresh size, and returns that run's server.
	next := func(what string) *pgserver.Server {
		t.Helper()
		if grew := pgserver.Usage(slot) - fresh; grew < 80*mb {
			t.Fatalf("%s: the slot grew by %d MB only; the test wants about 100", what, grew/mb)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		// Thrown away at Stop; a run that took the slot since (the
		// package's other tests run beside this one, and may) has a
		// fresh copy in it.
		if now := pgserver.Usage(slot); now > fresh+16*mb {
			t.Errorf("%s: after Stop the slot is %d MB, a fresh one %d MB: what the run wrote was kept", what, now/mb, fresh/mb)
		}
		again := start(t, pgserver.Options{CacheDir: cache})
		if now := pgserver.Usage(again.DataDir()); now > fresh+16*mb {
			t.Errorf("%s: the next run's slot is %d MB, a fresh one %d MB", what, now/mb, fresh/mb)
		}
		slot = again.DataDir()
		return again
	}

	// A learner's code, in a database of its own, as its confined role.
	c, err := pgserver.Open(ctx, s.URL("postgres"), tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Throwaway(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := c.NewDatabase(ctx, "learner")
	if err != nil {
		t.Fatal(err)
	}
	url, err := db.Confine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// One statement that makes its table: no WAL (wal_level=minimal),
	// only the table's 100 MB.
	execSQL(t, url, "CREATE TABLE big AS SELECT repeat('x', 1000) AS b FROM generate_series(1, 100000)")
	c.Close() // its database is left to the next run to drop, as a run's last one is
	s.MeasureAtStop()
	s = next("a learner's 100 MB table")

	// The lab's own code: rows inserted into an existing table write WAL;
	// the database is dropped before Stop, and only the WAL remains.
	c, err = pgserver.Open(ctx, s.URL("postgres"), tmpl)
	if err != nil {
		t.Fatal(err)
	}
	db, err = c.NewDatabase(ctx, "lab")
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, db.URL, "INSERT INTO junk SELECT repeat('x', 1000) FROM generate_series(1, 100000)")
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s = next("100 MB of WAL")
}

func execSQL(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// TestSlotFullOfLeftoversIsNotKept: runs cut short leave their
// databases for the next run to drop; a slot that many left more than a
// run can drop quickly (a test interrupting runs by the thousand filled
// 20 GB of memory this way) is copied afresh by the next run.
func TestSlotFullOfLeftoversIsNotKept(t *testing.T) {
	t.Parallel()
	cache := pgtest.CacheDir(t)
	ctx := context.Background()
	s := start(t, pgserver.Options{CacheDir: cache})
	slot := s.DataDir()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	// As the lab clones them (FILE_COPY: no WAL), so that only their
	// number tells.
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	strategy := ""
	if version >= 150000 {
		strategy = " STRATEGY FILE_COPY"
	}
	for i := range 70 {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE leftover_%d%s", i, strategy)); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	again := start(t, pgserver.Options{CacheDir: cache})
	if again.DataDir() != slot {
		t.Fatalf("the next run took another slot, %s, not %s", again.DataDir(), slot)
	}
	conn, err = pgx.Connect(ctx, again.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE 'leftover%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d leftover databases (%v) in the next run's slot: it was kept", n, err)
	}
}
