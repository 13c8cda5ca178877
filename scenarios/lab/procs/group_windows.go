package procs

type signal int

const (
	sigKill signal = iota
	sigTerm
	sigInt
	sigQuit
	sigStop
	sigCont
)

// group: on Windows the job object the lab is in ends every process the
// lab started, whatever it did, when the lab ends; the verbs reach the
// program itself.
type group struct{ pid int }

func (g *group) leader() int { return g.pid }

func (c *Child) startGroup(how OnParentDeath) error {
	if err := start(c.cmd, how); err != nil {
		return err
	}
	c.group = &group{c.cmd.Process.Pid}
	return nil
}

func (c *Child) killGroup() error { return c.cmd.Process.Kill() }

func (c *Child) groupEnded() {}

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
