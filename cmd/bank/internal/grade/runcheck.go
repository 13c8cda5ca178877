package grade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zudojs/bank/bank/audit"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/served"
)

// runCheck runs check c once: its run n of the grade (0 for the first).
func runCheck(ctx context.Context, cfg *Config, c Check, n int) (Result, error) {
	res := Result{Name: c.Name, Title: c.Title, Required: c.Required, Verdict: Pass}
	url, serverURL, drop, err := cfg.NewDatabase(ctx, c.Name)
	if err != nil {
		return res, err
	}
	defer drop()
	// Two pools: the admin's, for PostgreSQL's own views (locks,
	// sessions), the witness and the gate, its search_path pinned to the
	// catalog, so that nothing the server made can stand in for what it
	// names; and the server's own role's, for every read of the bank's
	// tables, so that whatever the server put in them (a view, a function,
	// an operator of its own) runs with the server's rights, never the
	// lab's. The grader's sessions say so in application_name.
	pool, err := newPool(ctx, url, "pg_catalog")
	if err != nil {
		return res, err
	}
	defer closePool(pool)
	// Its own pool even where the two URLs are one (a superuser's
	// --database-url): the admin's search_path would hide the bank.
	bankPool, err := newPool(ctx, serverURL, "")
	if err != nil {
		return res, err
	}
	defer closePool(bankPool)
	rec := record.New(c.Name, c.Title, wire)
	res.Recording = rec.Recording()
	t := &trial{ctx: ctx, cfg: cfg, db: pool, bank: bankPool, url: serverURL, res: &res, run: n, rec: rec}
	defer t.close()
	for i := 0; i < max(1, c.Servers); i++ {
		if err := t.startServer(); err != nil {
			return res, err
		}
	}
	if !cfg.keys.decided {
		if err := t.catch(func(t *trial) { t.probeKeyForm() }); err != nil {
			return res, err
		}
	}
	before, err := audit.Read(ctx, bankPool, nil)
	if err != nil {
		return res, err
	}
	t.noteBank("before", before)
	if err := t.catch(c.run); err != nil {
		return res, err
	}
	if err := t.serversHeld(); err != nil {
		return res, err
	}
	if err := t.catch(func(t *trial) { t.invariants(res.Verdict == NA || res.Verdict == Unknown) }); err != nil {
		return res, err
	}
	res.Writes = -1
	if err := t.catch(func(t *trial) {
		if t.witnessed() {
			res.Writes = len(t.writesSince(0))
		}
	}); err != nil {
		return res, err
	}
	// A failure names a mistake only where its evidence fits one (the
	// check said so with failAs); the command that shows the check's
	// subject done right is given either way.
	if res.Verdict == Fail {
		if res.See == "" {
			res.See = c.See
		}
	} else {
		res.Mistake, res.LooksLike, res.See = "", "", ""
	}
	return res, nil
}

// newPool connects to url as the grader, with search_path pinned where
// it is not "".
func newPool(ctx context.Context, url, searchPath string) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = graderApp
	if searchPath != "" {
		pcfg.ConnConfig.RuntimeParams["search_path"] = searchPath
	}
	return pgxpool.NewWithConfig(ctx, pcfg)
}

// closePool closes a check's pool, waiting at most a few seconds for a
// session still in use (one a hostile server's answer left waiting, say):
// the grade goes on, and the process's end closes what is left.
func closePool(pool *pgxpool.Pool) {
	done := make(chan struct{})
	go func() {
		pool.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// unsureError means a check's own servers were not the ones answering at
// its end.
type unsureError struct{ why string }

func (e *unsureError) Error() string { return e.why }

// serversHeld checks that every server of the check is still running and
// still the one listening on its port.
func (t *trial) serversHeld() error {
	for i, in := range t.servers {
		select {
		case <-in.Child.Exited():
			return &unsureError{fmt.Sprintf("%s exited during the check (%s); its last output: %s", serverName(i), exitStatus(in.Child.Err()), in.Output.LastLines(5))}
		default:
		}
		if owned, known := served.ListenedBy(in.Child.PID(), in.Port); known && !owned {
			return &unsureError{fmt.Sprintf("another program answered on %s's port", serverName(i))}
		}
	}
	return nil
}

// catch runs a check; a server that cannot be restarted inside it ends
// the run (errAbort carries why). What the grader cannot read of the
// bank because the server changed it (a table dropped or altered, a row
// gone) fails the check, saying so: it is the server's doing, not the
// lab's.
func (t *trial) catch(run func(t *trial)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			if why := serversDoing(a.err); why != "" && t.ctx.Err() == nil {
				t.fail("the grader could not read the bank: %s (%s): the lesson's tables must stay as they were given, with their rows", why, a.err)
				err = nil
				return
			}
			err = a.err
		}
	}()
	run(t)
	return nil
}

// serversDoing says, of an error reading the check's database, what the
// server did to cause it, or "" when it is not the server's doing.
func serversDoing(err error) string {
	var pgErr *pgconn.PgError
	var scan pgx.ScanArgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "a row it expects is not there"
	case errors.As(err, &scan):
		return "a value it reads is not what the lesson's schema holds"
	case errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "42") || strings.HasPrefix(pgErr.Code, "22")):
		return "a table or column it reads is gone or changed"
	}
	return ""
}

// abort stops a check on an environment failure (a server that will not
// start again, a database the grader cannot read).
type abort struct{ err error }

func (t *trial) must(err error) {
	if err != nil {
		panic(abort{err})
	}
}

// IsStartError reports whether err is a server that would not start.
func IsStartError(err error) (*StartError, bool) {
	var se *StartError
	ok := errors.As(err, &se)
	return se, ok
}
