package pgserver_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// databases lists the server's databases whose names start with prefix.
func databases(t *testing.T, url, prefix string) []string {
	t.Helper()
	out := query(t, url, "SELECT coalesce(string_agg(datname, ' ' ORDER BY datname), '') FROM pg_database WHERE starts_with(datname, '"+prefix+"')")
	return strings.Fields(out)
}

// TestOwnClonesAheadAndDropsBehind: on the lab's own server a run gets a
// fresh seeded database every time, whether from a spare made ahead or a
// clone of its own, with many asking at once; what it leaves (its
// dropped databases not yet gone, and one spare) is tidied or used by
// the next run, so nothing piles up.
func TestOwnClonesAheadAndDropsBehind(t *testing.T) {
	t.Parallel()
	s := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t)})
	admin := s.URL("postgres")
	tmpl := pgserver.Template{Prefix: "asidetest", Schema: "v1", Setup: func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE TABLE seeded (n int); INSERT INTO seeded VALUES (42)")
		return err
	}}
	ctx := context.Background()
	run := func(n int) []string {
		c, err := pgserver.Open(ctx, admin, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Throwaway(ctx); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var names []string
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := c.NewDatabase(ctx, "run")
				if err != nil {
					t.Error(err)
					return
				}
				// Fresh: the seed is there, and nobody else's row.
				if got := query(t, db.URL, "WITH ins AS (INSERT INTO seeded VALUES ("+strconv.Itoa(i)+") RETURNING 1) SELECT (SELECT count(*) FROM seeded) + (SELECT count(*) FROM ins)"); got != "2" {
					t.Errorf("%s holds %s rows, want the seed's one and ours", db.Name, got)
				}
				mu.Lock()
				names = append(names, db.Name)
				mu.Unlock()
				if err := db.Drop(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		c.Close()
		return names
	}
	first := run(1)
	spares := databases(t, admin, "asidetest_spare_")
	if len(spares) != 1 {
		t.Fatalf("after a run: spares %v, want one made ahead", spares)
	}
	second := run(6)
	if slices.Contains(databases(t, admin, "asidetest_"), first[0]) {
		t.Errorf("the first run's database %s is still there after the next run", first[0])
	}
	if slices.Contains(databases(t, admin, "asidetest_"), spares[0]) {
		t.Errorf("the spare %s was neither used nor dropped by the next run", spares[0])
	}
	if len(second) != 6 || len(slices.Compact(slices.Sorted(slices.Values(second)))) != 6 {
		t.Errorf("six at once got %v: each must have its own database", second)
	}
	run(1)
	left := databases(t, admin, "asidetest_")
	// The template, one spare, and at most what the last run dropped.
	if len(left) > 3 {
		t.Errorf("databases pile up: %v", left)
	}
}

// TestDropsBehindAfterTheFirstJobLimit: the work set aside goes on being
// done after its worker has lived longer than one job may take. The
// worker once had one deadline for its whole life, a minute: a bank lab
// open for a class, or a long test, then dropped nothing more, and every
// run left its database on the server. Here the limit is two seconds
// (SetJobLimit), and the drop is asked for after three.
func TestDropsBehindAfterTheFirstJobLimit(t *testing.T) {
	// Not parallel: the limit is the package's, read by Throwaway below.
	s := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t)})
	admin := s.URL("postgres")
	tmpl := pgserver.Template{Prefix: "later", Schema: "v1", Setup: func(context.Context, *pgx.Conn) error { return nil }}
	ctx := context.Background()
	c, err := pgserver.Open(ctx, admin, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	restore := pgserver.SetJobLimit(2 * time.Second)
	err = c.Throwaway(ctx)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the worker outlives one job's limit
	db, err := c.NewDatabase(ctx, "late")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := databases(t, admin, "later_s_")
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v still there 30 s after it was dropped", left)
		}
	}
}
