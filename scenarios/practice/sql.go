package practice

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios"
)

// RunSQL runs a learner's statement with the exercise's parameters and
// prints, as a program would, the keys it returned and the keys left.
func RunSQL(ctx context.Context, db bank.DB, ex *Exercise, stmt string) (Ran, error) {
	// Bind as many parameters as the statement uses: a statement that
	// ignores $2 is wrong, and the checks will say how.
	used := 0
	for _, m := range paramRE.FindAllStringSubmatch(stmt, -1) {
		n, _ := strconv.Atoi(m[1])
		used = max(used, min(n, len(ex.SQLArgs)))
	}
	failed := func(err error) (Ran, error) {
		return Ran{Failed: &Finding{What: "your statement runs", Detail: err.Error()}, err: err}, nil
	}
	rows, err := db.Query(ctx, stmt, ex.SQLArgs[:used]...)
	if err != nil {
		return failed(err)
	}
	var deleted []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return failed(err)
		}
		if len(vals) != 1 {
			rows.Close()
			return failed(fmt.Errorf("it returns %d columns: return the key alone (RETURNING key)", len(vals)))
		}
		k, ok := vals[0].(string)
		if !ok {
			rows.Close()
			return failed(fmt.Errorf("it returns %T, not the key: RETURNING key", vals[0]))
		}
		deleted = append(deleted, k)
	}
	if err := rows.Err(); err != nil {
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) {
			return failed(err)
		}
		return Ran{}, err
	}
	kept, err := keyNames(ctx, db)
	if err != nil {
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) { // what the statement did to its session or the table
			return failed(fmt.Errorf("after it ran, the keys left could not be read: %w", err))
		}
		return Ran{}, err
	}
	slices.Sort(deleted)
	return Ran{Printed: "deleted: " + scenarios.NodeList(deleted) + "\nkept: " + scenarios.NodeList(kept) + "\n"}, nil
}

var paramRE = regexp.MustCompile(`\$(\d+)`)

// SQLTimeout bounds a learner's statement (--sql), as a program is
// bounded by its own 30 s.
const SQLTimeout = 30 * time.Second

// TooLong is a learner's statement that the lab stopped: it ran longer
// than Limit, or waited longer than Limit for a lock (Lock).
type TooLong struct {
	Limit time.Duration
	Lock  bool
}

func (e *TooLong) Error() string {
	if e.Lock {
		return fmt.Sprintf("your SQL waited longer than %g s for a lock and was stopped (lock_timeout): look for a LOCK or pg_advisory_lock it waits on: the clean-up needs no lock of its own", e.Limit.Seconds())
	}
	return fmt.Sprintf("your SQL ran longer than %g s and was stopped (statement_timeout): a DELETE of this exercise's four rows takes milliseconds, so look for a pg_sleep, or a loop that never ends", e.Limit.Seconds())
}

// RunLearnerSQL runs a learner's statement (--sql) as RunSQL does, on a
// session of its own on the database at url (the learner's role), whose
// statement_timeout and idle_in_transaction_session_timeout are limit,
// and lock_timeout a third of it: set in the session's start-up, so
// that the statement can change them for later statements, not for
// itself. A statement stopped by one of them is a *TooLong error; so is
// one still running limit and 5 s later (the session is then closed,
// and its backend ends with the database, which is dropped after the
// run). Nothing of the session outlives the call.
func RunLearnerSQL(ctx context.Context, url string, ex *Exercise, stmt string, limit time.Duration) (Ran, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return Ran{}, err
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	cfg.RuntimeParams["statement_timeout"] = ms(limit)
	cfg.RuntimeParams["lock_timeout"] = ms(limit / 3)
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = ms(limit)
	sqlCtx, cancel := context.WithTimeout(ctx, limit+5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(sqlCtx, cfg)
	if err != nil {
		return Ran{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ran, err := RunSQL(sqlCtx, conn, ex, stmt)
	var pgErr *pgconn.PgError
	switch {
	case ctx.Err() != nil:
		return Ran{}, ctx.Err()
	case sqlCtx.Err() != nil:
		return Ran{}, &TooLong{Limit: limit}
	case errors.As(ran.err, &pgErr) && pgErr.Code == "57014" && strings.Contains(pgErr.Message, "statement timeout"):
		return Ran{}, &TooLong{Limit: limit}
	case errors.As(ran.err, &pgErr) && pgErr.Code == "55P03" && strings.Contains(pgErr.Message, "lock timeout"):
		return Ran{}, &TooLong{Limit: limit / 3, Lock: true}
	}
	return ran, err
}
