package procs

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Child is a process the lab started from a Spec and controls: it dies
// with the lab, and the faults the lab injects are verbs on it. For a
// Group's child the verbs reach its whole process group, and a Group ends
// with its program: whatever the program started, and left behind, is
// killed once it has exited.
type Child struct {
	Addr  string // what its ready line announced (StartReady)
	cmd   *exec.Cmd
	group *group // a Group's: what holds its processes (group_*.go)
	grace time.Duration
	done  chan struct{} // closed when it has exited (a Group: with all it started)
	err   error         // its exit status, once done is closed
}

// start starts cmd, contained as the spec says.
func (s *Spec) start(cmd *exec.Cmd) (*Child, error) {
	defer closeToken(cmd) // the child has its own copy, if it started
	c := &Child{cmd: cmd, grace: s.StopGrace, done: make(chan struct{})}
	if c.grace <= 0 {
		c.grace = 15 * time.Second
	}
	if s.Group {
		if err := c.startGroup(s.OnParentDeath); err != nil {
			return nil, err
		}
	} else if err := start(cmd, s.OnParentDeath); err != nil {
		return nil, err
	}
	go func() {
		c.err = cmd.Wait()
		if c.group != nil {
			c.groupEnded()
		} else {
			reaped(cmd)
		}
		close(c.done)
	}()
	return c, nil
}

// PID is the child's process id (a Group's: its program's, which leads
// the process group).
func (c *Child) PID() int {
	if c.group != nil {
		return c.group.leader()
	}
	return c.cmd.Process.Pid
}

// Exited is closed once the child has exited; a Group's, once its program
// has exited and whatever it left behind is gone.
func (c *Child) Exited() <-chan struct{} { return c.done }

// Err is the child's exit status (a Group's: its program's); call it once
// Exited is closed.
func (c *Child) Err() error { return c.err }

// Kill ends the child at once (SIGKILL), as a crash would, and waits for
// it; a Group's, with everything it started.
func (c *Child) Kill() {
	select {
	case <-c.done:
		return
	default:
	}
	if c.group != nil {
		c.killGroup()
	} else {
		c.cmd.Process.Kill()
	}
	<-c.done
}

// Stop ends the child the way an orderly restart does (SIGTERM) and
// waits for it, at most the Spec's StopGrace; then it kills it. It
// returns how the child ended, or nil if it had ended before. A Group's
// Stop returns once everything the program left behind is gone too.
func (c *Child) Stop() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	c.signal(sigTerm)
	timer := time.NewTimer(c.grace)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		c.Kill()
	}
	return c.err
}

// Resume lets a paused child go on (SIGCONT).
func (c *Child) Resume() error { return c.signal(sigCont) }

// Interrupt sends SIGINT and returns: for PostgreSQL, a fast shutdown.
// (On Windows, which has no such signal, it ends the child.)
func (c *Child) Interrupt() error { return c.signal(sigInt) }

// Quit sends SIGQUIT and returns: for PostgreSQL, an immediate shutdown,
// as a crash. (On Windows it ends the child.)
func (c *Child) Quit() error { return c.signal(sigQuit) }

// Tail keeps the last few kilobytes a process wrote.
type Tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if t.buf.Len() > 4096 {
		t.buf.Next(t.buf.Len() - 4096)
	}
	return len(b), nil
}

// String is what was kept: "" for a child that never started (a Spec
// whose program was not found has no Tail).
func (t *Tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// LastLines is at most the last n lines kept.
func (t *Tail) LastLines(n int) string {
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
