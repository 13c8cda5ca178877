package procs

import "golang.org/x/sys/unix"

// From <sys/proc.h>: p_stat SSTOP, stopped (by SIGSTOP); SZOMB, exited
// and not yet reaped.
const (
	sstop = 4
	szomb = 5
)

// processStopped asks the kernel (sysctl kern.proc.pid) whether the
// process is stopped: macOS suspends the whole task once it is, so there
// are no threads to look at one by one. Where the kernel does not answer
// (a process it no longer knows gives no record), the signal is trusted,
// as on the other Unix systems: such a process cannot run either.
func processStopped(pid int) bool {
	p, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || p.Proc.P_pid != int32(pid) {
		return true
	}
	return p.Proc.P_stat == sstop || p.Proc.P_stat == szomb
}

// groupStopped: every process of the group (sysctl kern.proc.pgrp) is
// stopped.
func groupStopped(pgid int) bool {
	ps, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return false
	}
	for _, p := range ps {
		if p.Proc.P_stat != sstop && p.Proc.P_stat != szomb {
			return false
		}
	}
	return true
}
