//go:build unix

package procs

import (
	"os/exec"
	"syscall"
)

const (
	sigKill = syscall.SIGKILL
	sigTerm = syscall.SIGTERM
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

func bindGroup(cmd *exec.Cmd) {
	bind(cmd, Kill)
	cmd.SysProcAttr.Setpgid = true
}

// startedGroup has the watchdog kill the whole group when the lab dies:
// the parent-death signal reaches only the leader.
func startedGroup(cmd *exec.Cmd) { watchGroup(cmd.Process.Pid, "KILL") }

func (g *Group) signal(sig syscall.Signal) error {
	return syscall.Kill(-g.cmd.Process.Pid, sig)
}
