// Package exitcode is what bank's exit status means: the codes, each of
// which means one thing for every command (bank help exit-codes is the
// table a learner reads), the errors that carry them, and Of, which maps
// any error a command returns to its code.
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Exit codes, in one place: each means one thing, for every command
// (bank help exit-codes is the table a learner reads).
const (
	OK          = 0   // done: the lesson came out as taught, the check passed, the transfer was made
	No          = 1   // the verdict is no: not as taught, a failed grade, exercise or quiz, a refused transfer, torture invalid
	Usage       = 2   // bad command line (or a setting in the environment that stands for one)
	Env         = 3   // the machine: PostgreSQL, a port, a file, a program that cannot be run or reached
	Unknown     = 4   // no verdict: bank send gave up with the outcome unknown, torture's verdict unknown
	Internal    = 5   // the lab itself broke: an error that is none of the above
	Interrupted = 130 // Ctrl-C (SIGINT) or SIGTERM
)

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// Usagef is a mistake on the command line (exit 2).
func Usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// noError is a verdict of no, with its one line: the answer the command
// exists to give, not a failure of the command.
type noError struct{ msg string }

func (e noError) Error() string { return e.msg }

// Nof is a verdict of no, with its one line (exit 1).
func Nof(format string, args ...any) error { return noError{fmt.Sprintf(format, args...)} }

// unknownError is no verdict either way, with its one line.
type unknownError struct{ msg string }

func (e unknownError) Error() string { return e.msg }

// Unknownf is no verdict either way, with its one line (exit 4): an
// outcome that stays unknown.
func Unknownf(format string, args ...any) error { return unknownError{fmt.Sprintf(format, args...)} }

// Envf is a failure of the machine, not of the lab (exit 3), that no
// error of PostgreSQL's or of a child says by itself.
func Envf(format string, args ...any) error { return envError{fmt.Errorf(format, args...)} }

type envError struct{ err error }

func (e envError) Error() string { return e.err.Error() }
func (e envError) Unwrap() error { return e.err }

// Silent carries an exit code whose explanation was already printed.
type Silent struct{ Code int }

func (e Silent) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// Of is the exit code for err, the error a command returned (nil: OK).
func Of(err error) int {
	var u usageError
	var no noError
	var unknown unknownError
	var s Silent
	switch {
	case err == nil:
		return OK
	case errors.As(err, &s):
		return s.Code
	case errors.As(err, &u):
		return Usage
	case errors.Is(err, context.Canceled):
		return Interrupted
	case errors.As(err, &no):
		return No
	case errors.As(err, &unknown):
		return Unknown
	case FromEnvironment(err):
		return Env
	}
	return Internal
}

// FromEnvironment reports whether err says the machine failed the lab
// rather than the lab failing: PostgreSQL not started, not reached, gone,
// full or shutting down; the network; a file the lab could not read or
// write; a program it could not run, or a child (bank serve) that did not
// start.
func FromEnvironment(err error) bool {
	var env *pgserver.Error
	var own envError
	var path *fs.PathError
	var link *os.LinkError
	var run *exec.Error
	var child *procs.NotStarted
	return errors.As(err, &env) || errors.As(err, &own) || bank.Unavailable(err) ||
		errors.As(err, &path) || errors.As(err, &link) || errors.As(err, &run) || errors.As(err, &child)
}
