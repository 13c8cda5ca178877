// Package program runs a learner's program for bank exercise: contained
// (its process group, and whatever it starts, dies with it or after
// Timeout), and bounded (it may print for ever; the lab keeps the head of
// its standard output and the tail of its standard error, and stops it
// past OutputLimit).
package program

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// The bounds on a learner's program.
const (
	Timeout     = 30 * time.Second
	OutputLimit = 1 << 20  // more output than this, on both streams together, and it is stopped
	KeepStdout  = 64 << 10 // the first bytes of its standard output, checked
	KeepStderr  = 8 << 10  // the last bytes of its standard error, shown
	StderrLines = 40       // at most this many of them
)

// Result is how a learner's program ran, with no more of its output
// kept than the bounds allow.
type Result struct {
	Stdout    string        // the first KeepStdout bytes of its standard output
	StdoutCut bool          // it printed more than that
	Stderr    string        // the last KeepStderr bytes of its standard error
	StderrCut bool          // it wrote more than that
	Exit      int           // its exit status; -1 when it was stopped
	TimedOut  bool          // stopped after Timeout (Limit, stretched on a busy machine)
	Limit     time.Duration // how long it was given, when TimedOut
	TooMuch   bool          // stopped for printing more than OutputLimit
	Total     int64         // bytes it wrote, on both streams
	Kept      int           // bytes of buffer the lab held for its output
}

// StderrShown is the end of its standard error, as the lab shows it:
// whole lines, at most StderrLines.
func (r *Result) StderrShown() string {
	s := strings.TrimRight(r.Stderr, "\n")
	if r.StderrCut { // the first line kept is likely a piece of one
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return lastLinesOf(s, StderrLines)
}

// StderrHeading says how much of its standard error StderrShown is.
func (r *Result) StderrHeading() string {
	shown := r.StderrShown()
	if !r.StderrCut && shown == strings.TrimRight(r.Stderr, "\n") {
		return "all of it"
	}
	if n := strings.Count(shown, "\n") + 1; n > 1 {
		return fmt.Sprintf("the last %d lines", n)
	}
	return "its last line"
}

// output keeps a bounded part of what a program writes: the head of its
// standard output, for the checks, and the tail of its standard error, to
// show. It counts everything, and says when the total passes the limit.
type output struct {
	mu        sync.Mutex
	total     int64
	head      []byte // capacity KeepStdout, never grown
	tail      []byte // capacity KeepStderr, never grown
	headCut   bool
	tailCut   bool
	over      chan struct{}
	closeOver sync.Once
}

func newOutput() *output {
	return &output{head: make([]byte, 0, KeepStdout), tail: make([]byte, 0, KeepStderr), over: make(chan struct{})}
}

type outputStream struct {
	o      *output
	stderr bool
}

func (s outputStream) Write(p []byte) (int, error) {
	o := s.o
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += int64(len(p))
	if o.total > OutputLimit {
		o.closeOver.Do(func() { close(o.over) })
		return len(p), nil // discarded: the program is being stopped
	}
	if !s.stderr {
		n := min(len(p), cap(o.head)-len(o.head))
		o.head = append(o.head, p[:n]...)
		o.headCut = o.headCut || n < len(p)
		return len(p), nil
	}
	if len(p) >= cap(o.tail) {
		o.tailCut = o.tailCut || len(o.tail) > 0 || len(p) > cap(o.tail)
		o.tail = append(o.tail[:0], p[len(p)-cap(o.tail):]...)
		return len(p), nil
	}
	if drop := len(o.tail) + len(p) - cap(o.tail); drop > 0 {
		o.tailCut = true
		o.tail = o.tail[:copy(o.tail, o.tail[drop:])]
	}
	o.tail = append(o.tail, p...)
	return len(p), nil
}

// Run runs the learner's program, with everything it starts, with env
// (such as DATABASE_URL) in its environment. It is stopped after Timeout,
// or once it has printed more than OutputLimit; of its output only the
// bounded parts are held. A program that exits with an error is a Result
// like any other; an error means it could not be run at all.
func Run(ctx context.Context, program []string, env []string) (*Result, error) {
	// The group starts it through a keeper (on macOS, a shell), which
	// would report a missing program in words of its own: look first.
	if _, err := exec.LookPath(program[0]); err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", program[0], err)
	}
	o := newOutput()
	spec := procs.Spec{Path: program[0], Args: program[1:], Env: env, Group: true,
		Stdout: outputStream{o, false}, Stderr: outputStream{o, true},
		WaitDelay: 2 * time.Second} // a child it left behind may hold its output open
	g, err := spec.Start(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", program[0], err)
	}
	r := &Result{}
	// Timeout is for a quiet machine: on a busy one it stretches with
	// the load (package pace), as a slow machine is not the program's
	// fault.
	deadline := pace.After(Timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-g.Exited():
			g.Kill() // anything it left behind
			break wait
		case <-o.over:
			r.TooMuch = true
			g.Kill()
			break wait
		case <-tick.C:
			if deadline.Passed() {
				r.TimedOut, r.Limit = true, deadline.Limit().Round(time.Second)
				g.Kill()
				break wait
			}
		case <-ctx.Done():
			g.Kill()
			return nil, ctx.Err()
		}
	}
	var exit *exec.ExitError
	switch err := g.Err(); {
	case err == nil:
	case errors.As(err, &exit):
		r.Exit = exit.ExitCode()
	default:
		r.Exit = -1
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-o.over:
		r.TooMuch = true // it got there just as it exited
	default:
	}
	r.Stdout, r.StdoutCut = string(o.head), o.headCut
	r.Stderr, r.StderrCut = string(o.tail), o.tailCut
	r.Total, r.Kept = o.total, cap(o.head)+cap(o.tail)
	return r, nil
}

// SizeOf is a byte count as the lab says it: "1 MiB", "64 KiB".
func SizeOf(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
