package pgserver

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Confine gives the database a role of its own, for code the lab did
// not write (a learner's server or program): a login that owns this
// database and its tables and nothing else: no superuser, no CREATEDB or
// CREATEROLE, none of the pg_* roles that reach the server's files or
// run programs (so COPY … TO PROGRAM and file reads are refused), and no
// connection to another database of the server's (on the lab's own
// server every database, but its template and postgres, is private). It returns a URL as that role, with a fresh
// password; Drop removes the role with the database.
func (d *Database) Confine(ctx context.Context) (string, error) {
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("confining %s: its URL is not a postgres:// URL", d.Name)
	}
	role := d.Name + "_owner"
	password := randomHex(16)
	ident := pgx.Identifier{role}.Sanitize()
	db := pgx.Identifier{d.Name}.Sanitize()
	// In one transaction: a role that owns no database is a leftover that
	// Throwaway's clean-up may drop, so this one must never be seen without its
	// database.
	err = func() error {
		conn, done, err := d.c.session(ctx)
		if err != nil {
			return err
		}
		defer done()
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		for _, stmt := range []string{
			"CREATE ROLE " + ident + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '" + password + "'",
			"ALTER DATABASE " + db + " OWNER TO " + ident,
			"REVOKE ALL ON DATABASE " + db + " FROM PUBLIC",
			"GRANT CONNECT, TEMPORARY ON DATABASE " + db + " TO " + ident,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return tx.Commit(ctx)
	}()
	if err != nil {
		return "", fmt.Errorf("confining %s: %w", d.Name, err)
	}
	d.role = role
	d.c.confined.Store(true)
	// Its tables (the template's) become the role's too, inside the
	// database, as the admin.
	conn, err := connect(ctx, d.URL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `DO $$ DECLARE t record; BEGIN
		FOR t IN SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables WHERE schemaname = 'public' LOOP
			EXECUTE 'ALTER TABLE ' || t.name || ' OWNER TO '|| `+quoteLiteral(ident)+`;
		END LOOP; END $$`)
	if err != nil {
		return "", fmt.Errorf("confining %s: %w", d.Name, err)
	}
	u.User = url.UserPassword(role, password)
	return u.String(), nil
}

// Role is the role Confine made for the database, or "" before Confine.
func (d *Database) Role() string { return d.role }

// Confined reports whether Confine was called for any database: whether
// code the lab did not write has had one of this server's databases (see
// Server.MeasureAtStop).
func (c *Clones) Confined() bool { return c.confined.Load() }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
