// Package procs makes every process the lab starts die with it, and gives
// the faults the lab injects (kill, pause, resume, stop) one name on every
// platform. Every child is described by one Spec and controlled through
// the Child it starts.
//
// How a child is tied to the lab depends on the platform:
//   - Linux: the kernel sends the child a signal when the lab dies
//     (PR_SET_PDEATHSIG), even after kill -9. A Group's program (code the
//     lab did not write) is started by a keeper, a child subreaper: every
//     process the program starts stays the keeper's descendant however it
//     leaves (setsid, a double fork, a cleared environment), and the
//     keeper kills them all when the program ends, when the lab says so,
//     and when the lab dies; where the lab may make a cgroup (v2), they
//     are also held in one of their own (keeper_linux.go, cgroup_linux.go).
//   - Windows: the lab puts itself in a job object that kills every member
//     when its last handle closes, which is when the lab dies.
//   - Other Unix systems (macOS): each child gets a process group of its
//     own, and a small watchdog shell signals those groups when its pipe
//     from the lab closes. A process that leaves its group (setsid) is
//     not found there: macOS has no subreaper.
package procs

import (
	"os/exec"
)

// OnParentDeath says how a child should end when the lab dies.
type OnParentDeath int

const (
	// Kill ends the child at once (SIGKILL).
	Kill OnParentDeath = iota
	// Interrupt asks the child to stop quickly but cleanly (SIGINT): for
	// PostgreSQL, a fast shutdown that still ends its own children.
	Interrupt
)

// start prepares cmd so that the child dies with the lab (fields already
// set in cmd.SysProcAttr, such as Credential, are kept), starts it, and
// tells the platform's watchdog, where there is one, before the child
// may run: a child the lab cannot tie to itself is not left running.
func start(cmd *exec.Cmd, how OnParentDeath) error {
	return startHeld(cmd, func() (func(), error) { return bind(cmd, how) }, func() error { return started(cmd, how) })
}

// startHeld starts cmd held at the door by hold (on the watchdog's
// platforms), tells the watchdog with tell, and only then lets it run
// (release); a child the lab could not tie to itself is killed before it
// runs.
func startHeld(cmd *exec.Cmd, hold func() (release func(), err error), tell func() error) error {
	release, err := hold()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		release()
		return err
	}
	if err := tell(); err != nil {
		cmd.Process.Kill()
		release()
		cmd.Wait()
		return err
	}
	release()
	return nil
}
