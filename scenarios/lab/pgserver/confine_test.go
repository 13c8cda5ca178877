package pgserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestConfinedRole: the learner's code gets a role that owns its own
// database and tables and nothing else: not a superuser, COPY … TO PROGRAM
// and server file reads refused, no way into another database; the role
// goes with its database.
func TestConfinedRole(t *testing.T) {
	t.Parallel()
	s := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t), TCP: true})
	ctx := context.Background()
	tmpl := pgserver.Template{Prefix: "confinetest", Schema: "v1", Setup: func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE TABLE seeded (id serial PRIMARY KEY, n int); INSERT INTO seeded (n) VALUES (42)")
		return err
	}}
	c, err := pgserver.Open(ctx, s.TCPURL("postgres"), tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Throwaway(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mine, err := c.NewDatabase(ctx, "mine")
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.NewDatabase(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Drop(ctx)
	url, err := mine.Confine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := query(t, url, "SELECT rolsuper::text || ' ' || rolcreatedb::text || ' ' || rolcreaterole::text FROM pg_roles WHERE rolname = current_user"); got != "false false false" {
		t.Errorf("the role's super, createdb, createrole: %s", got)
	}
	// Its own tables are its own: it reads, writes, and makes more.
	if got := query(t, url, "WITH ins AS (INSERT INTO seeded (n) VALUES (1) RETURNING n) SELECT (SELECT sum(n) FROM seeded) + (SELECT sum(n) FROM ins)"); got != "43" {
		t.Errorf("its own table: %s", got)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS keys (k text PRIMARY KEY)"); err != nil {
		t.Errorf("making its own table: %v", err)
	}
	for _, sql := range []string{"COPY (SELECT 1) TO PROGRAM 'id'", "SELECT pg_read_file('PG_VERSION')", "CREATE DATABASE escape", "CREATE ROLE escape"} {
		_, err := conn.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("%s: %v, want a permission error (42501)", sql, err)
		}
	}
	// Another database of the server's, and the server's own: closed.
	for _, db := range []string{other.Name, "postgres"} {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Database = db
		if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
			c.Close(ctx)
			t.Errorf("the confined role connected to %s", db)
		}
	}
	conn.Close(ctx)
	if err := mine.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	// The drop happens behind, on the cluster's own session: wait for it.
	left := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = query(t, s.TCPURL("postgres"), "SELECT count(*)::text FROM pg_roles WHERE rolname LIKE 'confinetest%'"); left == "0" {
			break
		}
	}
	if left != "0" {
		t.Errorf("%s roles left after the drop", left)
	}
}
