package procs

import (
	"context"
	"io"
	"os"
	"os/exec"
	"time"
)

// Spec describes a child the lab starts, whichever kind it is: the
// learner's server (bank grade) or program (bank exercise), the lab's
// own servers (torture's replicas, the scenarios' bank serve, bench), or
// a tool (pgbench). Every child gets the same treatment from it: the
// lab's environment with the child's own variables added (a secret goes
// there, never on the command line), its output where the lab keeps it
// (a bounded Tail, not all of it), and a tie to the lab, so that it dies
// with it. How it starts, and so how it can be faulted, depends on its
// kind:
//   - StartGroup: code the lab did not write. It and all it starts run in a
//     process group of their own, each carrying the group's mark, so that
//     Kill, Stop, Pause and Resume reach all of them and none outlives the
//     lab;
//   - StartChild: the lab's own servers, ready once they print their
//     "ready ADDRESS" line;
//   - Run: a tool that runs to its end.
type Spec struct {
	Path string
	Args []string
	Env  []string // added to the lab's own environment
	Dir  string
	// Stdout and Stderr take the child's output; nil sends it to Output.
	Stdout, Stderr io.Writer
	// Output keeps the last few kilobytes of what the child wrote and Stdout
	// or Stderr did not take (made when nil).
	Output *Tail
	// WaitDelay bounds the wait for the child's output to close once it has
	// exited (a process it left behind may hold it open).
	WaitDelay time.Duration
}

// Command is the spec as an exec.Cmd, not yet started. Once the context
// ends, the child is killed.
func (s *Spec) Command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.Path, s.Args...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Dir
	if s.Output == nil {
		s.Output = &Tail{}
	}
	cmd.Stdout, cmd.Stderr = s.Stdout, s.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = s.Output
	}
	if cmd.Stderr == nil {
		cmd.Stderr = s.Output
	}
	cmd.WaitDelay = s.WaitDelay
	return cmd
}

// Run runs a tool to its end, tied to the lab, and returns its error.
func Run(ctx context.Context, s *Spec) error {
	cmd := s.Command(ctx)
	if err := Start(cmd, Kill); err != nil {
		return err
	}
	return cmd.Wait()
}
