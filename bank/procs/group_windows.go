package procs

import "os/exec"

type signal int

const (
	sigKill signal = iota
	sigTerm
	sigInt
	sigQuit
	sigStop
	sigCont
)

func bindGroup(cmd *exec.Cmd, how OnParentDeath) (release func(), err error) {
	return bind(cmd, how)
}

func startedGroup(*exec.Cmd, OnParentDeath, string) error { return nil }

// killMarked: on Windows the job object ends every process the lab
// started, whatever it did, when the lab ends.
func killMarked(string) {}

// signal: Windows has no signals but the end. The faults reach the child
// itself, and the job object still ends all it started with the lab.
func (c *Child) signal(sig signal) error {
	switch sig {
	case sigStop, sigCont:
		return errNoSignals
	}
	return c.cmd.Process.Kill()
}

// Pause is not available on Windows.
func (c *Child) Pause() error { return errNoSignals }

func (c *Child) forget() {}
