package pgserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Template describes a seeded database that scenario databases are cloned
// from. It is built once per server and kept; its name carries a hash of
// Schema, so a changed schema gets a new template instead of a stale one.
type Template struct {
	Prefix string                                       // e.g. "bank"; databases are named <prefix>_t_<hash> and <prefix>_s_<name>_<random>
	Schema string                                       // the text of what Setup makes (schema and seed), hashed into the template's name
	Setup  func(ctx context.Context, c *pgx.Conn) error // builds the template's content
}

func (t Template) name() string {
	sum := sha256.Sum256([]byte(t.Schema))
	return t.Prefix + "_t_" + hex.EncodeToString(sum[:5])
}

// Clones hands out fresh databases on one PostgreSQL server, embedded or
// the learner's own: each a clone of the template.
type Clones struct {
	admin    string // connection string of a database to run CREATE DATABASE from
	tmpl     Template
	strategy string // CREATE DATABASE's STRATEGY clause, if any
	version  int    // server_version_num

	mu   sync.Mutex
	conn *pgx.Conn // one admin session, kept: a new one costs a backend's start

	// On the lab's own server (Throwaway), cloning and dropping happen ahead
	// and behind, on a session of their own, while scenarios run.
	aside *aside

	confined atomic.Bool // Confine was called: code the lab did not write had a database
}

// Database is one scenario's own database.
type Database struct {
	Name string
	URL  string
	c    *Clones
	role string // Confine's role, dropped with the database
}

// Open checks that the server at adminURL answers and that the template
// exists, building it if needed.
func Open(ctx context.Context, adminURL string, t Template) (*Clones, error) {
	c := &Clones{admin: adminURL, tmpl: t}
	conn, done, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&c.version)
	if err != nil {
		err = fmt.Errorf("reading the server version: %w", err)
	} else {
		err = c.ensureTemplate(ctx, conn)
	}
	done()
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// session returns the admin session, reconnecting if it was
// lost (a crash of the server, say), for the caller's use until it calls
// done.
func (c *Clones) session(ctx context.Context) (*pgx.Conn, func(), error) {
	c.mu.Lock()
	if c.conn != nil && (c.conn.IsClosed() || c.conn.Ping(ctx) != nil) {
		c.conn.Close(context.WithoutCancel(ctx))
		c.conn = nil
	}
	if c.conn == nil {
		conn, err := connect(ctx, c.admin)
		if err != nil {
			c.mu.Unlock()
			return nil, nil, err
		}
		c.conn = conn
	}
	return c.conn, c.mu.Unlock, nil
}

// Close waits for the work set aside (Throwaway) and ends its admin
// session.
func (c *Clones) Close() {
	if c.aside != nil {
		c.aside.close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close(context.Background())
		c.conn = nil
	}
}

// connectLimit bounds how long a connection may take to start, when its
// URL sets no connect_timeout. The driver has no bound of its own: a
// --database-url naming a port that accepts and never answers (or a host
// that drops every packet) waited for ever. A server on this machine
// answers in milliseconds, even a loaded one.
const connectLimit = 10 * time.Second

// ownConnectLimit bounds, in its place, a connection to a server this
// process started and saw ready: that server is there, and one that
// answers slowly is loaded, not absent. Under wine and load, where each
// connection is a new postgres.exe, one took more than connectLimit, and
// the run failed with "no answer within 10s".
const ownConnectLimit = stallLimit

// own holds the addresses (host:port, as the driver reads them from a
// URL) of the servers this process started and has not stopped.
var own sync.Map

func address(host string, port uint16) string { return host + ":" + strconv.Itoa(int(port)) }

// connect opens a connection and turns a failure into one line naming the
// host and the reason, without the driver's noise.
func connect(ctx context.Context, connString string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, &Error{fmt.Errorf("database URL is not valid: %s", redact(err.Error()))}
	}
	_, ours := own.Load(address(cfg.Host, cfg.Port))
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectLimit
		if ours {
			cfg.ConnectTimeout = ownConnectLimit
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", ctx.Err()) // Ctrl-C, not the server
	}
	if err != nil {
		why := reason(err)
		var tooLong *pgproto3.ExceededMaxBodyLenErr
		switch {
		case pgconn.Timeout(err) && ours:
			why = fmt.Sprintf("no answer within %v from the lab's own server: the machine may be too busy", cfg.ConnectTimeout)
		case pgconn.Timeout(err):
			why = fmt.Sprintf("no answer within %v (connect_timeout); is it the right host and port?", cfg.ConnectTimeout)
		case errors.As(err, &tooLong), strings.Contains(err.Error(), "unknown message type"):
			why = "what answers there does not speak PostgreSQL's protocol; is it the right port?"
		}
		return nil, &Error{fmt.Errorf("cannot reach PostgreSQL at %s:%d: %s", cfg.Host, cfg.Port, why)}
	}
	return conn, nil
}

func reason(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message + " (SQLSTATE " + pgErr.Code + ")"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}

const templateLockKey = 0x62616e6b // "bank"

func (c *Clones) ensureTemplate(ctx context.Context, conn *pgx.Conn) error {
	name := c.tmpl.name()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("looking for the template database: %w", err)
	}
	if exists {
		return nil
	}
	// Two processes may race to build it: one builds, the other waits.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return fmt.Errorf("template lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey)
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || exists {
		return err
	}
	building := name + "_building"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()+" TEMPLATE template0"); err != nil {
		return &Error{fmt.Errorf("cannot create databases on this server (the lab needs CREATEDB): %s", reason(err))}
	}
	tconn, err := connect(ctx, withDatabase(c.admin, building))
	if err != nil {
		return err
	}
	err = c.tmpl.Setup(ctx, tconn)
	tconn.Close(ctx)
	if err != nil {
		return fmt.Errorf("building the template database: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return nil
}

// Throwaway tells Clones that its server is the lab's own throwaway one,
// and so:
//   - clones copy the template's files (STRATEGY FILE_COPY, PostgreSQL 15
//     and later) instead of writing all its pages into WAL: cheap with
//     wal_level=minimal (on a shared server the default is kinder: no
//     checkpoints);
//   - one database is always cloned ahead, a spare, so that the next
//     NewDatabase is a rename; the last one is kept for the next run;
//   - Drop, and the leftovers of earlier runs, are dropped behind, while
//     the scenario runs; a drop still waiting at Close is
//     left to the next run, rather than delay the stop.
//
// The work set aside runs in order on a session of its own; Close waits
// for it. Only for a server the lab owns: on a shared server another
// process may be using the leftovers.
func (c *Clones) Throwaway(ctx context.Context) error {
	if c.version >= 150000 {
		c.strategy = " STRATEGY FILE_COPY"
	}
	conn, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) OR starts_with(datname, $2) ORDER BY datname",
		c.tmpl.Prefix+"_s_", c.tmpl.Prefix+"_spare_")
	var names []string
	if err == nil {
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	done()
	if err != nil {
		return fmt.Errorf("looking for leftover databases: %w", err)
	}
	a := newAside(c)
	var leftovers []string
	for _, n := range names {
		if a.ready == "" && strings.HasPrefix(n, c.spareName("")) {
			a.ready = n // made ahead by the last run, for this template
			continue
		}
		leftovers = append(leftovers, n)
	}
	if len(leftovers) > 0 {
		a.do(job{leftOver: true, run: func(ctx context.Context, conn *pgx.Conn) {
			for _, n := range leftovers {
				if conn == nil {
					return
				}
				conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)")
			}
		}})
	}
	// The learner's roles (Confine) connect to their own databases only;
	// the leftovers of a run that was killed are dropped with them.
	a.do(job{leftOver: true, run: func(ctx context.Context, conn *pgx.Conn) {
		if conn == nil {
			return
		}
		for _, db := range []string{"postgres", c.tmpl.name()} {
			conn.Exec(ctx, "REVOKE CONNECT, TEMPORARY ON DATABASE "+pgx.Identifier{db}.Sanitize()+" FROM PUBLIC")
		}
		rows, err := conn.Query(ctx, `SELECT rolname FROM pg_roles r WHERE starts_with(rolname, $1) AND rolname LIKE '%\_owner'
			AND NOT EXISTS (SELECT 1 FROM pg_database d WHERE d.datdba = r.oid)`, c.tmpl.Prefix+"_s_")
		if err != nil {
			return
		}
		roles, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return
		}
		for _, r := range roles {
			conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{r}.Sanitize())
		}
	}})
	c.aside = a
	return nil
}

// IsThrowaway reports whether the server is the lab's own (Throwaway was called), not
// one the learner named with --database-url.
func (c *Clones) IsThrowaway() bool { return c.aside != nil }

// spareName names a spare of this template (with suffix "", the prefix
// every such name starts with).
func (c *Clones) spareName(suffix string) string {
	return c.tmpl.Prefix + "_spare_" + strings.TrimPrefix(c.tmpl.name(), c.tmpl.Prefix+"_t_") + "_" + suffix
}

// NewDatabase gives one scenario a fresh clone of the template.
func (c *Clones) NewDatabase(ctx context.Context, label string) (*Database, error) {
	name := c.tmpl.Prefix + "_s_" + sanitize(label) + "_" + randomHex(4)
	d := &Database{Name: name, URL: withDatabase(c.admin, name), c: c}
	if c.aside != nil {
		spare := c.aside.take(ctx)
		defer c.aside.cloneAhead()
		if spare != "" && c.admin1(ctx, "ALTER DATABASE "+pgx.Identifier{spare}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()) == nil {
			return d, d.private(ctx)
		}
	}
	if err := c.admin1(ctx, c.cloneSQL(name)); err != nil {
		return nil, fmt.Errorf("creating database %s: %w", name, err)
	}
	return d, d.private(ctx)
}

// private keeps every role but the admin (and Confine's) out of a
// database of the lab's own server: a learner's role connects to its own
// database only.
func (d *Database) private(ctx context.Context) error {
	if d.c.aside == nil {
		return nil // not ours: its owner decides who connects
	}
	if err := d.c.admin1(ctx, "REVOKE CONNECT, TEMPORARY ON DATABASE "+pgx.Identifier{d.Name}.Sanitize()+" FROM PUBLIC"); err != nil {
		return fmt.Errorf("making database %s private: %w", d.Name, err)
	}
	return nil
}

func (c *Clones) cloneSQL(name string) string {
	return "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{c.tmpl.name()}.Sanitize() + c.strategy
}

// admin1 runs one statement on the admin session.
func (c *Clones) admin1(ctx context.Context, sql string) error {
	conn, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	_, err = conn.Exec(ctx, sql)
	return err
}

// Drop removes the database, closing any connections still open to it
// (on the lab's own server, behind: it returns at once).
func (d *Database) Drop(ctx context.Context) error {
	if a := d.c.aside; a != nil && a.do(job{leftOver: true, run: func(ctx context.Context, conn *pgx.Conn) {
		if conn != nil {
			d.drop(ctx, conn)
		}
	}}) {
		return nil
	}
	conn, done, err := d.c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	return d.drop(ctx, conn)
}

// drop removes the database, and its role if Confine made one.
func (d *Database) drop(ctx context.Context, conn *pgx.Conn) error {
	err := drop(ctx, conn, d.Name)
	if err == nil && d.role != "" {
		_, err = conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{d.role}.Sanitize())
	}
	return err
}

func drop(ctx context.Context, conn *pgx.Conn, name string) error {
	// Sessions that were just closed take a moment to end on the server.
	// Wait for that here, polling every millisecond: DROP DATABASE WITH
	// (FORCE) would otherwise find them and sleep in 100 ms steps.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var open bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = $1)", name).Scan(&open); err != nil || !open {
			break
		}
	}
	_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() > 30 {
		return b.String()[:30]
	}
	return b.String()
}

// withDatabase returns connString pointed at another database. Both URL
// and key=value forms are accepted.
func withDatabase(connString, db string) string {
	if u, err := url.Parse(connString); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + db
		return u.String()
	}
	return connString + " dbname='" + strings.ReplaceAll(db, "'", `\'`) + "'"
}
