package procs

import (
	"os/exec"
	"time"
)

// Group is a command together with everything it starts in turn (npm
// starting node, a shell starting a server): the faults reach them all at
// once, and they all die with the lab. On Windows, where there are no
// process groups, the faults reach the command itself and the job object
// still ends them all with the lab.
type Group struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the command has exited
	err  error         // its exit status, once done is closed
}

// StartGroup starts cmd as the leader of a group of its own.
func StartGroup(cmd *exec.Cmd) (*Group, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	release, err := bindGroup(cmd)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		release()
		return nil, err
	}
	startedGroup(cmd)
	release() // only now may the command run, and start children
	g := &Group{cmd: cmd, done: make(chan struct{})}
	go func() {
		g.err = cmd.Wait()
		close(g.done)
	}()
	return g, nil
}

// Exited is closed once the leader has exited.
func (g *Group) Exited() <-chan struct{} { return g.done }

// Err is the leader's exit status; call it once Exited is closed.
func (g *Group) Err() error { return g.err }

// PID is the leader's process id.
func (g *Group) PID() int { return g.cmd.Process.Pid }

// Kill ends the whole group at once (SIGKILL), as a crash would, and
// waits for the leader.
func (g *Group) Kill() {
	g.signal(sigKill)
	<-g.done
}

// Stop asks the group to stop in an orderly way (SIGTERM) and waits for
// the leader, at most grace; then it kills the group.
func (g *Group) Stop(grace time.Duration) {
	g.signal(sigTerm)
	select {
	case <-g.done:
		g.signal(sigKill) // anything the leader left behind
	case <-time.After(grace):
		g.Kill()
	}
}

// Pause stops the whole group where it stands (SIGSTOP), and returns
// once every thread of every process in it has stopped.
func (g *Group) Pause() error { return g.pause() }

// Resume lets a paused group go on (SIGCONT).
func (g *Group) Resume() error { return g.signal(sigCont) }
