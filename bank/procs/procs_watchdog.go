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
	watchGroup(cmd.Process.Pid, signalName(how), "")
}

func zombie(int) bool { return false }
