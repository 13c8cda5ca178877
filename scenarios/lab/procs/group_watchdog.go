//go:build unix && !linux

package procs

import "syscall"

// group: without a subreaper (macOS), a Group's child is held by its
// process group alone, which the watchdog signals when the lab dies, as
// it does every child's here (bind). A process that left the group
// (setsid) is found by neither.
type group struct{ pgid int }

func (g *group) leader() int { return g.pgid }

// startGroup starts the command as every child starts here: the leader
// of a process group of its own, held at the door until the watchdog
// knows it.
func (c *Child) startGroup(how OnParentDeath) error {
	c.cmd.Cancel = func() error { // the context ended: all of them go
		return syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
	if err := start(c.cmd, how); err != nil {
		return err
	}
	c.group = &group{c.cmd.Process.Pid}
	return nil
}

// killGroup kills the whole process group.
func (c *Child) killGroup() error { return syscall.Kill(-c.group.pgid, syscall.SIGKILL) }

// groupEnded: the program has exited; what it left in its group goes, and
// the watchdog forgets the group, whose number may then be reused.
func (c *Child) groupEnded() {
	syscall.Kill(-c.group.pgid, syscall.SIGKILL)
	forgetGroup(c.group.pgid)
}
