//go:build unix

package procs

import (
	"os"
	"os/exec"
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

// bindGroup makes cmd the leader of a new process group, and holds it at
// the door (gate), so that the group is in the watchdog's list before the
// command can start a single child; otherwise a lab killed in that
// moment would leave the child behind.
func bindGroup(cmd *exec.Cmd, how OnParentDeath) (release func(), err error) {
	release, err = bind(cmd, how)
	if err != nil || gatesEveryChild {
		return release, err
	}
	cmd.SysProcAttr.Setpgid = true
	return gate(cmd)
}

// gate holds cmd at the door: it starts as a shell that waits for a byte
// on a pipe before it becomes the command (exec: same process, same
// group). The returned function lets it go.
func gate(cmd *exec.Cmd) (release func(), err error) {
	gate, open, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	args := append([]string{"sh", "-c", `read _ <&3; exec 3<&-; exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
	cmd.ExtraFiles = append([]*os.File{gate}, cmd.ExtraFiles...) // fd 3
	return func() {
		gate.Close()
		open.Write([]byte{'\n'})
		open.Close()
	}, nil
}

// startedGroup has the watchdog signal the whole group when the lab dies,
// and kill every process carrying its mark: the parent-death signal
// reaches only the leader.
func startedGroup(cmd *exec.Cmd, how OnParentDeath, mark string) error {
	return watchGroup(cmd.Process.Pid, signalName(how), mark)
}

// signal sends sig to the child, or to a Group's whole group.
func (c *Child) signal(sig syscall.Signal) error {
	if c.mark != "" {
		return syscall.Kill(-c.cmd.Process.Pid, sig)
	}
	return c.cmd.Process.Signal(sig)
}

// Pause stops the child where it stands (SIGSTOP), as a long garbage
// collection or a frozen virtual machine would, and returns once every
// thread of it (of every process in a Group's group) has stopped.
func (c *Child) Pause() error {
	if err := c.signal(sigStop); err != nil {
		return err
	}
	pid := c.cmd.Process.Pid
	if c.mark != "" {
		return waitStopped("the server's process group", func() bool { return groupStopped(pid) })
	}
	return waitStopped("the process", func() bool { return processStopped(pid) })
}

// forget: the group is dead, and its number no longer the lab's.
func (c *Child) forget() { forgetGroup(c.cmd.Process.Pid) }
