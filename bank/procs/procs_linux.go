package procs

import (
	"os/exec"
	"syscall"
)

func bind(cmd *exec.Cmd, how OnParentDeath) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Go sets the parent-death signal after switching to cmd's Credential,
	// so it survives the change of account (the kernel clears it on a
	// change of uid, and Go's child sets it afterwards).
	cmd.SysProcAttr.Pdeathsig = signalFor(how)
}

func started(*exec.Cmd, OnParentDeath) {}

func signalFor(how OnParentDeath) syscall.Signal {
	if how == Interrupt {
		return syscall.SIGINT
	}
	return syscall.SIGKILL
}
