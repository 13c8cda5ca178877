package procs

import "os/exec"

type signal int

const (
	sigKill signal = iota
	sigTerm
	sigStop
	sigCont
)

func bindGroup(cmd *exec.Cmd) (release func(), err error) {
	bind(cmd, Kill)
	return func() {}, nil
}

func startedGroup(*exec.Cmd, string) {}

// killMarked: on Windows the job object ends every process the lab
// started, whatever it did, when the lab ends.
func killMarked(string) {}

func (g *Group) signal(sig signal) error {
	switch sig {
	case sigStop, sigCont:
		return errNoSignals
	}
	return g.cmd.Process.Kill()
}

func (g *Group) pause() error { return errNoSignals }

func (g *Group) forget() {}
