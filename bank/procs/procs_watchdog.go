//go:build unix && !linux

package procs

import (
	"os/exec"
	"syscall"
)

func bind(cmd *exec.Cmd, how OnParentDeath) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

func started(cmd *exec.Cmd, how OnParentDeath) {
	name := "KILL"
	if how == Interrupt {
		name = "INT"
	}
	watchGroup(cmd.Process.Pid, name, "")
}

func zombie(int) bool { return false }
