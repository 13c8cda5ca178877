// Package witness lets PostgreSQL say what a learner's program wrote: every
// row it inserts, updates or deletes in its tables, with the top-level
// transaction that wrote it (the same inside a savepoint), the session and
// the moment, kept in a schema the program may add to but not read or
// change. A judge reads facts from it instead of guessing from the tables
// as they are at the end: which transaction inserted a transfer, what else
// that transaction wrote, when a key was claimed and when it was taken
// over.
//
// The witness is a row trigger on every table: on the tables a database
// is made with, and, through an event trigger, on every table the program
// makes later. Both run as the program's own role (SECURITY INVOKER, every
// name qualified, search_path pinned): nothing of the lab runs with more
// rights than the program has. A row written in a transaction that rolls
// back, or in a savepoint rolled back, leaves no record, as it leaves no
// row: the record is part of the write.
//
// The same trigger is a gate (Gate): at each write, before it records it,
// the trigger waits on an advisory lock of its table's, which the judge
// can hold, so that a program's session can be stopped right after any
// write, before its transaction commits, and the judge sees which table
// and which transaction waits there.
package witness

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// gateKey is the gate's advisory lock ("bankgate"): every transaction
// that writes takes it, shared, at its first write, and holds it until it
// ends.
const gateKey = 0x62616e6b67617465

// SQL makes the witness in a database (Install runs it, and attaches the
// trigger to the tables already there). It is part of a template's text,
// so a change to it builds a new template.
const SQL = `
CREATE SCHEMA bank_witness;
REVOKE ALL ON SCHEMA bank_witness FROM PUBLIC;
GRANT USAGE ON SCHEMA bank_witness TO PUBLIC;
CREATE TABLE bank_witness.writes (
  seq bigserial PRIMARY KEY,
  xact xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
  at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  pid integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
  rel oid NOT NULL,
  tbl text NOT NULL,
  op text NOT NULL,
  old jsonb,
  new jsonb);
REVOKE ALL ON bank_witness.writes FROM PUBLIC;
GRANT INSERT ON bank_witness.writes TO PUBLIC;
GRANT USAGE ON SEQUENCE bank_witness.writes_seq_seq TO PUBLIC;
CREATE FUNCTION bank_witness.log() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM pg_catalog.pg_advisory_xact_lock_shared(7089068696032867429);
  INSERT INTO bank_witness.writes (rel, tbl, op, old, new) VALUES (TG_RELID,
    pg_catalog.format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME), TG_OP,
    CASE WHEN TG_OP <> 'INSERT' THEN pg_catalog.to_jsonb(OLD) END,
    CASE WHEN TG_OP <> 'DELETE' THEN pg_catalog.to_jsonb(NEW) END);
  RETURN NULL;
END $$;
CREATE FUNCTION bank_witness.watch() RETURNS event_trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.oid FROM pg_catalog.pg_event_trigger_ddl_commands() d
      JOIN pg_catalog.pg_class c ON c.oid = d.objid
      WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid = 0
        AND c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = 'bank_witness') LOOP
    EXECUTE pg_catalog.format('CREATE TRIGGER bank_witness AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION bank_witness.log()', r.oid::pg_catalog.regclass);
  END LOOP;
END $$;
CREATE EVENT TRIGGER bank_witness ON ddl_command_end
  WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
  EXECUTE FUNCTION bank_witness.watch();
`

// attachExisting puts the trigger on the tables already in the database.
const attachExisting = `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't' AND NOT c.relispartition
        AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'bank_witness') AND n.nspname NOT LIKE 'pg\_%' LOOP
    EXECUTE pg_catalog.format('CREATE TRIGGER bank_witness AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION bank_witness.log()', r.oid::pg_catalog.regclass);
  END LOOP; END $$`

// ErrUnavailable: the role the lab connects as may not make event
// triggers (a PostgreSQL of the learner's, given with --database-url, as
// a role that is not a superuser): there is no witness.
var ErrUnavailable = errors.New("the lab's role is not a superuser, so it cannot watch what a program writes (event triggers need one)")

// Install adds the witness to the database conn is on, in one
// transaction: all of it, or, with ErrUnavailable, none of it.
func Install(ctx context.Context, conn *pgx.Conn) error {
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	if !super {
		return ErrUnavailable
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, stmt := range []string{SQL, attachExisting} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("witness: %w", err)
			}
		}
		return nil
	})
}

// Querier is a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Installed reports whether the database has the witness.
func Installed(ctx context.Context, q Querier) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, "SELECT to_regclass('bank_witness.writes') IS NOT NULL").Scan(&ok)
	return ok, err
}

// Write is one row written, as the witness saw it.
type Write struct {
	Seq   int64
	Xact  uint64    // the top-level transaction (pg_current_xact_id), the same in a savepoint
	At    time.Time // clock_timestamp() as it was written
	PID   int       // the session that wrote it
	Table string    // schema.table, quoted where it must be
	Op    string    // INSERT, UPDATE or DELETE
	Old   string    // the row before, as JSON ("" for an INSERT)
	New   string    // the row after, as JSON ("" for a DELETE)
}

// Names reports whether the row, before or after, contains s (a key, say)
// anywhere in its values.
func (w Write) Names(s string) bool {
	return s != "" && (strings.Contains(w.Old, s) || strings.Contains(w.New, s))
}

// Xid is the transaction's 32-bit id, as pg_stat_activity's backend_xid
// and a row's xmin show it.
func (w Write) Xid() uint32 { return uint32(w.Xact) }

// Row is the row as it is after the write (before it, for a DELETE).
func (w Write) Row() string {
	if w.New != "" {
		return w.New
	}
	return w.Old
}

// Since reads the writes recorded after seq (0: all of them), in the
// order they were made. Only committed writes are there.
func Since(ctx context.Context, q Querier, seq int64) ([]Write, error) {
	rows, err := q.Query(ctx, `SELECT seq, xact::text, at, pid, tbl, op, COALESCE(old::text, ''), COALESCE(new::text, '')
		FROM bank_witness.writes WHERE seq > $1 ORDER BY seq`, seq)
	if err != nil {
		return nil, fmt.Errorf("reading the witness: %w", err)
	}
	var out []Write
	var w Write
	var xact string
	_, err = pgx.ForEachRow(rows, []any{&w.Seq, &xact, &w.At, &w.PID, &w.Table, &w.Op, &w.Old, &w.New}, func() error {
		x, err := strconv.ParseUint(xact, 10, 64)
		if err != nil {
			return fmt.Errorf("a transaction id %q: %w", xact, err)
		}
		w.Xact = x
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the witness: %w", err)
	}
	return out, nil
}

// Last is the seq of the newest committed write (0 when there is none):
// what Since reads after.
func Last(ctx context.Context, q Querier) (int64, error) {
	var seq int64
	err := q.QueryRow(ctx, "SELECT COALESCE(max(seq), 0) FROM bank_witness.writes").Scan(&seq)
	return seq, err
}

// Gate holds back the first write of every transaction in one database,
// at the witness's trigger: right after the row is written, before the
// transaction can commit. Let through (Step), a transaction goes on to its
// end, holding the gate's lock shared, so the gate shuts again only once
// it has committed or rolled back; the next transaction to write is then
// the next one held. A judge steps a program's work one transaction at a
// time, and can stop it (kill it, say) at the first write after a given
// commit, whatever the program's design.
type Gate struct {
	conn   *pgx.Conn          // the session that holds the gate's lock
	step   chan error         // a Step under way: sent its error (or nil) once the gate is shut again
	cancel context.CancelFunc // ends a Step under way
}

// Close shuts the gate of the database pool is on, with a session taken
// from the pool for good, which holds the gate's lock until Open.
func Close(ctx context.Context, pool *pgxpool.Pool) (*Gate, error) {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("the gate's session: %w", err)
	}
	g := &Gate{conn: pc.Hijack()}
	if _, err := g.conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(gateKey)); err != nil {
		g.Open(ctx)
		return nil, fmt.Errorf("the gate: %w", err)
	}
	return g, nil
}

// Waiter is a session held at the gate.
type Waiter struct {
	PID   int
	Xid   uint32 // its transaction
	Query string // the statement that wrote
}

// Waiting lists the sessions held at the gate, read with q (not the
// gate's own session, which a Step may be using).
func (g *Gate) Waiting(ctx context.Context, q Querier) ([]Waiter, error) {
	rows, err := q.Query(ctx, `SELECT l.pid, COALESCE(a.backend_xid::text, '0'), COALESCE(a.query, '')
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND NOT l.granted AND l.mode = 'ShareLock'
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.objsubid = 1
		ORDER BY l.pid`, int64(gateKey>>32), int64(gateKey&0xffffffff))
	if err != nil {
		return nil, fmt.Errorf("the gate: %w", err)
	}
	var out []Waiter
	var w Waiter
	var xid string
	_, err = pgx.ForEachRow(rows, []any{&w.PID, &xid, &w.Query}, func() error {
		x, _ := strconv.ParseUint(xid, 10, 32)
		w.Xid = uint32(x)
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the gate: %w", err)
	}
	return out, nil
}

// Shut reports whether the gate is shut: no Step under way. An error of
// the last Step is returned once.
func (g *Gate) Shut() (bool, error) {
	if g.step == nil {
		return true, nil
	}
	select {
	case err := <-g.step:
		g.step = nil
		g.cancel()
		return true, err
	default:
		return false, nil
	}
}

// Step lets the transactions held now go on, and shuts the gate again
// behind them, in the background: once each has ended. Shut says when.
func (g *Gate) Step(ctx context.Context) {
	done := make(chan error, 1)
	ctx, g.cancel = context.WithCancel(ctx)
	g.step = done
	go func() {
		_, err := g.conn.Exec(ctx, "SELECT pg_advisory_unlock($1), pg_advisory_lock($1)", int64(gateKey))
		done <- err
	}()
}

// Open lets every write through for good, and ends the gate's session
// (its lock ends with it), a Step under way included.
func (g *Gate) Open(ctx context.Context) {
	if g.conn == nil {
		return
	}
	if g.step != nil {
		g.cancel()
		<-g.step
		g.step = nil
	}
	g.conn.Close(context.WithoutCancel(ctx))
	g.conn = nil
}

// IsUnavailable reports whether err means there is no witness.
func IsUnavailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, ErrUnavailable) || errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// Let lets the transactions held now go on (Step) and waits until the gate
// is shut again behind them: false when that took longer than bound.
func (g *Gate) Let(ctx context.Context, bound time.Duration) (bool, error) {
	g.Step(ctx)
	deadline := time.Now().Add(bound)
	for {
		shut, err := g.Shut()
		if err != nil || shut {
			return shut, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// EndHeld ends the sessions held at the gate (their transactions roll
// back), as a crash of the program's machine would, read and ended with q.
func (g *Gate) EndHeld(ctx context.Context, q Querier) error {
	held, err := g.Waiting(ctx, q)
	if err != nil {
		return err
	}
	for _, w := range held {
		rows, err := q.Query(ctx, "SELECT pg_terminate_backend($1)", w.PID)
		if err != nil {
			return fmt.Errorf("the gate: %w", err)
		}
		rows.Close()
	}
	return nil
}

// Tagged is dbURL with its sessions tagged: application_name is name, so
// that pg_stat_activity tells them from others' (unchanged when dbURL is
// not a URL).
func Tagged(dbURL, name string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}
