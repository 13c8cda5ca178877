//go:build unix && !linux

package procs

import (
	"os"
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

func started(cmd *exec.Cmd, how OnParentDeath) error {
	return watchGroup(cmd.Process.Pid, signalName(how))
}

// reaped: once the child is reaped its group's number may be given to
// someone else's group, so the watchdog must never signal it.
func reaped(cmd *exec.Cmd) { forgetGroup(cmd.Process.Pid) }

func zombie(int) bool { return false }
