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
// Group's child the verbs reach its whole group, and whatever left it
// carrying its mark.
type Child struct {
	Addr  string // what its ready line announced (StartReady)
	cmd   *exec.Cmd
	mark  string // a Group's: the variable every process it starts inherits (see killMarked)
	grace time.Duration
	done  chan struct{} // closed when it has exited
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
		if c.mark == "" {
			reaped(cmd)
		}
		close(c.done)
	}()
	return c, nil
}

// startGroup starts cmd as the leader of a group of its own.
func (c *Child) startGroup(how OnParentDeath) error {
	cmd := c.cmd
	// A process that leaves the group (setsid, a daemon) still carries
	// the group's mark in its environment, where the lab finds it.
	c.mark = markPrefix + randomHex(8)
	cmd.Env = append(cmd.Env, c.mark+"=1")
	cmd.Cancel = func() error { // the context ended: all of them go
		err := c.signal(sigKill)
		killMarked(c.mark)
		return err
	}
	// Only once the group is the watchdog's may the command run, and
	// start children.
	return startHeld(cmd, func() (func(), error) { return bindGroup(cmd, how) }, func() error { return startedGroup(cmd, how, c.mark) })
}

// PID is the child's process id (a Group's leader's).
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Exited is closed once the child (a Group's leader) has exited.
func (c *Child) Exited() <-chan struct{} { return c.done }

// Err is the child's exit status; call it once Exited is closed.
func (c *Child) Err() error { return c.err }

// Kill ends the child at once (SIGKILL), as a crash would, and waits for
// it. A Group's Kill also ends, after its leader has exited, whatever it
// left behind.
func (c *Child) Kill() {
	if c.mark == "" {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
		return
	}
	c.signal(sigKill)
	killMarked(c.mark)
	<-c.done
	killMarked(c.mark) // any started as the others died
	c.forget()
}

// Stop ends the child the way an orderly restart does (SIGTERM) and
// waits for it, at most the Spec's StopGrace; then it kills it. It
// returns how the child ended, or nil if it had ended before. A Group's
// Stop also kills, once the leader has exited, whatever it left behind.
func (c *Child) Stop() error {
	if c.mark == "" {
		select {
		case <-c.done:
			return nil
		default:
		}
	}
	c.signal(sigTerm)
	timer := time.NewTimer(c.grace)
	defer timer.Stop()
	select {
	case <-c.done:
		if c.mark != "" {
			c.signal(sigKill) // anything the leader left behind
			killMarked(c.mark)
			c.forget()
		}
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
