// Package served runs a learner's program that listens: a server, or a
// webhook consumer. It is started, in a process group of its own, with
// PORT (a free port of the grader's choosing) and what else the grader
// gives it, and waited on, bounded by a limit that follows the machine's
// load, until it listens on 127.0.0.1:PORT; it can be killed, stopped and
// started again on the same port.
package served

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Spec is the program and what it is given.
type Spec struct {
	Command      []string      // the program and its arguments
	Env          []string      // NAME=VALUE besides PORT
	StartTimeout time.Duration // how long it may take to listen (stretched on a busy machine)
	What         string        // what it is, in the errors: "server", "consumer"
	Vars         string        // the variables to set to run it by hand: "DATABASE_URL and PORT"
}

// StartError is a program that exited before it listened, or never
// listened: an environment failure, not a verdict on it.
type StartError struct {
	Why    string // what went wrong
	Stderr string // the last lines the program wrote
	Busy   bool   // the machine was too busy to tell: it never listened, but was still at work
}

func (e *StartError) Error() string { return e.Why }

// ErrPortTaken: another program took the port chosen for it.
var ErrPortTaken = errors.New("another program took the port")

// Process is one process of the program, with everything it starts.
type Process struct {
	Spec   Spec
	Port   int
	Child  *procs.Child
	Output *procs.Tail
}

// Start starts the program and waits, bounded, until it listens.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	p := &Process{Spec: spec}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if p.Port, err = procs.FreePort(); err != nil {
			return nil, err
		}
		if err = p.Restart(ctx); !errors.Is(err, ErrPortTaken) {
			return p, err
		}
	}
	return p, err
}

// Restart starts the program (again) on its port, and waits until it
// listens: ErrPortTaken when another program has the port.
func (p *Process) Restart(ctx context.Context) error {
	s := p.Spec
	spec := procs.Spec{Path: s.Command[0], Args: s.Command[1:], Env: append([]string{"PORT=" + strconv.Itoa(p.Port)}, s.Env...),
		Group: true, StopGrace: 5 * time.Second}
	g, err := spec.Start(context.WithoutCancel(ctx)) // the grader kills it itself, when it should
	p.Output = spec.Output
	if err != nil {
		return &StartError{Why: fmt.Sprintf("cannot start %s: %v; check the command after --", s.Command[0], err)}
	}
	p.Child = g
	deadline := pace.After(s.StartTimeout)
	cpu0, _ := pace.GroupCPU(g.PID())
	addr := "127.0.0.1:" + strconv.Itoa(p.Port)
	stranger := false // someone else listens on the port
	for {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			// A connection to a port in the ephemeral range that nobody
			// listens on can connect to itself (the kernel may pick the
			// very same port as its source): that is not a server.
			self := c.LocalAddr().(*net.TCPAddr).Port == p.Port
			c.Close()
			if !self {
				owned, known := ListenedBy(g.PID(), p.Port)
				if owned || !known {
					return nil
				}
				stranger = true // ours will fail to bind, and exit
			}
		}
		select {
		case <-g.Exited():
			if stranger {
				return ErrPortTaken
			}
			return &StartError{Why: fmt.Sprintf("the %s exited (%v) before it listened on its PORT; run it by hand to see why, with %s set", s.What, ExitStatus(g.Err()), s.Vars), Stderr: p.Output.LastLines(10)}
		case <-ctx.Done():
			g.Kill()
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if deadline.Passed() {
			// Busy, and the program at work (it used the processor), it
			// may just be slow; idle, it is stuck, however busy the machine.
			cpu, known := pace.GroupCPU(g.PID())
			g.Kill()
			if deadline.Busy() && (!known || cpu-cpu0 >= 100*time.Millisecond) {
				return &StartError{Busy: true, Stderr: p.Output.LastLines(10), Why: fmt.Sprintf("the %s did not listen on 127.0.0.1:$PORT within %s%s, and the machine was too busy to tell whether it ever would: grade again when the machine is quieter, or give it longer with --start-timeout", s.What, s.StartTimeout, deadline.Stretched())}
			}
			return &StartError{Why: fmt.Sprintf("the %s did not listen on 127.0.0.1:$PORT within %s: it must take its port from the PORT variable (or give it longer with --start-timeout)", s.What, s.StartTimeout), Stderr: p.Output.LastLines(10)}
		}
	}
}

// ExitStatus says how a program ended, from its wait error.
func ExitStatus(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Kill ends it at once (SIGKILL to its whole process group).
func (p *Process) Kill() { p.Child.Kill() }

// Stop ends it the orderly way (SIGTERM), as a deploy would.
func (p *Process) Stop() { p.Child.Stop() }

// Base is its URL.
func (p *Process) Base() string { return "http://127.0.0.1:" + strconv.Itoa(p.Port) }
