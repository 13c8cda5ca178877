package bank

import (
	"errors"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means the database could not be
// reached (or went away) rather than that the request went wrong in it,
// the one classification the lab has (the API answers these 503, the
// command exits 3 for them):
// a connection that could not be made or broke, or PostgreSQL refusing
// work for a while (SQLSTATE 08 connection exception, 53 insufficient
// resources, 57P shutting down or not yet accepting connections, 58
// system error). The API answers these 503 with Retry-After. A cancelled
// statement (57014), a deadlock or a serialization failure are not: the
// database is there, and the API's 500 says to retry.
func Unavailable(err error) bool {
	var connect *pgconn.ConnectError
	var network net.Error
	var pg *pgconn.PgError
	switch {
	case err == nil:
		return false
	case errors.As(err, &pg):
		return len(pg.Code) == 5 && (slices.Contains([]string{"08", "53", "58"}, pg.Code[:2]) || strings.HasPrefix(pg.Code, "57P"))
	case errors.As(err, &connect), errors.As(err, &network),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, pgconn.ErrConnClosed):
		return true
	}
	return false
}
