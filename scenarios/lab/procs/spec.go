package procs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Spec describes a child the lab starts, whichever kind it is: the
// learner's server (bank grade) or program (bank exercise), the lab's
// own servers (torture's replicas, the scenarios' bank serve, bench),
// PostgreSQL and its tools, or pgbench. Every child gets the same
// treatment from it: the lab's environment with the child's own variables
// added (a secret goes there, never on the command line), its output
// where the lab keeps it (a bounded Tail, not all of it), and a tie to
// the lab, so that it dies with it.
//
// How it is contained is said here too (Group, OnParentDeath, Account);
// how it is started is the method called on it:
//   - Start: it runs, and the Child is the lab's handle on it;
//   - StartReady: the lab's own servers, which announce on standard
//     output, with one "ready ADDRESS" line, that they listen;
//   - Run: a tool that runs to its end.
type Spec struct {
	Path string
	Args []string
	Env  []string // added to the lab's own environment
	Dir  string

	// Group runs the child and all it starts in a process group of their
	// own, so that Kill, Stop, Pause and Resume reach all of them, and
	// none outlives the child's end or the lab's, on Linux even one that
	// left the group (a setsid daemon, a double fork): for code the lab
	// did not write, which may start children of its own. Without it the
	// faults reach the child alone.
	Group bool
	// OnParentDeath is how the child ends if the lab dies first (Kill
	// unless said).
	OnParentDeath OnParentDeath
	// Account, if set, is the account the child runs as (bank runs
	// PostgreSQL as one when it is root). Unix only.
	Account *Account
	// Restricted runs the child, on Windows, with a restricted copy of
	// the lab's token: the Administrators and Power Users groups disabled
	// and the privileges removed, as pg_ctl starts PostgreSQL, which
	// refuses administrative permissions. Ignored elsewhere (Account is
	// how Unix drops root).
	Restricted bool
	// ExtraFiles are open files the child inherits, from descriptor 3 on
	// (not with Group, whose descriptors from 3 on are the lab's own).
	ExtraFiles []*os.File

	// Stdout and Stderr take the child's output; nil sends it to Output.
	Stdout, Stderr io.Writer
	// Output keeps the last few kilobytes of what the child wrote and Stdout
	// or Stderr did not take (made when nil).
	Output *Tail
	// WaitDelay bounds the wait for the child's output to close once it has
	// exited (a process it left behind may hold it open).
	WaitDelay time.Duration
	// StopGrace is how long Stop waits, after asking the child to stop,
	// before it kills it; 0 means 15 seconds (bank serve takes up to 10 to
	// finish the requests in flight).
	StopGrace time.Duration
}

// Account is a user and group id to run a child as.
type Account struct{ UID, GID int }

// ReadyEnv is the variable that asks a child to announce readiness with
// one machine-readable line on its standard output, "ready ADDRESS",
// instead of the banner it prints for people.
const ReadyEnv = "BANK_READY_LINE"

// Start starts the child. Once ctx ends, it is killed (with its whole
// group, for a Group).
func (s *Spec) Start(ctx context.Context) (*Child, error) {
	cmd, err := s.command(ctx)
	if err != nil {
		return nil, err
	}
	return s.start(cmd)
}

// StartReady starts the child with ReadyEnv set, and waits until it
// announces on its standard output that it listens; Addr is what it
// announced. The rest of its standard output goes where the Spec says.
// If it exits, or prints anything else, first, the error carries the end
// of what it wrote to standard error, and the child is killed (and still
// returned).
func (s *Spec) StartReady(ctx context.Context) (*Child, error) {
	cmd, err := s.command(ctx)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, ReadyEnv+"=1")
	ready := &readyLine{rest: cmd.Stdout, line: make(chan string, 1)}
	cmd.Stdout = ready
	c, err := s.start(cmd)
	if err != nil {
		return nil, err
	}
	var line string
	select {
	case line = <-ready.line:
	case <-c.done:
		select { // it may have printed the line as it exited
		case line = <-ready.line:
		default:
		}
	}
	if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready "); ok {
		c.Addr = addr
		return c, nil
	}
	c.Kill()
	why := strings.TrimSpace(s.Output.String())
	switch {
	case why != "":
	case line == "":
		why = fmt.Sprintf("it exited (%v) before it said it was ready", c.err)
	default:
		why = fmt.Sprintf("it printed %q before it said it was ready", line)
	}
	return c, &NotStarted{fmt.Errorf("%s did not start: %s", s.Path, why)}
}

// NotStarted is a child that never said it was ready: it exited, or
// printed something else first. To its caller it is the machine failing
// (a port taken, a database gone), not a verdict.
type NotStarted struct{ Err error }

func (e *NotStarted) Error() string { return e.Err.Error() }
func (e *NotStarted) Unwrap() error { return e.Err }

// Run runs the child to its end (and, for a Group, kills what it left
// behind), and returns its exit status.
func (s *Spec) Run(ctx context.Context) error {
	c, err := s.Start(ctx)
	if err != nil {
		return err
	}
	<-c.done
	c.Kill()
	return c.err
}

var errGroupFiles = errors.New("procs: a Group's child cannot be given ExtraFiles")

// command is the spec as an exec.Cmd, not yet started.
func (s *Spec) command(ctx context.Context) (*exec.Cmd, error) {
	if s.Group && len(s.ExtraFiles) > 0 {
		return nil, errGroupFiles
	}
	cmd := exec.CommandContext(ctx, s.Path, s.Args...)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Dir
	cmd.ExtraFiles = s.ExtraFiles
	if err := runAs(cmd, s.Account); err != nil {
		return nil, err
	}
	if s.Restricted {
		if err := restrict(cmd); err != nil {
			return nil, err
		}
	}
	if s.Output == nil {
		s.Output = &Tail{}
	}
	cmd.Stdout, cmd.Stderr = s.Stdout, s.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = s.Output
	}
	if cmd.Stderr == nil {
		cmd.Stderr = s.Output
	}
	cmd.WaitDelay = s.WaitDelay
	return cmd, nil
}

// readyLine takes the first line a child writes, and passes the rest on.
type readyLine struct {
	rest io.Writer
	line chan string // the first line, once it is whole
	buf  []byte
	sent bool
}

func (r *readyLine) Write(b []byte) (int, error) {
	n := len(b)
	if !r.sent {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			r.buf, b = append(r.buf, b[:i]...), b[i+1:]
		} else if r.buf, b = append(r.buf, b...), nil; len(r.buf) < 4096 {
			return n, nil
		} // else: no line that long is a ready line
		r.line <- string(r.buf)
		r.sent, r.buf = true, nil
	}
	if len(b) > 0 {
		r.rest.Write(b)
	}
	return n, nil
}
