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
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// bindGroup makes cmd the leader of a new process group, and holds it at
// the door: it starts as a shell that waits for a byte on a pipe before
// it becomes the command (exec: same process, same group). The returned
// function lets it go. So the group is in the watchdog's list before the
// command can start a single child; otherwise a lab killed in that
// moment would leave the child behind.
func bindGroup(cmd *exec.Cmd) (release func(), err error) {
	gate, open, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	args := append([]string{"sh", "-c", `read _ <&3; exec 3<&-; exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
	cmd.ExtraFiles = append([]*os.File{gate}, cmd.ExtraFiles...) // fd 3
	bind(cmd, Kill)
	cmd.SysProcAttr.Setpgid = true
	return func() {
		gate.Close()
		open.Write([]byte{'\n'})
		open.Close()
	}, nil
}

// startedGroup has the watchdog kill the whole group when the lab dies,
// and every process carrying its mark: the parent-death signal reaches
// only the leader.
func startedGroup(cmd *exec.Cmd, mark string) { watchGroup(cmd.Process.Pid, "KILL", mark) }

func (g *Group) signal(sig syscall.Signal) error {
	return syscall.Kill(-g.cmd.Process.Pid, sig)
}

func (g *Group) pause() error {
	if err := g.signal(sigStop); err != nil {
		return err
	}
	return waitStopped("the server's process group", func() bool { return groupStopped(g.cmd.Process.Pid) })
}

// forget: the group is dead, and its number no longer the lab's.
func (g *Group) forget() { forgetGroup(g.cmd.Process.Pid) }
