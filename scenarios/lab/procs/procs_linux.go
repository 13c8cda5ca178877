package procs

import (
	"os/exec"
	"syscall"
)

// bind: the kernel ties the child to the lab from its first instruction,
// so it needs no holding at the door (release does nothing).
func bind(cmd *exec.Cmd, how OnParentDeath) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Go sets the parent-death signal after switching to cmd's Credential,
	// so it survives the change of account (the kernel clears it on a
	// change of uid, and Go's child sets it afterwards).
	cmd.SysProcAttr.Pdeathsig = signalFor(how)
	return func() {}, nil
}

func started(*exec.Cmd, OnParentDeath) error { return nil }

// reaped: nothing to forget; the kernel holds no list.
func reaped(*exec.Cmd) {}

func signalFor(how OnParentDeath) syscall.Signal {
	if how == Interrupt {
		return syscall.SIGINT
	}
	return syscall.SIGKILL
}
