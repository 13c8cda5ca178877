//go:build unix

package procs

import (
	"errors"
	"os"
	"syscall"
)

func signalFor(how OnParentDeath) syscall.Signal {
	if how == Interrupt {
		return syscall.SIGINT
	}
	return syscall.SIGKILL
}

// Pause stops a process where it stands (SIGSTOP), as a long garbage
// collection or a frozen virtual machine would, and returns once every
// thread of it has stopped.
func Pause(p *os.Process) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	return waitStopped("the process", func() bool { return processStopped(p.Pid) })
}

// Resume lets a paused process go on (SIGCONT).
func Resume(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// Terminate asks a process to stop in an orderly way (SIGTERM).
func Terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// InterruptProcess sends SIGINT: for PostgreSQL, a fast shutdown.
func InterruptProcess(p *os.Process) error { return p.Signal(syscall.SIGINT) }

// Quit sends SIGQUIT: for PostgreSQL, an immediate shutdown, as a crash.
func Quit(p *os.Process) error { return p.Signal(syscall.SIGQUIT) }

// Running reports whether pid is a live process. A zombie counts as gone.
func Running(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}
