package exitcode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// TestExitCodeOfEachError: every kind of error maps to its one code, and
// an error of no known kind is the lab's own (5), not a verdict (1).
func TestExitCodeOfEachError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, OK},
		{Nof("the bank refused the transfer"), No},
		{fmt.Errorf("wrapped: %w", Nof("no")), No},
		{Usagef("bad flag"), Usage},
		{Envf("port taken"), Env},
		{&pgconn.ConnectError{}, Env},
		{fmt.Errorf("draft: %w", &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrPermission}), Env},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: fs.ErrPermission}, Env},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, Env},
		{&pgconn.PgError{Code: "57P01"}, Env}, // admin shutdown
		{&pgconn.PgError{Code: "53100"}, Env}, // disk full
		{fmt.Errorf("replica: %w", &procs.NotStarted{Err: errors.New("bank did not start")}), Env},
		{&pgconn.PgError{Code: "23505"}, Internal},
		{&pgconn.PgError{Code: "57014"}, Internal}, // a cancelled statement is no sign of the machine
		{Silent{Code: Unknown}, Unknown},
		{fmt.Errorf("status: %w", Unknownf("not the bank's answer")), Unknown},
		{Silent{Code: No}, No},
		{context.Canceled, Interrupted},
		{errors.New("something the lab did not expect"), Internal},
	} {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%#v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestOneClassificationOfUnreachable: "the database cannot be reached" is
// decided once, by bank.Unavailable (the API's 503): every error it
// counts is the environment's here too (exit 3), and the database errors
// it does not count are not.
func TestOneClassificationOfUnreachable(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&pgconn.ConnectError{}, &net.OpError{Op: "read", Err: errors.New("reset")}, io.ErrUnexpectedEOF,
		fmt.Errorf("query: %w", pgconn.ErrConnClosed), &pgconn.PgError{Code: "08006"}, &pgconn.PgError{Code: "57P03"},
		&pgconn.PgError{Code: "58030"}, &pgconn.PgError{Code: "53300"},
		&pgconn.PgError{Code: "57014"}, &pgconn.PgError{Code: "40001"}, &pgconn.PgError{Code: "23505"},
	} {
		if bank.Unavailable(err) != (Of(err) == Env) {
			t.Errorf("%#v: the API says unavailable %v, the exit code is %d", err, bank.Unavailable(err), Of(err))
		}
	}
}
