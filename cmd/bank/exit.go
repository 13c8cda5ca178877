package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/zudojs/bank/bank/pgserver"
)

// Exit codes, in one place.
const (
	exitOK          = 0   // the lesson reproduced; the command did its job
	exitNotAsTaught = 1   // a scenario's outcome differs from its lesson; or the command failed
	exitUsage       = 2   // bad command line
	exitEnv         = 3   // PostgreSQL could not be found, started or reached; a port is taken
	exitUnknown     = 4   // bank send gave up: the transfer's outcome is unknown
	exitInterrupted = 130 // Ctrl-C
)

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// envError is an environment failure that is not PostgreSQL's.
func envError(format string, args ...any) error {
	return &pgserver.Error{Err: fmt.Errorf(format, args...)}
}

// silentExit carries an exit code whose explanation was already printed.
type silentExit struct{ code int }

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", e.code) }

func exitCode(err error) int {
	var u usageError
	var s silentExit
	var env *pgserver.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &s):
		return s.code
	case errors.As(err, &u):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &env):
		return exitEnv
	}
	return exitNotAsTaught
}
