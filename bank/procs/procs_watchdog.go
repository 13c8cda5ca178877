//go:build unix && !linux

package procs

import (
	"os/exec"
	"syscall"
)

// bind gives the child a process group of its own and holds it at the
// door (gate) until the watchdog knows that group: the lab killed in
// between would otherwise leave it running (the postmaster among them).
func bind(cmd *exec.Cmd, how OnParentDeath) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return gate(cmd)
}

func started(cmd *exec.Cmd, how OnParentDeath) error {
	return watchGroup(cmd.Process.Pid, signalName(how), "")
}

// reaped: once the child is reaped its group's number may be given to
// someone else's group, so the watchdog must never signal it.
func reaped(cmd *exec.Cmd) { forgetGroup(cmd.Process.Pid) }

// gatesEveryChild: bind holds every child at the door already.
const gatesEveryChild = true

func zombie(int) bool { return false }
