//go:build unix

package procs

import (
	"syscall"
)

const (
	sigKill = syscall.SIGKILL
	sigTerm = syscall.SIGTERM
	sigInt  = syscall.SIGINT
	sigQuit = syscall.SIGQUIT
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// signal sends sig to the child, or to a Group's whole process group.
func (c *Child) signal(sig syscall.Signal) error {
	if c.group != nil {
		return syscall.Kill(-c.group.leader(), sig)
	}
	return c.cmd.Process.Signal(sig)
}

// Pause stops the child where it stands (SIGSTOP), as a long garbage
// collection or a frozen virtual machine would, and returns once every
// thread of it (of every process in a Group's process group) has stopped.
func (c *Child) Pause() error {
	if err := c.signal(sigStop); err != nil {
		return err
	}
	pid := c.PID()
	if c.group != nil {
		return waitStopped("the server's process group", func() bool { return groupStopped(pid) })
	}
	return waitStopped("the process", func() bool { return processStopped(pid) })
}
