package procs

import (
	"crypto/rand"
	"encoding/hex"
	"os"
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
	mark string        // the variable every process it starts inherits (see marked)
	done chan struct{} // closed when the command has exited
	err  error         // its exit status, once done is closed
}

// StartGroup starts cmd as the leader of a group of its own.
func StartGroup(cmd *exec.Cmd) (*Group, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	// A process that leaves the group (setsid, a daemon) still carries
	// the group's mark in its environment, where the lab finds it.
	mark := markPrefix + randomHex(8)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, mark+"=1")
	release, err := bindGroup(cmd)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		release()
		return nil, err
	}
	startedGroup(cmd, mark)
	release() // only now may the command run, and start children
	g := &Group{cmd: cmd, mark: mark, done: make(chan struct{})}
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

// Kill ends the whole group at once (SIGKILL), as a crash would, with
// every process that left it but carries its mark, and waits for the
// leader.
func (g *Group) Kill() {
	g.signal(sigKill)
	killMarked(g.mark)
	<-g.done
	killMarked(g.mark) // any started as the others died
	g.forget()
}

// Stop asks the group to stop in an orderly way (SIGTERM) and waits for
// the leader, at most grace; then it kills the group, and whatever left it.
func (g *Group) Stop(grace time.Duration) {
	g.signal(sigTerm)
	select {
	case <-g.done:
		g.signal(sigKill) // anything the leader left behind
		killMarked(g.mark)
		g.forget()
	case <-time.After(grace):
		g.Kill()
	}
}

// markPrefix names the variable that marks a group's processes: one per
// group, so that a group started inside another carries both marks.
const markPrefix = "BANK_GROUP_"

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Pause stops the whole group where it stands (SIGSTOP), and returns
// once every thread of every process in it has stopped.
func (g *Group) Pause() error { return g.pause() }

// Resume lets a paused group go on (SIGCONT).
func (g *Group) Resume() error { return g.signal(sigCont) }
